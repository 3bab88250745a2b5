// roam — node identifiers shared by every layer.
#pragma once

#include <cstdint>

namespace roam {

/// Index of a node (a virtual node in this process, or one of the nodes of an MPI rank).
/// Valid ids are 0 .. num_nodes()-1.
using node_id = std::uint32_t;

}  // namespace roam
