// roam — promises that another node fulfils.
//
// make_remote_promise<T>() returns a future on this node and a small handle that can be
// sent anywhere (as a handler argument) and fulfilled there: set_value ships the value
// back to the future's node in one message. The handle is copyable, but the promise may
// be fulfilled only once: a second set_value (from any node) stops the job, naming the
// call id, since the value it carries cannot be delivered.
#pragma once

#include <roam/am/send.hpp>

#include <string>
#include <utility>

namespace roam {

template <class T>
class remote_promise;
template <class T>
std::pair<remote_promise<T>, future<T>> make_remote_promise();

/// A copyable, serializable handle that fulfils, once and from any node, the future made with
/// it by make_remote_promise().
template <class T>
class remote_promise {
 public:
  remote_promise() = default;

  /// Sends `value` to the future's node; its future becomes ready when it arrives. Callable
  /// from any thread of any node (counted by wait_quiescence like any message).
  template <class U = T>
  requires(!std::is_void_v<U>) void set_value(U value) const {
    detail::message_ptr m = detail::message::allocate(0);
    detail::message_writer w(m);
    detail::write_value_moved(w, std::move(value));
    w.finish();
    deliver(std::move(m), false);
  }
  /// Makes the future ready, for `T` = void; otherwise as set_value(U).
  void set_value() const requires std::is_void_v<T> {
    deliver(detail::message::allocate(0), false);
  }
  /// Makes the future throw roam::remote_error with this description.
  void set_error(const std::string& type, const std::string& what) const {
    detail::message_ptr m = detail::message::allocate(0);
    detail::message_writer w(m);
    detail::write_value(w, type);
    detail::write_value(w, what);
    detail::write_value(w, std::string("remote_promise"));
    w.finish();
    deliver(std::move(m), true);
  }
  /// The node holding the future.
  node_id owner() const noexcept { return node_; }

  /// cereal hook: the handle travels as the future's node and call id.
  template <class Ar>
  void serialize(Ar& ar) {
    ar(node_, id_);
  }

 private:
  template <class U>
  friend std::pair<remote_promise<U>, future<U>> make_remote_promise();
  remote_promise(node_id node, std::uint64_t id) : node_(node), id_(id) {}
  void deliver(detail::message_ptr m, bool is_error) const {
    detail::message_header request;  // the reply goes where a reply to this call would
    request.source = node_;
    request.reply_to = id_;
    detail::send_reply(detail::sending_node("roam::remote_promise"), request, std::move(m),
                       is_error);
  }
  node_id node_ = 0;
  std::uint64_t id_ = 0;
};

/// A promise fulfilled from any node, and the future on this node that it feeds.
template <class T>
std::pair<remote_promise<T>, future<T>> make_remote_promise() {
  auto& node = detail::sending_node("roam::make_remote_promise");
  auto state = std::make_shared<detail::call_state<T>>();
  const std::uint64_t id = detail::register_call(node, state);
  return {remote_promise<T>(detail::id_of(node), id), detail::make_future<T>(std::move(state))};
}

}  // namespace roam
