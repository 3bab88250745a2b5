#pragma once
// One event standing for several device operations.
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "device_event_state.hpp"

namespace roam::detail {

/// Completes when every one of `events` has: with the first failure among them when
/// `carry_failure`, successfully otherwise. Never earlier, even after a failure: what waits for
/// it may free memory the others still use.
inline device_event when_all(const std::vector<device_event>& events, bool carry_failure) {
  if (events.size() == 1 && carry_failure) return events.front();
  auto all = std::make_shared<device_event_state>();
  if (events.empty()) {
    all->complete();
    return device_event(std::move(all));
  }
  struct progress {
    std::atomic<std::size_t> left;
    std::mutex mutex;
    std::exception_ptr failure;
  };
  auto shared = std::make_shared<progress>();
  shared->left = events.size();
  for (const auto& event : events) {
    event.on_complete([all, shared, carry_failure, state = std::weak_ptr(event.state())] {
      if (carry_failure) {
        if (auto failure = device_event(state.lock()).error()) {
          std::lock_guard lock(shared->mutex);
          if (!shared->failure) shared->failure = failure;
        }
      }
      if (shared->left.fetch_sub(1) != 1) return;
      std::exception_ptr failure;
      {
        std::lock_guard lock(shared->mutex);
        failure = shared->failure;
      }
      all->complete(failure);
    });
  }
  return device_event(std::move(all));
}

}  // namespace roam::detail
