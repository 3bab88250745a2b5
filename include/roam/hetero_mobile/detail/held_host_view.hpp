#pragma once
// A granted host request that is released when it goes out of scope, so a handler that throws
// (an allocation while copying, a range check) never leaves the object's later tasks waiting.
#include <roam/hetero/hetero_object.hpp>

#include <utility>

namespace roam::detail {

template <class T>
class held_host_view {
 public:
  /// Waits (suspending inside a handler) for `requested`, a request made on `object`.
  held_host_view(hetero_object<T>& object, const hetero_future<host_view<T>>& requested)
      : object_(object), view_(requested.get()) {}
  held_host_view(hetero_object<T>& object, data_access access)
      : held_host_view(object, object.request(access)) {}
  held_host_view(const held_host_view&) = delete;
  held_host_view& operator=(const held_host_view&) = delete;
  ~held_host_view() { object_.release(); }

  [[nodiscard]] const host_view<T>& view() const noexcept { return view_; }

 private:
  hetero_object<T>& object_;
  host_view<T> view_;
};

}  // namespace roam::detail
