// roam — mobile_ptr<T>: a global reference to a mobile object, and messages to it.
//
// A mobile object is a user object that lives on one node at a time and may move; a
// mobile_ptr names it from anywhere, whatever node it is on now. Messages to it run on
// the node that holds it, with its data local: `p.send<&T::method>(args...)` runs
// `object.method(args...)` there.
//
// Guarantees:
// - Ordering: messages one node sends to one object run in the order they were sent (the
//   order in which the sending calls returned, for calls from several threads of the
//   node), across migrations and forwarding: a handler starts only after every earlier
//   exclusive handler from that node has finished, and an exclusive handler only after
//   every earlier handler. Consecutive shared handlers may run together, so they may also
//   start in any order among themselves. Nothing is ordered between different senders or
//   different objects.
// - Access: a handler through a non-const member function (or taking `T&`) is exclusive:
//   no other handler runs on the object meanwhile. Through a const member function (or
//   `const T&`) it is shared: shared handlers of one object may run at the same time.
//   Give roam::access::shared or ::exclusive explicitly to override. A handler that must
//   wait for its turn waits in the object's queue, not on a worker; handlers on
//   different objects run in parallel on every worker of the node.
// - Arguments are serialized at the call (see am/serialization.hpp); the caller may
//   reuse them as soon as the call returns.
// - Errors: a message to a destroyed object, or through a pointer whose type does not
//   match the object's, fails: call() through its future (roam::object_error); send()
//   stops the job, naming the object, the handler and the nodes. An exception thrown by
//   a handler goes to call()'s future, or stops the job for send().
// - Handlers may wait (futures, mutexes, other calls): the object stays held (and on its
//   node) until the handler returns. A handler must not wait for a later message to its
//   own object, which cannot start before it returns.
//
// Threading: callable from any thread of a node (and from threads the application
// started itself when the process hosts a single node). mobile_ptr itself is a trivially
// copyable value: copy it, store it, send it in messages.
#pragma once

#include <roam/mobile/detail/object_handler.hpp>

#include <cstddef>
#include <functional>

namespace roam {

/// Gives the messages this thread sends to mobile objects, while the scope lasts, a cost
/// (the default is 1): the object's load counts the costs of its pending messages, and load
/// balancing moves objects by load. Do not wait (suspend) inside the scope: the setting
/// belongs to the thread.
class send_cost {
 public:
  /// Sets the calling thread's send cost to `cost` until the scope ends.
  explicit send_cost(double cost) noexcept
      : previous_(std::exchange(detail::current_send_cost(), static_cast<float>(cost))) {}
  ~send_cost() { detail::current_send_cost() = previous_; }
  send_cost(const send_cost&) = delete;
  send_cost& operator=(const send_cost&) = delete;

 private:
  float previous_;
};

/// A global reference to a mobile object of type `T`, valid from any node wherever the object
/// is now; a trivially copyable value (see the top of this file for the messages' guarantees).
template <class T>
class mobile_ptr {
 public:
  using element_type = T;  ///< The object's type.

  /// The null pointer.
  mobile_ptr() = default;

  /// False for the null pointer.
  explicit operator bool() const noexcept { return id_.index != 0; }
  /// The node that created the object, which can always find it. After a restart from a
  /// checkpoint on fewer nodes it may be beyond num_nodes(): node `home() % num_nodes()`
  /// answers for it then (docs/guide/checkpoint.md).
  node_id home() const noexcept { return id_.home; }
  /// The object's number on its home node (unique there, never reused). A mobile_ptr is
  /// meaningless in another run, except in one restarted from a checkpoint of this run
  /// (roam::checkpoint), where it names the same object.
  std::uint64_t index() const noexcept { return id_.index; }

  /// True when both name the same object (or both are null).
  friend bool operator==(const mobile_ptr& a, const mobile_ptr& b) noexcept {
    return a.id_ == b.id_;
  }
  /// A total order (by home node, then index), for ordered containers.
  friend bool operator<(const mobile_ptr& a, const mobile_ptr& b) noexcept {
    return a.id_.home != b.id_.home ? a.id_.home < b.id_.home : a.id_.index < b.id_.index;
  }

