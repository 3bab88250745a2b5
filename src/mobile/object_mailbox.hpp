// The per-object mailbox: what a node keeps to deliver an object's messages in order and with
// the access they ask for. Its order and access gates are pure decisions on this state (the
// caller holds the object's lock); the location gate, which needs the directory, is in
// object_runtime.cpp.
#pragma once

#include <roam/core/detail/set_aside_message.hpp>
#include <roam/mobile/object_info.hpp>
#include <roam/transport/node_id.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

namespace roam::detail {

/// Messages set aside on this node (each leaves through one exit of set_aside_message).
using set_aside_list = std::vector<set_aside_message>;

/// How far this node got with an object message: kept in message::local_progress, never on
/// the wire.
enum object_message_stage : std::uint8_t {
  stage_new = 0,       ///< not yet checked for order
  stage_admitted = 1,  ///< in order, waiting in the object's queue for access
  stage_granted = 2,   ///< its access is held for it: run it
};

/// What the order gate decided for a message with sequence number `seq` from one origin.
enum class order_outcome {
  in_order,           ///< the next one expected from its origin (now counted as delivered)
  early,              ///< a predecessor has not arrived: it must wait in `early`
  already_delivered,  ///< a number already delivered (a duplicate or a corrupt header)
  duplicate_early,    ///< a number already waiting in `early`
};

/// What the access gate decided.
enum class access_outcome {
  granted,  ///< its access is held for it now
  waits,    ///< it queues behind others, or its access conflicts with running handlers
};

struct object_mailbox {
  // Access: one exclusive holder, or any number of shared ones.
  bool exclusive_running = false;
  std::uint32_t shared_running = 0;
  /// Admitted (in order) messages waiting for access, first come first served.
  std::deque<set_aside_message> ready;
  /// Next sequence number expected from each origin node (sorted by node).
  std::vector<std::pair<node_id, std::uint64_t>> expected;
  /// Messages that arrived before a predecessor from the same origin.
  std::map<std::pair<node_id, std::uint64_t>, set_aside_message> early;
  /// Messages routed here for an installation this node has not seen yet.
  std::vector<set_aside_message> awaiting_install;

  std::uint64_t& expected_from(node_id origin);

  // The gates run on every message to an object: the small ones are inline.

  /// Order gate: whether message `seq` from `origin` is the next one; in_order advances the
  /// origin's expected number.
  order_outcome order_gate(node_id origin, std::uint64_t seq) {
    std::uint64_t& next = expected_from(origin);
    if (seq == next) {
      ++next;
      return order_outcome::in_order;
    }
    if (seq < next) return order_outcome::already_delivered;
    if (early.count({origin, seq})) return order_outcome::duplicate_early;
    return order_outcome::early;
  }
  /// Access gate for a message that passed the order gate: granted when nothing waits before
  /// it, `blocked` is false (no migration waits) and its access is compatible with the
  /// running handlers; the grant is then taken.
  access_outcome access_gate(access mode, bool blocked) noexcept {
    if (!ready.empty() || blocked || !can_grant(mode)) return access_outcome::waits;
    grant(mode);
    return access_outcome::granted;
  }

  bool can_grant(access mode) const noexcept {
    return mode == access::exclusive ? idle() : !exclusive_running;
  }
  void grant(access mode) noexcept {
    if (mode == access::exclusive)
      exclusive_running = true;
    else
      ++shared_running;
  }
  void release(access mode) noexcept {
    if (mode == access::exclusive)
      exclusive_running = false;
    else
      --shared_running;
  }
  /// No handler holds access.
  bool idle() const noexcept { return !exclusive_running && shared_running == 0; }

  /// Moves the early messages of `origin` that are now in order to the back of `ready`
  /// (marked admitted), advancing the origin's expected number past them.
  void admit_successors(node_id origin) {
    if (!early.empty()) admit_early(origin);  // messages mostly arrive in order
  }
  /// Grants the head of `ready` while compatible (unless `blocked`); the granted messages,
  /// marked granted, go to `granted` in queue order.
  void dispatch(set_aside_list& granted, bool blocked) {
    if (!ready.empty() && !blocked) dispatch_waiting(granted);
  }

 private:
  void admit_early(node_id origin);
  void dispatch_waiting(set_aside_list& granted);
};

}  // namespace roam::detail
