// roam — active messages to nodes: send, call, broadcast.
//
// A handler is a free function, a stateless lambda or a serializable function object.
// Nothing needs registering: each handler type registers itself when the program starts,
// and the tables are checked to be identical on every rank.
//
// Arguments are converted to the handler's parameter types and serialized at the call
// (see serialization.hpp), so the caller may reuse or destroy them as soon as the call
// returns.
//
// Ordering: messages sent by one thread to one node start running in the order they were
// sent (several workers may then run them concurrently). Nothing is ordered between
// different senders or different destinations. Broadcasts are ordered among themselves the
// same way, but not with send() and call() (see broadcast()).
//
// Threading: callable from any thread of a node, including from inside handlers, and from
// threads the application started itself when this process hosts a single node.
//
// Flow control: called from an application thread (the body of roam::run), these may
// wait before sending while the job takes in less than the thread sends: while its process
// holds more than --roam-send-backlog unsent bytes, or the destination, when in this
// process, has more than --roam-inbox-limit arrivals waiting. A thread the application
// started itself waits for the backlog only. The thread drives the network meanwhile and
// runs no handlers. Calls from handlers never wait. (docs/guide/transport.md, Flow control.)
#pragma once

#include <roam/am/buffer.hpp>
#include <roam/am/detail/handler_traits.hpp>
#include <roam/task/future.hpp>

#include <cstring>

namespace roam {

/// Runs `fn(args...)` on node `dest`, fire and forget. An exception thrown by the handler
/// stops the job (there is nobody to report it to); use call() to get errors back.
template <class F, class... Args>
void send(node_id dest, F&& fn, Args&&... args) {
  auto& node = detail::sending_node("roam::send");
  detail::post(node,
               detail::build_message<std::decay_t<F>>(dest, fn, 0, std::forward<Args>(args)...));
}

namespace detail {

/// A pending call: the future's state, filled by the reply.
template <class R>
class call_state final : public shared_state<R>, public reply_target {
 public:
  void deliver(const std::byte* payload, std::size_t size, bool is_error) override {
    message_reader r(payload, size);
    if (is_error) {
      std::string type, what, handler;
      read_value(r, type);
      read_value(r, what);
      read_value(r, handler);
      r.expect_end();
      // The runtime's own errors about the target (a destroyed mobile object, global memory that
      // is not allocated) keep their type.
      if (type == "roam::object_error")
        this->set_exception(std::make_exception_ptr(object_error(what)));
      else if (type == "roam::memory_error")
        this->set_exception(std::make_exception_ptr(memory_error(what)));
      else
        this->set_exception(std::make_exception_ptr(remote_error(
            type, what, "roam: handler '" + handler + "' threw " + type + ": " + what)));
      return;
    }
    stored_t<R> value{};
    if constexpr (!std::is_void_v<R>) read_value(r, value);
    r.expect_end();
    this->set_value(std::move(value));
  }
};

template <class F, class... Args>
auto call_with_flags(node_id dest, std::uint32_t flags, F&& fn, Args&&... args) {
  using H = std::decay_t<F>;
  using R = handler_result_t<H>;
  auto& node = sending_node("roam::call");
  auto state = std::make_shared<call_state<R>>();
  message_ptr m = build_message<H>(dest, fn, flags | flag_wants_reply, std::forward<Args>(args)...);
  m->header.reply_to = register_call(node, state);
  post(node, std::move(m));
  return make_future<R>(std::move(state));
}

}  // namespace detail

/// Runs `fn(args...)` on node `dest` and returns a future of its result. If the handler
/// throws, the future's get() throws roam::remote_error naming the handler and the
/// original exception. The reply is counted by wait_quiescence like any message.
template <class F, class... Args>
auto call(node_id dest, F&& fn, Args&&... args) {
  return detail::call_with_flags(dest, 0, std::forward<F>(fn), std::forward<Args>(args)...);
}

/// Runs `fn(args...)` on every node, this one included. Arguments are serialized once.
///
/// The copies travel a tree: the calling node hands one to each node of its process and to
/// at most eight other processes, and each of those relays it the same way on arrival, so
/// no process sends more than eight copies over the network (plus one queued per node of
/// its own), every node receives one, and every node has its copy after about log8(ranks)
/// network steps (ADR 41 in docs/design/decisions.md).
///
/// Ordering: two broadcasts made by one thread start running on every node in the order
/// they were made. A broadcast is not ordered with send() or call() from the same thread,
/// because its copy may reach a node through another: to have a node see a broadcast
/// before a later message, wait for it (roam::wait_quiescence, or a call() the handler
/// answers). Every copy is counted by wait_quiescence, including the relayed ones.
template <class F, class... Args>
void broadcast(F&& fn, Args&&... args) {
  auto& node = detail::sending_node("roam::broadcast");
  detail::post(
      node, detail::build_message<std::decay_t<F>>(detail::id_of(node), fn, detail::flag_broadcast,
                                                   std::forward<Args>(args)...));
}

}  // namespace roam
