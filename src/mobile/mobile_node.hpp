// What the parts of the mobile-object protocol on one node share (object_runtime.cpp:
// delivery and creation; migration.cpp: migration, destruction and the other operations).
#pragma once

#include "directory.hpp"

#include <roam/mobile/detail/object_runtime.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace roam::detail {

struct handler_entry;

/// What a fiber running an object handler notes (exchange_fiber_note): the object it holds
/// and how.
struct held_object {
  object_id target;
  std::uint8_t access = 0;  ///< roam::access
};

directory& directory_of(node_runtime& n) noexcept;
/// The node that answers for `id`'s home: id.home itself, unless a restart on fewer nodes
/// made another node adopt it (directory::home_node, ADR 50).
inline node_id home_of(node_runtime& n, const object_id& id) noexcept {
  return directory_of(n).home_node(id.home);
}
/// The load-balancing layer's hooks on `n` (set_object_hooks), or null.
object_hooks* hooks_of(node_runtime& n) noexcept;

/// What the location gate decided.
enum class location_outcome {
  resident,        ///< the object is here
  awaits_install,  ///< routed here for an installation this node has not seen yet
  forward,         ///< elsewhere: forward it along `r`
  never_created,   ///< unknown at its home node
  destroyed,       ///< destroyed here, or (at its home) destroyed and its entry collected
};
/// Location gate: where the object of `oh` is, as this node (`here`) knows it; `home` is the
/// node that answers for the object's home (home_of); `r` is the route to forward along.
/// Versions only grow along a forwarding path, so a message never circles. `issued_here`:
/// `here` is that home and has handed out the object's index, so a home without a route
/// knows it destroyed (ADR 46). The caller holds the entry's lock.
location_outcome location_gate(const object_state& s, const object_entry& e,
                               const object_message_header& oh, node_id here, node_id home,
                               bool issued_here, route& r);

object_message_header read_object_header(const message& m);
void write_object_header(message& m, const object_message_header& oh) noexcept;

/// Grants access to the head of the object's queue while it is compatible; the granted
/// messages go to `granted` (to be run with run_all_later once the lock is released).
void dispatch_ready(object_state& s, set_aside_list& granted);
void run_all_later(node_runtime& n, set_aside_list& messages) noexcept;

/// Releases the access a finished handler held, and starts what it let through.
/// `counted`: the handler was counted in the object's load on arrival (cost, run time).
void release_access(node_runtime& n, object_entry& e, std::uint8_t mode, bool counted = false,
                    double cost = 0, double run_us = -1);
/// Starts granted messages: through the load balancer's push hook, or the node's queues.
void start_granted(node_runtime& n, set_aside_list& granted) noexcept;
void start_granted(node_runtime& n, set_aside_message m) noexcept;
/// The load-balancing layer's counting of an object's load (object_hooks::arrived, finished,
/// recount): nothing without it. The caller holds the object's entry lock.
///@{
void count_arrival(node_runtime& n, object_state& s, double cost) noexcept;
void count_finish(node_runtime& n, object_state& s, double cost, double run_us) noexcept;
void recount_load(node_runtime& n, object_state& s, double cost, std::uint32_t count) noexcept;
///@}
/// Tells the load balancer that an object's load changed.
void notify_load(node_runtime& n, const object_id& id) noexcept;

/// A message that cannot reach its object: an object_error for call(), fatal for send().
/// Tracing: the handler open on the calling thread runs on `target`.
void trace_object(const object_id& target) noexcept;
/// Tracing: `id` leaves node `n` for node `dest`.
void trace_migration(const node_runtime& n, const object_id& id, node_id dest) noexcept;

void fail_object_message(node_runtime& n, message_ptr& m, const object_message_header& oh,
                         const std::string& problem);

