// The default hetero scheduler: the device that needs the fewest bytes moved, among those with
// room in their queues; see roam/hetero/scheduler.hpp.
#include <roam/hetero/scheduler.hpp>

namespace roam {

void transfer_aware_scheduler::push(std::uint64_t task, const hetero_scheduler_context&) {
  runnable_.push_back(task);
}

std::optional<hetero_placement> transfer_aware_scheduler::pop(
    const hetero_scheduler_context& context) {
  if (runnable_.empty()) return std::nullopt;
  const std::uint64_t task = runnable_.front();
  int best = -1;
  std::size_t best_bytes = 0;
  std::size_t best_load = 0;
  for (int d : context.eligible_devices(task)) {
    const std::size_t load = context.tasks_in_flight(d);
    if (load >= context.device_depth(d)) continue;
    const std::size_t bytes = context.bytes_to_move(task, d);
    if (best < 0 || bytes < best_bytes || (bytes == best_bytes && load < best_load)) {
      best = d;
      best_bytes = bytes;
      best_load = load;
    }
  }
  if (best < 0) return std::nullopt;
  runnable_.pop_front();
  return hetero_placement{task, best};
}

}  // namespace roam
