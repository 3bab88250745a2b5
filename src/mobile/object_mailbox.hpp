// The per-object mailbox: what a node keeps to deliver an object's messages in order and with
// the access they ask for. Its order and access gates are pure decisions on this state (the
// caller holds the object's lock); the location gate, which needs the directory, is in
// object_runtime.cpp.
#pragma once

#include <roam/core/detail/set_aside_message.hpp>
#include <roam/mobile/object_info.hpp>
#include <roam/transport/node_id.hpp>

#include <algorithm>
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
  stage_orphan = 3,    ///< taken out of a destroyed object's mailbox, on its way to fail
};

/// What the order gate decided for a message with sequence number `seq` from one origin.
enum class order_outcome {
  in_order,           ///< the next one expected from its origin (now counted as delivered)
  early,              ///< a predecessor has not arrived: it must wait in `early`
  already_delivered,  ///< a number already delivered (a duplicate or a corrupt header)
  duplicate_early,    ///< a number already waiting in `early`
};

/// How far one origin's messages to the object have been delivered. An origin numbers its
/// messages to an object in a *series* from 0; it starts a new series only when this node
/// asked it to and it had sent nothing since (ADR 45), so the entry can then be dropped.
struct origin_order {
  node_id origin = 0;
  std::uint32_t series = 0;  ///< the origin's current series for the object
  std::uint64_t next = 0;    ///< the next sequence number expected in that series
  bool recent = true;        ///< a message arrived since the last compaction round
  bool asked = false;        ///< asked to start a new series, not answered since
};

/// Asks `origin` to start a new series of messages to the object if it has sent exactly
/// `delivered` messages in `series` (so none is in flight).
struct forget_request {
  node_id origin = 0;
  std::uint32_t series = 0;
  std::uint64_t delivered = 0;
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
  /// How far each origin node's messages were delivered (sorted by node). Bounded by the
  /// origins that are active: see compaction_round_due.
  std::vector<origin_order> expected;
  /// In-order arrivals since the last compaction round (counted only while `expected` holds
  /// more than origins_kept_without_asking).
  std::uint32_t arrivals_since_round = 0;
  /// Messages that arrived before a predecessor from the same origin.
  std::map<std::pair<node_id, std::uint64_t>, set_aside_message> early;
  /// Messages routed here for an installation this node has not seen yet.
  std::vector<set_aside_message> awaiting_install;
  /// Messages taken out when the object was destroyed (or found destroyed), on their way
  /// to fail: the entry stays until they have (ADR 46).
  std::uint32_t orphans_failing = 0;

  /// Up to this many origins are kept without asking any of them to start a new series.
  static constexpr std::size_t origins_kept_without_asking = 8;

  /// The entry of `origin` for a message of `series`: created when absent, and restarted
  /// at 0 when the origin has moved on to a newer series (it does so only once every
  /// message of the last one was delivered here: ADR 45). Null for an older series, all of
  /// whose messages were delivered (a duplicate or a corrupt header).
  origin_order* order_of(node_id origin, std::uint32_t series) {
    auto it = std::lower_bound(expected.begin(), expected.end(), origin,
                               [](const origin_order& o, node_id n) { return o.origin < n; });
    if (it != expected.end() && it->origin == origin && it->series == series) return &*it;
    return new_series(it, origin, series);
  }

  // The gates run on every message to an object: the small ones are inline.

  /// Order gate: whether message `seq` of `series` from `origin` is the next one; in_order
  /// advances the origin's expected number.
  order_outcome order_gate(node_id origin, std::uint32_t series, std::uint64_t seq) {
    origin_order* o = order_of(origin, series);
    if (!o) return order_outcome::already_delivered;
    o->recent = true;
    o->asked = false;  // whatever it answers to an earlier request, it has sent more since
    if (seq == o->next) {
      ++o->next;
      return order_outcome::in_order;
    }
    if (seq < o->next) return order_outcome::already_delivered;
    if (early.count({origin, seq})) return order_outcome::duplicate_early;
    return order_outcome::early;
  }

  /// Compaction, after an in-order arrival: whether a round is due, and if so starts
  /// counting the next one (so that concurrent arrivals do not start it again). Rounds
  /// happen once the table holds more than origins_kept_without_asking origins, after
  /// twice as many arrivals as it has entries since the last round.
  bool compaction_round_due() noexcept {
    if (expected.size() <= origins_kept_without_asking ||
        ++arrivals_since_round < 2 * expected.size())
      return false;
    arrivals_since_round = 0;
    return true;
  }
  /// A compaction round (once compaction_round_due said so): appends a request for each
  /// origin that sent nothing since the last round (and has nothing waiting early). An active
  /// origin thus stays, and an idle one is asked within two rounds; a round costs at most one
  /// request per entry and is paid for by as many arrivals.
  void start_compaction_round(std::vector<forget_request>& out);
  /// The origin answered a request: it starts a new series if it sent exactly `delivered`
  /// messages in `series`. Drops its entry if that is still where it stands here; returns
  /// whether it did.
  bool forget_origin(node_id origin, std::uint32_t series, std::uint64_t delivered);
  /// The entry of `origin`, or nullptr.
  const origin_order* find_order(node_id origin) const noexcept;
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
  origin_order* new_series(std::vector<origin_order>::iterator at, node_id origin,
                           std::uint32_t series);
  void admit_early(node_id origin);
  bool has_early(node_id origin) const;
  void dispatch_waiting(set_aside_list& granted);
};

}  // namespace roam::detail
