#pragma once
// The shared state behind a device_event: a completion flag, waiters, callbacks, and the
// backend's own event (cl_event, cudaEvent_t) when the operation has one.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "roam/hetero/device.hpp"

namespace roam::detail {

struct device_event_state {
  device_event_state() = default;
  device_event_state(const device* owner_device, void* native_event, void (*release)(void*))
      : owner(owner_device), native(native_event), release_native(release) {}
  device_event_state(const device_event_state&) = delete;
  device_event_state& operator=(const device_event_state&) = delete;
  ~device_event_state() {
    if (release_native != nullptr && native != nullptr) release_native(native);
  }

  /// Marks the operation finished and runs the callbacks; only the first call counts.
  void complete(std::exception_ptr failure = nullptr) {
    std::vector<std::function<void()>> to_run;
    {
      std::lock_guard lock(mutex);
      if (done.load(std::memory_order_relaxed)) return;
      error = std::move(failure);
      done.store(true, std::memory_order_release);
      to_run.swap(callbacks);
    }
    finished.notify_all();
    for (auto& callback : to_run) callback();
  }

  std::atomic<bool> done{false};
  std::mutex mutex;
  std::condition_variable finished;
  std::vector<std::function<void()>> callbacks;
  std::exception_ptr error;       ///< written once, before `done` is set; read freely after
  const device* owner = nullptr;  ///< the device whose native event this is
  void* native = nullptr;
  void (*release_native)(void*) = nullptr;
};

/// Blocks until `e` completed, without looking at its outcome.
inline void wait_until_done(const device_event& e) {
  const auto& state = e.state();
  if (!state || state->done.load(std::memory_order_acquire)) return;
  std::unique_lock lock(state->mutex);
  state->finished.wait(lock, [&] { return state->done.load(std::memory_order_acquire); });
}

}  // namespace roam::detail
