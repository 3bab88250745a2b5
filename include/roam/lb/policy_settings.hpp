// roam — the load-balancing layer's settings (--roam-lb and --roam-lb-*).
#pragma once

#include <roam/base/settings.hpp>

#include <cstdint>
#include <string>

namespace roam::lb {

/// Which policy balances the job, and the parameters of the built-in ones
/// (docs/guide/load-balancing.md). Read and change them through roam::config:
/// `cfg.of<roam::lb::policy_settings>().policy = "diffusion"`, or `cfg.set("lb", "diffusion")`.
struct policy_settings {
  /// none, work_stealing, diffusion, master_worker, greedy_refine, or the name of a policy
  /// registered by the application (--roam-lb).
  std::string policy = "work_stealing";
  /// How often an idle node's policy balances, in microseconds (greedy_refine: the period of
  /// its rounds).
  std::uint32_t period_us = 2000;
  /// A node whose load is below this asks for work (diffusion, master_worker); a donor keeps
  /// at least this much.
  double threshold = 1.0;
  /// Neighbourhood size of diffusion.
  std::uint32_t neighbors = 2;
  /// A fraction. greedy_refine: the makespan above the lower bound it leaves alone, and the
  /// least gain worth moving for; diffusion and master_worker: the relative load difference
  /// with the partner worth a request.
  double tolerance = 0.05;
  /// The master node of master_worker.
  std::uint32_t master = 0;

  /// The layer's settings in the registry (roam/base/settings.hpp).
  static const detail::settings_group& registration();
};

}  // namespace roam::lb