/// What ship() did: shipped the object, or refused because the packed object and its
/// waiting messages (`bytes`; 0 when the object alone exceeds a block) exceed what one
/// message to the destination carries (`limit`).
struct ship_result {
  object_id id;  ///< the object, its type included
  bool shipped = true;
  std::uint64_t bytes = 0;
  std::uint64_t limit = 0;
};
/// Packs the object and everything waiting for it and sends it to `dest`; the caller holds
/// exclusive access. `running_cost` / `running_count`: what the running handlers add to the
/// object's load here (they finish here). `carried`: the running message, to go first in the
/// object's queue there. A refusal changes nothing: the object, its messages and the
/// caller's access stay as they were.
ship_result ship(node_runtime& n, object_entry& e, node_id dest,
                 const message_header* reply_request, message_ptr* carried, double running_cost,
                 std::uint32_t running_count);
/// "mobile object 0:1 (T) cannot move to node 3: …": why ship() refused.
std::string too_large_to_ship(node_id dest, const ship_result& r);
/// A load balancer's move, once the caller holds exclusive access for it: ships the object
/// and releases that access. A refusal leaves the object here, not offered to the
/// balancers again (object_state::too_large_to_move), and warns once per process. Returns
/// whether it shipped.
bool ship_for_balancer(node_runtime& n, object_entry& e, node_id dest);

/// Posts a runtime-internal system message (not counted by quiescence) of `bytes` bytes
/// to `to`: location updates, series restarts.
void post_protocol_message(node_runtime& n, const handler_entry& handler, node_id to,
                           const void* payload, std::size_t bytes);

/// A compaction round of the object of `e` (a resident one; the caller does not hold its
/// lock): asks its idle origins to restart their series (order_compaction.cpp).
void ask_idle_origins_to_restart(node_runtime& n, object_entry& e);

// ---- freeing destroyed objects' entries (entry_collection.cpp, ADR 46) -------------------

/// Removes `e` if it holds nothing and its object is destroyed (`known_destroyed`: its home
/// said so). The caller does not hold its lock, and does not use `e` after a true return
/// beyond its current work item. Returns whether it removed it.
bool collect_if_dead(node_runtime& n, object_entry& e, bool known_destroyed = false);
/// The object of `e`, not here, is destroyed: messages waiting for its installation fail,
/// and the entry goes once they have. Returns whether it did either (false: the entry was
/// gone already, or holds the object, or holds messages of another kind).
bool learn_destroyed(node_runtime& n, object_entry& e);
/// After destroying an object on a node other than its home: tells the home.
void tell_home_destroyed(node_runtime& n, const object_id& id);
/// A message waits here for an installation this node knows nothing of (its entry may have
/// been removed): asks the home, which answers if the object is destroyed.
void ask_home_if_destroyed(node_runtime& n, const object_id& id);
/// Asks the homes of the objects this node knows of (and neither holds nor keeps messages
/// for) which are destroyed, and removes those when they answer.
void sweep_directory(node_runtime& n);
/// New entries a node takes in before it sweeps (more once its directory is larger).
inline constexpr std::size_t sweep_min_new_entries = 1024;
/// sweep_directory() once the directory has taken in enough new entries. Callers test
/// `directory::inserted() >= sweep_min_new_entries` first, inline.
void sweep_directory_if_due(node_runtime& n);
/// A worker of `n` is about to park (node_extension::idle): sweeps a second after the last
/// idle sweep, or up to a minute after when sweeps keep finding nothing, so that a node
/// that no longer takes in entries still frees those of objects destroyed meanwhile.
bool sweep_directory_when_idle(node_runtime& n);

/// Runs a runtime operation (migrate, destroy, locate, gather) whose access is granted.
void run_operation(node_runtime& n, object_entry& e, message_ptr& m,
                   const object_message_header& oh);

/// Gives a multi-object group the object (the gather handler holds its exclusive
/// access) and waits until the group releases it.
void hold_object(object_group::hold& h, void* object);

/// An object arriving on a node: built by its constructor, or unpacked after a migration
/// with the messages that were waiting for it.
struct installation {
  object_id id;
  std::uint32_t version = 0;
  std::unique_ptr<object_box> object;
  std::vector<origin_order> expected;
  // Read from the install message; their pending counts came with them, and they become
  // set-aside tokens once the installation has checked them (a malformed one is reported,
  // not lost).
  std::vector<message_ptr> ready;  ///< admitted messages, in queue order
  std::vector<message_ptr> early;  ///< messages ahead of their turn
};
void install_object(node_runtime& n, installation inst);

}  // namespace roam::detail