  /// Runs `object.*Method(args...)` where the object is, fire and forget.
  template <auto Method, access Access = detail::method_access<Method>(), class... Args>
  requires std::is_member_function_pointer_v<decltype(Method)>
  void send(Args&&... args) const {
    using kind = detail::method_kind<Method, Access, T>;
    detail::check_method<Method, T>();
    detail::send_to_object<kind>(checked_id("send"), nullptr, std::forward<Args>(args)...);
  }
  /// Runs `fn(object, args...)` where the object is, fire and forget. `fn` is a function,
  /// a stateless lambda or a serializable function object taking `T&` or `const T&` first.
  template <class F, class... Args>
  requires(!std::is_same_v<std::decay_t<F>, access>) void send(F&& fn, Args&&... args) const {
    send<detail::callable_access<std::decay_t<F>>()>(std::forward<F>(fn),
                                                     std::forward<Args>(args)...);
  }
  /// Same with the access given explicitly.
  template <access Access, class F, class... Args>
  void send(F&& fn, Args&&... args) const {
    using kind = detail::callable_kind<std::decay_t<F>, Access, T>;
    detail::check_callable<std::decay_t<F>, T>();
    const std::decay_t<F> function = fn;
    detail::send_to_object<kind>(checked_id("send"), &function, std::forward<Args>(args)...);
  }

  /// Runs `std::invoke(Method, object, args...)` where the object is; the future holds its
  /// result, or the exception it threw (roam::remote_error), or roam::object_error.
  template <auto Method, access Access = detail::method_access<Method>(), class... Args>
  requires std::is_member_function_pointer_v<decltype(Method)>
  auto call(Args&&... args) const {
    using kind = detail::method_kind<Method, Access, T>;
    detail::check_method<Method, T>();
    return detail::call_object<kind>(checked_id("call"), nullptr, std::forward<Args>(args)...);
  }
  /// Runs `fn(object, args...)` where the object is and returns a future of its result.
  template <class F, class... Args>
  requires(!std::is_same_v<std::decay_t<F>, access>) auto call(F&& fn, Args&&... args) const {
    return call<detail::callable_access<std::decay_t<F>>()>(std::forward<F>(fn),
                                                            std::forward<Args>(args)...);
  }
  /// Same with the access given explicitly.
  template <access Access, class F, class... Args>
  auto call(F&& fn, Args&&... args) const {
    using kind = detail::callable_kind<std::decay_t<F>, Access, T>;
    detail::check_callable<std::decay_t<F>, T>();
    const std::decay_t<F> function = fn;
    return detail::call_object<kind>(checked_id("call"), &function, std::forward<Args>(args)...);
  }

  /// Pointers travel in messages, alone or inside containers and user types.
  template <class Ar>
  void serialize(Ar& ar) {
    ar(id_);
  }

  /// The runtime's identity of the object (for the layers above; not needed by
  /// applications).
  const object_id& id() const noexcept { return id_; }
  /// Wraps an identity; the type is checked when a message reaches the object.
  static mobile_ptr from_id(const object_id& id) noexcept {
    mobile_ptr p;
    p.id_ = id;
    return p;
  }

 private:
  const object_id& checked_id(const char* what) const {
    if (!id_.index)
      throw usage_error(std::string("roam: mobile_ptr::") + what + " on a null pointer");
    return id_;
  }
  object_id id_;
};

}  // namespace roam

/// Hashes a mobile_ptr by its object's identity, for unordered containers.
template <class T>
struct std::hash<roam::mobile_ptr<T>> {
  /// The hash of `p`'s home node and index.
  std::size_t operator()(const roam::mobile_ptr<T>& p) const noexcept {
    return std::hash<std::uint64_t>{}(p.index() * 0x9E3779B97F4A7C15ull ^ p.home());
  }
};
