// The settings the bale kernels run with inside roam.
#pragma once

#include <roam/roam.hpp>

namespace bale {

/// One worker per node owns the node's share of the data (a roam::node_local), so handlers
/// update it without atomics (as a bale PE does), and the application thread only waits
/// instead of running handlers beside that worker.
inline roam::config one_worker_per_node(roam::config cfg) {
  cfg.threads = 1;
  cfg.lend_app_thread = false;
  return cfg;
}

}  // namespace bale
