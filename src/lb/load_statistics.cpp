// The per-object load statistics of the load-balancing layer; see load_statistics.hpp.
#include "load_statistics.hpp"

#include <algorithm>

namespace roam::lb {
namespace {

using roam::detail::object_load_counters;

void arrived(object_load_counters& load, double cost) {
  load.pending_cost += cost;
  ++load.pending_count;
}

void finished(object_load_counters& load, double cost, double run_us) {
  if (load.pending_count == 0) return;  // counted before the hooks were installed: not here
  --load.pending_count;
  // No drift: the last one leaves exactly nothing, whatever the rounding of the sums.
  load.pending_cost = load.pending_count ? std::max(0.0, load.pending_cost - cost) : 0.0;
  if (run_us >= 0)
    load.mean_run_us = load.mean_run_us == 0 ? run_us : 0.8 * load.mean_run_us + 0.2 * run_us;
}

void recount(object_load_counters& load, double cost, std::uint32_t count) {
  load.pending_cost = cost;
  load.pending_count = count;
}

}  // namespace

void install_load_statistics(roam::detail::object_hooks& hooks) noexcept {
  hooks.arrived = arrived;
  hooks.finished = finished;
  hooks.recount = recount;
}

}  // namespace roam::lb
