#include <roam/task/this_task.hpp>

#include <roam/core/detail/fiber.hpp>

#include <thread>

namespace roam::this_task {

bool is_suspendable() noexcept { return detail::on_fiber(); }

void yield() {
  if (detail::on_fiber()) {
    detail::suspend([](detail::fiber* f, void*) { detail::resume_after_others(f); }, nullptr);
    return;
  }
  if (detail::run_one_item_of_my_node()) return;
  std::this_thread::yield();
}

void sleep_until(std::chrono::steady_clock::time_point deadline) {
  if (detail::on_fiber()) {
    detail::suspend(
        [](detail::fiber* f, void* at) {
          detail::resume_at(f, *static_cast<std::chrono::steady_clock::time_point*>(at));
        },
        &deadline);
    return;
  }
  while (std::chrono::steady_clock::now() < deadline) {
    // An application thread keeps its node's work going while it sleeps.
    if (detail::run_one_item_of_my_node()) continue;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        deadline - std::chrono::steady_clock::now(), std::chrono::microseconds(100)));
  }
}

}  // namespace roam::this_task
