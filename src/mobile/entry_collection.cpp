// Freeing the directory entries of destroyed objects (ADR 46).
//
// Who frees what:
// - the node that destroys an object tells the object's home, then removes its own entry;
// - the home removes its entry when told. It needs no tombstone: it keeps an entry for every
//   object it created until the object is destroyed, and it knows which indices it handed
//   out, so "no route here, index handed out" means destroyed (location_gate);
// - every other node (senders, nodes a message passed through) removes its entries of
//   destroyed objects by a sweep: it asks each home, in one message per home, which of the
//   objects it knows are destroyed, and removes those the home names. A node sweeps once its
//   directory has taken in half its size in new entries (at least sweep_min_new_entries), so
//   its entries of destroyed objects stay within a constant factor of the others; and an
//   idle node sweeps a second after its last idle sweep, waiting twice as long after each
//   one when nothing changed meanwhile (up to 64 s), so that objects destroyed while it took
//   in nothing still go.
//
// A message that reaches a node whose entry was removed finds no route there. Routed by a
// sender that still knew the object there, it would wait for an installation that never
// comes: the node asks the home, which answers if the object is destroyed, and the message
// then fails as one sent to a destroyed object. The notice, the question and the answer are
// runtime-internal system messages (uncounted, like location updates), run as they arrive:
// between one pair of nodes they keep their order, so a home asked by the node that
// destroyed the object has always heard of the destruction first. Sweeps ask again about
// entries whose only messages wait for an installation.
#include "mobile_node.hpp"

#include <roam/core/detail/grace_period.hpp>
#include <roam/core/detail/handler_registry.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace roam::detail {

