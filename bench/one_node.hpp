// The setting of the benchmarks that time the runtime's own work on one node: the inproc
// transport, so that no network's cost is in the numbers.
#pragma once

#include <roam/roam.hpp>

#include <vector>

namespace roam_bench {

/// The worker counts that dispatch, mobile_dispatch and the fork-join kernels measure: one
/// list, so that their tables and JSON compare row by row.
inline const std::vector<unsigned> compared_worker_counts = {1, 2};

/// One node of the inproc transport with `workers` workers. `lend_app_thread`: whether the
/// application thread runs handlers too while it waits (off: exactly `workers` threads do).
/// No other setting comes from the environment but the trace's (ROAM_TRACE=file traces
/// the measurements).
inline roam::config one_node_config(unsigned workers, bool lend_app_thread) {
  roam::config cfg;
  cfg.of<roam::trace::trace_settings>() =
      roam::config::from_environment().of<roam::trace::trace_settings>();
  cfg.transport = roam::transport_kind::inproc;
  cfg.nodes = 1;
  cfg.threads = workers;
  cfg.lend_app_thread = lend_app_thread;
  return cfg;
}

}  // namespace roam_bench
