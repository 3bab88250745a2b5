// roam — distributed events (PREMA thesis §4.3.2).
//
// An event lives on the node that creates it, with a dependency count and a handler.
// Any node may signal it, attaching a value; when the count is reached the handler runs on
// the event's node, once, with every attached value (in arrival order). The event handle is
// small, copyable and serializable, so it can be sent to the nodes that will signal it.
// Signals are messages: they are counted by wait_quiescence, and signals from one thread
// arrive in the order sent. A signal after the count was reached stops the job, naming the
// event.
#pragma once

#include <roam/am/send.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace roam {

namespace detail {
template <class T>
struct event_signal;
}

/// Handle to an event created by make_event(): small, copyable and serializable, so that it
/// can be sent to the nodes that will signal() it.
template <class T>
class event {
 public:
  event() = default;
  /// The node that created the event, where its handler runs.
  node_id owner() const noexcept { return node_; }
  /// cereal hook: the handle travels as its node and id.
  template <class Ar>
  void serialize(Ar& ar) {
    ar(node_, id_);
  }

 private:
  template <class U, class F>
  friend event<U> make_event(std::size_t, F);
  template <class U>
  friend void signal(const event<U>&, U);
  template <class U>
  friend struct detail::event_signal;
  event(node_id node, std::uint64_t id) : node_(node), id_(id) {}
  node_id node_ = 0;
  std::uint64_t id_ = 0;
};

namespace detail {

template <class T>
struct event_state {
  std::mutex lock;
  std::size_t remaining;
  std::vector<T> values;
  std::function<void(std::vector<T>)> handler;
};

// Events use their own key range among the node's rendezvous slots.
inline constexpr std::uint64_t event_key_base = 1ull << 62;
std::uint64_t next_event_id() noexcept;

template <class T>
struct event_signal {
  void operator()(std::uint64_t id, T value) const {
    auto& node = *current_node();
    auto slot =
        std::static_pointer_cast<event_state<T>>(rendezvous_slot(node, event_key_base | id, [] {
          return std::shared_ptr<void>();  // an unknown event is reported below
        }));
    if (!slot) {
      erase_rendezvous_slot(node, event_key_base | id);
      throw usage_error("signal for event " + std::to_string(id) + " on node " +
                        std::to_string(id_of(node)) +
                        ", which does not exist or has already fired");
    }
    std::function<void(std::vector<T>)> fire;
    std::vector<T> values;
    {
      std::lock_guard guard(slot->lock);
      if (slot->remaining == 0)
        throw usage_error("signal for event " + std::to_string(id) + " on node " +
                          std::to_string(id_of(node)) + ", which has already fired");
      slot->values.push_back(std::move(value));
      if (--slot->remaining == 0) {
        fire = std::move(slot->handler);
        values = std::move(slot->values);
      }
    }
    if (fire) {
      erase_rendezvous_slot(node, event_key_base | id);
      fire(std::move(values));
    }
  }
};

}  // namespace detail

/// Creates an event on this node that fires `handler(std::vector<T>)` once `count` signals
/// have arrived. `handler` may be any callable (it stays on this node); it runs as a
/// handler (on a worker, suspendable). `count` must be at least 1.
template <class T, class F>
event<T> make_event(std::size_t count, F handler) {
  if (count == 0) throw usage_error("roam::make_event: the dependency count must be at least 1");
  auto& node = detail::sending_node("roam::make_event");
  const std::uint64_t id = detail::next_event_id();
  auto slot = std::static_pointer_cast<detail::event_state<T>>(detail::rendezvous_slot(
      node, detail::event_key_base | id,
      [] { return std::shared_ptr<void>(std::make_shared<detail::event_state<T>>()); }));
  slot->remaining = count;
  slot->handler = std::move(handler);
  return event<T>(detail::id_of(node), id);
}

/// Signals `e` with `value`, from any thread of any node.
template <class T>
void signal(const event<T>& e, T value) {
  send(e.node_, detail::event_signal<T>{}, e.id_, std::move(value));
}

}  // namespace roam