namespace {

/// Indices in one question or answer (64 KiB of payload).
constexpr std::size_t indices_per_message = 8192;

bool holds_nothing(const object_state* s) noexcept {
  return !s || (s->state != residence::resident && s->idle() && !s->migration_pending &&
                s->ready.empty() && s->early.empty() && s->awaiting_install.empty() &&
                s->orphans_failing == 0);
}

/// Holds nothing but messages waiting for an installation: a sweep asks the home about
/// these too (it answers only if the object is destroyed, and they then fail).
bool holds_nothing_but_waiting(const object_state* s) noexcept {
  return !s || (s->state != residence::resident && s->idle() && !s->migration_pending &&
                s->ready.empty() && s->early.empty() && s->orphans_failing == 0);
}

/// Under the entry's lock: whether `e` may go. `known_destroyed`: the home said so.
bool dead(node_runtime& n, const object_entry& e, const object_state* s, bool known_destroyed) {
  if (!holds_nothing(s)) return false;
  if (known_destroyed || (s && s->state == residence::destroyed)) return true;
  // A home without a route: destroyed (its index was handed out) or never created.
  return home_of(n, e.id()) == id_of(n) && e.current_route().version == 0;
}

/// The objects a question, answer or notice names: created on node `home` (which may be a
/// node of a checkpointed job that another node answers for now, ADR 50), by index.
struct object_indices {
  node_id home = 0;
  std::vector<std::uint64_t> indices;
};

/// A question, answer or notice is the home (as a 64-bit word) and 1 to
/// indices_per_message indices; `answering` is the node that must answer for that home
/// (the receiver of a question or notice, the sender of an answer).
object_indices read_indices(node_runtime& n, const message& m, const char* what,
                            node_id answering) {
  const std::size_t bytes = m.header.payload_size;
  const std::size_t words = bytes / sizeof(std::uint64_t);
  if (bytes % sizeof(std::uint64_t) != 0 || words < 2 || words - 1 > indices_per_message)
    throw deserialization_error(std::string(what) + " has " + std::to_string(bytes) +
                                " bytes, not a home and a list of 1 to " +
                                std::to_string(indices_per_message) + " object indices");
  std::uint64_t home = 0;
  std::memcpy(&home, m.payload(), sizeof home);
  if (home >= directory_of(n).home_span() ||
      directory_of(n).home_node(static_cast<node_id>(home)) != answering)
    throw deserialization_error(std::string(what) + " names objects of node " +
                                std::to_string(home) + ", which node " + std::to_string(answering) +
                                " does not answer for");
  object_indices out{static_cast<node_id>(home), std::vector<std::uint64_t>(words - 1)};
  std::memcpy(out.indices.data(), m.payload() + sizeof home, bytes - sizeof home);
  return out;
}

/// On an object's home: whether it is destroyed.
bool destroyed_at_home(node_runtime& n, node_id home, std::uint64_t index) {
  directory& dir = directory_of(n);
  const object_id id{home, 0, index};
  if (!dir.index_issued(id)) return false;  // never created: nothing to say
  object_entry* e = dir.find(id);
  if (!e) return true;
  std::lock_guard guard(e->lock);
  const object_state* s = e->state_if_any();
  if (s && s->state == residence::destroyed) return true;
  return e->current_route().version == 0;
}

void post_indices(node_runtime& n, const handler_entry& handler, node_id to, node_id home,
                  const std::vector<std::uint64_t>& indices) {
  std::vector<std::uint64_t> words;
  for (std::size_t at = 0; at < indices.size(); at += indices_per_message) {
    const std::size_t count = std::min(indices_per_message, indices.size() - at);
    words.assign(1, home);
    words.insert(words.end(), indices.begin() + static_cast<std::ptrdiff_t>(at),
                 indices.begin() + static_cast<std::ptrdiff_t>(at + count));
    post_protocol_message(n, handler, to, words.data(), words.size() * sizeof(std::uint64_t));
  }
}

// The three protocol messages run as they arrive (admission functions), in the order
// they left their sender: a home asked by the node that destroyed an object has run the
// destruction notice first. (Queued, two workers of the home could run them the other way
// round, and the question would go unanswered.)
template <void (*Run)(node_runtime&, const message&)>
constexpr handler_entry arrival_handler(std::string_view name) {
  return handler_entry{name, [](node_runtime& n, message_ptr& m) { Run(n, *m); }, ~0u,
                       [](node_runtime& n, message_ptr& m) {
                         Run(n, *m);
                         return true;
                       }};
}

// Home -> asker: these objects (of the home) are destroyed.
void destroyed_answer(node_runtime& n, const message& m) {
  const grace_read_section reading;
  const object_indices named = read_indices(n, m, "a list of destroyed objects", m.header.source);
  for (const std::uint64_t index : named.indices)
    if (object_entry* e = directory_of(n).find(object_id{named.home, 0, index})) {
      if (learn_destroyed(n, *e)) directory_of(n).freed_by_sweeps.fetch_add(1);
    }
}
handler_entry destroyed_answer_entry =
    arrival_handler<destroyed_answer>("roam.mobile.destroyed_objects");
const bool destroyed_answer_registered = handler_registry::add(&destroyed_answer_entry);

// Asker -> home: which of these objects are destroyed?
void which_destroyed(node_runtime& n, const message& m) {
  const grace_read_section reading;
  std::vector<std::uint64_t> destroyed;
  const object_indices asked = read_indices(n, m, "a question about destroyed objects", id_of(n));
  for (const std::uint64_t index : asked.indices)
    if (destroyed_at_home(n, asked.home, index)) destroyed.push_back(index);
  if (!destroyed.empty())
    post_indices(n, destroyed_answer_entry, m.header.source, asked.home, destroyed);
}
handler_entry which_destroyed_entry =
    arrival_handler<which_destroyed>("roam.mobile.which_destroyed");
const bool which_destroyed_registered = handler_registry::add(&which_destroyed_entry);

// Destroying node -> home: the object is destroyed.
void object_destroyed(node_runtime& n, const message& m) {
  const grace_read_section reading;
  const object_indices named = read_indices(n, m, "a destruction notice", id_of(n));
  for (const std::uint64_t index : named.indices)
    if (object_entry* e = directory_of(n).find(object_id{named.home, 0, index}))
      (void)learn_destroyed(n, *e);
}
handler_entry object_destroyed_entry =
    arrival_handler<object_destroyed>("roam.mobile.object_destroyed");
const bool object_destroyed_registered = handler_registry::add(&object_destroyed_entry);

}  // namespace

bool collect_if_dead(node_runtime& n, object_entry& e, bool known_destroyed) {
  return directory_of(n).remove_if(
      e, [&](object_entry& x) { return dead(n, x, x.state_if_any(), known_destroyed); });
}

