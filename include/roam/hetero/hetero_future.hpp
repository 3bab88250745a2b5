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
  hetero_future(device_event done, std::function<T()> value)
      : done_(std::move(done)), value_(std::move(value)) {}

  [[nodiscard]] bool ready() const noexcept { return done_.ready(); }
  /// Blocks the calling thread until ready; rethrows the failure that prevented it.
  void wait() const { done_.wait(); }
  [[nodiscard]] T get() const {
    done_.wait();
    return value_();
  }
  [[nodiscard]] const device_event& event() const noexcept { return done_; }

 private:
  device_event done_;
  std::function<T()> value_;
};

}  // namespace roam
