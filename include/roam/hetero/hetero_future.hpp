#pragma once
// The future that hetero_object::request returns. The heterogeneous framework stands alone
// (it needs none of roam's other layers), so it has this small future of its own.
#include <functional>
#include <utility>

#include "roam/hetero/device.hpp"

namespace roam {

/// A value that becomes available when an event completes. Copyable; `get()` may be called more
/// than once and from any thread.
template <class T>
class hetero_future {
 public:
  hetero_future() = default;
  /// A future that is ready once `done` completes; get() then returns what `value` computes.
  hetero_future(device_event done, std::function<T()> value)
      : done_(std::move(done)), value_(std::move(value)) {}

  /// True once the event completed (successfully or not); never blocks.
  [[nodiscard]] bool ready() const noexcept { return done_.ready(); }
  /// Blocks the calling thread until ready; rethrows the failure that prevented it.
  void wait() const { done_.wait(); }
  /// Blocks the calling thread until ready and returns the value; rethrows the failure if any.
  [[nodiscard]] T get() const {
    done_.wait();
    return value_();
  }
  /// The event whose completion makes the value available (for an `after` list, say).
  [[nodiscard]] const device_event& event() const noexcept { return done_; }

 private:
  device_event done_;
  std::function<T()> value_;
};

}  // namespace roam
