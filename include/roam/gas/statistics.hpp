// roam — what a node's one-sided operations did, by path.
#pragma once

#include <cstdint>

namespace roam::gas {

/// Counts of the get and put operations a node issued since roam::run started (a request
/// split into pieces counts once).
struct path_statistics {
  std::uint64_t direct = 0;    ///< copied by the calling thread (a node of this process)
  std::uint64_t rma = 0;       ///< copied by RMA under a lease
  std::uint64_t messages = 0;  ///< asked of the owner by active message
  std::uint64_t bytes = 0;     ///< moved by all of them
};

/// The calling node's counts (threads of no node count for the process's only node).
/// Threading: any thread inside roam::run; a snapshot.
path_statistics node_path_statistics();

}  // namespace roam::gas
