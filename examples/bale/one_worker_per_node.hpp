// The settings the bale kernels run with inside roam. Each kernel keeps its node's share of
// the data in a roam::node_local (one instance per node, so that the virtual nodes of one
// process each get their own).
#pragma once

#include <roam/roam.hpp>

namespace bale {

/// One worker per node owns the node's share of the data, so handlers update it without
/// atomics (as a bale PE does), and the application thread only waits instead of running
/// handlers beside that worker.
inline roam::config one_worker_per_node(roam::config cfg) {
  cfg.threads = 1;
  cfg.lend_app_thread = false;
  return cfg;
}

}  // namespace bale
