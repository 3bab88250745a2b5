// roam — channels to mobile objects: fine-grained messages to objects, aggregated.
//
//   auto relax = roam::channel<&Vertex::relax>();     // bound at compile time
//   for (auto& [v, d] : edges) relax(v, d);            // v: a mobile_ptr<Vertex>
//   roam::wait_quiescence();
//
// `ch(p, args...)` does what `p.send<&T::method>(args...)` does (mobile_ptr.hpp) with the
// same guarantees: it runs where the object is now, with the access the method asks for,
// in the order this node sent its messages to that object (sequence numbers keep it
// across aggregation, migration and forwarding), and a message to a destroyed object
// stops the job naming it. The difference is the trip: the message goes into the calling
// thread's aggregation buffer for the node the directory names (am/channel.hpp says when
// buffers leave), so thousands of small messages to objects on one node share a few
// transport messages. On arrival each record becomes an object message of its own again
// and passes the object's location, order and access gates like any other; an object
// that moved meanwhile gets it forwarded.
//
// Ordering kinds: both keep the per-object order above, and only that: on arrival the
// records queue as object messages, so they keep no order with the thread's other
// messages to the node (node channels' records in the same bundle may run first).
// `roam::unordered` only means direct sends do not ship the buffer first. A later message
// to the same object, however sent, waits at the object for the ones still in a buffer
// (they leave at the latest when the thread idles or waits).
//
// Threading and lifetime as for channels: callable from any thread of a node; the channel
// is a small value to copy and share. Arguments are serialized at the call.
#pragma once

#include <roam/am/channel.hpp>
#include <roam/mobile/mobile_ptr.hpp>

#include <cstring>
#include <exception>
#include <type_traits>
#include <utility>

namespace roam {
namespace detail {

/// The channel handler of object handler kind `Kind`: its records are object messages'
/// payloads, routed already; each is posted again on the receiving node as a message of
/// the object handler, which admits it as if it had come alone.
template <class Kind>
struct object_channel_handler {
  static void run_batch(node_runtime& n, node_id, const std::byte* data, std::size_t bytes,
                        std::uint32_t count, std::uint64_t function) {
    const std::uint32_t handler = id_of(object_handler<Kind>::entry);
    for_each_sized_record(data, bytes, count, [&](const std::byte* record, std::size_t length) {
      if (length < sizeof(object_message_header))
        throw deserialization_error("a record of " + std::to_string(length) +
                                    " bytes is too short for a message to an object");
      message_ptr m = message::allocate(length);
      std::memcpy(m->payload(), record, length);
      m->header.payload_size = length;
      m->header.handler = handler;
      m->header.function = function;
      m->header.dest = id_of(n);
      post(n, std::move(m));
    });
  }

  static constexpr std::string_view name = type_name<object_channel_handler<Kind>>();
  static inline handler_entry entry{name, nullptr, ~0u, nullptr, &run_batch};
  static inline const bool registered = handler_registry::add(&entry);
};

}  // namespace detail

/// A channel to member function `Method` of mobile objects (see channel<Method>()).
template <auto Method, access Access>
class object_channel_of {
 public:
  /// A channel whose messages keep `order` (see the top of this file).
  explicit object_channel_of(channel_order order) noexcept
      : order_(static_cast<detail::lane_order>(order)) {}

  /// Queues `std::invoke(Method, object, args...)` for the object `target` names, in the calling
  /// thread's buffer for the node where the directory last saw it. Throws
  /// roam::usage_error for a null pointer or when the calling thread belongs to no node.
  template <class T, class... Args>
  void operator()(const mobile_ptr<T>& target, Args&&... args) const {
    using kind = detail::method_kind<Method, Access, T>;
    using handler = detail::object_channel_handler<kind>;
    detail::check_method<Method, T>();
    (void)handler::registered;
    if (!target) throw usage_error("a channel message to a null mobile_ptr");
    detail::node_runtime& n = detail::sending_node("roam::channel (to a mobile object)");
    detail::message_ptr m =
        detail::build_object_message<kind>(target.id(), 0, nullptr, std::forward<Args>(args)...);
    const node_id dest = detail::route_object_message(n, *m);
    // The message holds a sequence number now: the object's later messages wait for it,
    // so it must leave whatever happens. If it cannot go into a buffer (out of memory, a
    // record too large for one), it goes alone.
    bool buffered = false;
    try {
      detail::append_record(dest, order_, handler::entry.id, m->header.function, m->payload(),
                            m->header.payload_size, true);
      buffered = true;
    } catch (const std::exception&) {
    }
    if (!buffered) detail::post(n, std::move(m));
  }

  /// The order this channel's messages keep.
  channel_order order() const noexcept { return static_cast<channel_order>(order_); }

 private:
  detail::lane_order order_;
};

/// A channel to member function `Method` of mobile objects: `ch(p, args...)` runs
/// `p->*Method(args...)` where the object is, aggregated with the thread's other messages
/// to that node. Access is deduced from the method's const-ness unless given.
template <auto Method, access Access = detail::method_access<Method>()>
requires std::is_member_function_pointer_v<decltype(Method)>
auto channel(channel_order order = channel_order::ordered) {
  return object_channel_of<Method, Access>(order);
}

}  // namespace roam