bool learn_destroyed(node_runtime& n, object_entry& e) {
  set_aside_list orphans;
  {
    std::lock_guard guard(e.lock);
    if (e.collected()) return false;
    object_state* s = e.state_if_any();
    if (s && s->state == residence::resident) return false;  // here and alive: not this one
    if (s) {
      s->state = residence::destroyed;
      for (set_aside_message& m : s->awaiting_install) {
        m->local_progress = stage_orphan;
        orphans.push_back(std::move(m));
      }
      s->awaiting_install.clear();
      s->orphans_failing += static_cast<std::uint32_t>(orphans.size());
    }
  }
  if (orphans.empty()) return collect_if_dead(n, e, true);
  run_all_later(n, orphans);  // each fails (the object is destroyed); the last one collects
  return true;
}

void tell_home_destroyed(node_runtime& n, const object_id& id) {
  (void)object_destroyed_registered;
  const node_id home = home_of(n, id);
  if (home == id_of(n)) return;
  post_indices(n, object_destroyed_entry, home, id.home, {id.index});
}

void ask_home_if_destroyed(node_runtime& n, const object_id& id) {
  (void)which_destroyed_registered;
  (void)destroyed_answer_registered;
  post_indices(n, which_destroyed_entry, home_of(n, id), id.home, {id.index});
}

void sweep_directory(node_runtime& n) {
  const grace_read_section reading;
  directory& dir = directory_of(n);
  // The job is ending: other processes may have stopped (and nothing is destroyed now).
  if (dir.ending.load(std::memory_order_relaxed)) return;
  // Objects of other homes that this node neither holds nor keeps messages for.
  std::map<node_id, std::vector<std::uint64_t>> by_home;
  dir.for_each_entry([&](object_entry& e) {
    if (home_of(n, e.id()) == id_of(n)) return;
    std::lock_guard guard(e.lock);
    if (!e.collected() && holds_nothing_but_waiting(e.state_if_any()))
      by_home[e.id().home].push_back(e.id().index);
  });
  for (const auto& [home, indices] : by_home)
    post_indices(n, which_destroyed_entry, dir.home_node(home), home, indices);
  grace_collect();
}

void sweep_directory_if_due(node_runtime& n) {
  directory& dir = directory_of(n);
  const std::size_t due = std::max(sweep_min_new_entries, dir.entries() / 2);
  if (dir.inserted() < due) return;
  if (!dir.claim_sweep(due)) return;  // another thread sweeps
  sweep_directory(n);
}

bool sweep_directory_when_idle(node_runtime& n) {
  directory& dir = directory_of(n);
  if (dir.ending.load(std::memory_order_relaxed)) return false;
  // Only entries of objects of other homes go by sweeps; this counts all, which is enough
  // to stop asking on a node that knows nothing.
  const std::size_t entries = dir.entries();
  if (entries == 0) return false;
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::int64_t next = dir.next_idle_sweep.load(std::memory_order_relaxed);
  if (now < next) return true;
  // Each idle sweep whose answers freed nothing doubles the wait for the next, up to 64 s: a
  // node whose entries are of live objects asks about them a few times a minute at most.
  const std::uint64_t freed = dir.freed_by_sweeps.load(std::memory_order_relaxed);
  unsigned in_vain = 0;
  if (next != 0 && freed == dir.freed_at_idle_sweep.load(std::memory_order_relaxed))
    in_vain = std::min(dir.idle_sweeps_in_vain.load(std::memory_order_relaxed) + 1, 6u);
  const auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::seconds(1) * (1u << in_vain));
  if (!dir.next_idle_sweep.compare_exchange_strong(next, now + wait.count(),
                                                   std::memory_order_relaxed))
    return true;
  dir.idle_sweeps_in_vain.store(in_vain, std::memory_order_relaxed);
  dir.freed_at_idle_sweep.store(freed, std::memory_order_relaxed);
  sweep_directory(n);
  return true;
}

std::size_t directory_entries() {
  return directory_of(sending_node("roam::detail::directory_entries")).entries();
}

void sweep_directory_now() { sweep_directory(sending_node("roam::detail::sweep_directory_now")); }

}  // namespace roam::detail
