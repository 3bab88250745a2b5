// The mobile-object protocol on one node: routing and forwarding, per-origin ordering,
// access privileges, creation and destruction. Migration is in migration.cpp.
//
// A message to an object goes through three gates on the node that receives it (the order
// and access gates are the object's mailbox, object_mailbox.hpp; node-local progress through
// them is message::local_progress, never the wire bytes):
// 1. Location. If the object is not here, the message is forwarded to the node's last
//    known location, tagged with the version of that knowledge; or, if it was routed here
//    on a newer version than this node knows (the object is on its way here), it waits for
//    the installation. Versions only grow along a forwarding path, so a message never
//    circles.
// 2. Order. Each message carries a sequence number per (origin node, object); one that
//    arrives before its predecessor waits in `early` until they have been admitted.
// 3. Access. Admitted messages queue in arrival order; the head runs when its access
//    (exclusive or shared) is compatible with the handlers running.
// Every message set aside at a gate is a set_aside_message: counted as pending until it runs
// again through its handler (run_later) or is dealt with otherwise, so quiescence detection
// sees it.
#include "mobile_node.hpp"

#include <roam/core/detail/grace_period.hpp>

#include <roam/core/detail/function_symbol.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

namespace roam::detail {

namespace {

const extension_key directory_extension = register_node_extension(
    {.name = "mobile objects",
     .order = 50,
     .make = [](node_runtime& n) -> void* { return new directory(n); },
     .destroy = [](void* state) noexcept { delete static_cast<directory*>(state); },
     .quiesce = [](void* state) { static_cast<directory*>(state)->ending = true; },
     .idle =
         [](void* state) {
           return sweep_directory_when_idle(static_cast<directory*>(state)->node);
         }});

std::string handler_name(const message_header& h, const object_message_header& oh) {
  switch (oh.operation) {
    case operation_migrate:
      return "roam::migrate";
    case operation_destroy:
      return "roam::destroy";
    case operation_locate:
      return "roam::locate";
    case operation_gather:
      return "roam::call_together";
    default:
      break;
  }
  return handler_display_name(h.handler, h.function);
}

void send_location_update(node_runtime& n, node_id to, const object_id& id, route r);

}  // namespace

directory& directory_of(node_runtime& n) noexcept {
  return *static_cast<directory*>(extension_state(n, directory_extension));
}

object_message_header decode_object_header(std::span<const std::byte> payload, node_id nodes,
                                           node_id home_span) {
  if (payload.size() < sizeof(object_message_header))
    throw deserialization_error("a message to a mobile object has " +
                                std::to_string(payload.size()) +
                                " payload bytes, fewer than its object header");
  object_message_header oh;
  std::memcpy(&oh, payload.data(), sizeof oh);
  if (oh.target.index == 0 || oh.target.home >= home_span || oh.origin >= nodes ||
      oh.previous_hop > nodes || oh.access > static_cast<std::uint8_t>(access::shared) ||
      oh.operation > operation_gather)
    throw deserialization_error("invalid object header (object " + std::to_string(oh.target.home) +
                                ":" + std::to_string(oh.target.index) + ", origin " +
                                std::to_string(oh.origin) + ", previous hop " +
                                std::to_string(static_cast<long long>(oh.previous_hop) - 1) +
                                ", operation " + std::to_string(oh.operation) + ")");
  return oh;
}

object_message_header read_object_header(const message& m) {
  if (m.header.payload_size < sizeof(object_message_header))
    throw deserialization_error("a message to a mobile object has " +
                                std::to_string(m.header.payload_size) +
                                " payload bytes, fewer than its object header");
  object_message_header oh;
  std::memcpy(&oh, m.payload(), sizeof oh);
  return oh;
}

void write_object_header(message& m, const object_message_header& oh) noexcept {
  std::memcpy(m.payload(), &oh, sizeof oh);
}

void dispatch_ready(object_state& s, set_aside_list& granted) {
  s.dispatch(granted, s.migration_pending);
}

void run_all_later(node_runtime& n, set_aside_list& messages) noexcept {
  for (set_aside_message& m : messages) std::move(m).run_later(n);
  messages.clear();
}

float& current_send_cost() noexcept {
  thread_local float cost = 1.0f;
  return cost;
}

std::string object_type_name(std::uint32_t type) {
  const handler_entry* e = handler_registry::find(type);
  if (!e) return "unknown type #" + std::to_string(type);
  // The entry is "[roam::detail::]mobile_type<T>": show T.
  std::string_view name = e->name;
  const std::string_view prefix = "mobile_type<";
  const auto at = name.find(prefix);
  if (at != std::string_view::npos && name.back() == '>')
    name = name.substr(at + prefix.size(), name.size() - at - prefix.size() - 1);
  return std::string(name);
}

namespace {

// A type's name for the trace, which keeps names as pointers to text that lives as long as
// the process. Traced jobs only.
// Not inlined: it reads a thread-local, and a caller on a fiber must not keep its address
// across a switch.
[[gnu::noinline]] const char* traced_type_name(std::uint32_t type) {
  // Each thread remembers the names it asked for: the process's table and its lock are met
  // once per type and thread, not per handler.
  thread_local std::unordered_map<std::uint32_t, const char*> known;
  if (const auto at = known.find(type); at != known.end()) return at->second;
  static std::mutex lock;
  static std::unordered_map<std::uint32_t, std::string> names;
  const char* name = nullptr;
  {
    std::lock_guard guard(lock);
    auto [at, added] = names.try_emplace(type);
    if (added) at->second = object_type_name(type);
    name = at->second.c_str();
  }
  known.emplace(type, name);
  return name;
}

}  // namespace

void trace_object(const object_id& target) noexcept {
  trace::open_handler* h = trace::innermost_handler();
  if (h == nullptr) return;
  h->run.value = target.index;
  h->run.object_home = target.home;
  try {
    h->run.type = traced_type_name(target.type);
  } catch (...) {  // no memory for the name: the event names the object without its type
  }
}

void trace_migration(const node_runtime& n, const object_id& id, node_id dest) noexcept {
  trace::event e;
  e.kind = trace::event_kind::migration;
  e.begin_ns = trace::now_ns();
  e.node = id_of(n);
  e.value = id.index;
  e.object_home = id.home;
  e.handler = dest;
  try {
    e.type = traced_type_name(id.type);
  } catch (...) {  // no memory for the name: the event names the object without its type
  }
  trace::record(e);
}

std::string describe_object(const object_id& id) {
  return "mobile object " + std::to_string(id.home) + ":" + std::to_string(id.index) + " (" +
         object_type_name(id.type) + ")";
}

void fail_object_message(node_runtime& n, message_ptr& m, const object_message_header& oh,
                         const std::string& problem) {
  const std::string what = problem + "; handler '" + handler_name(m->header, oh) +
                           "' sent from node " + std::to_string(oh.origin) +
                           " cannot run (message reached node " + std::to_string(id_of(n)) + ")";
  if (!(m->header.flags & flag_wants_reply)) fatal(what);
  message_header request = m->header;
  request.source = oh.origin;
  run_and_reply<void>(n, request, handler_name(m->header, oh),
                      [&] { throw object_error("" + what); });
}

object_hooks* hooks_of(node_runtime& n) noexcept {
  return directory_of(n).hooks.load(std::memory_order_acquire);
}

void start_granted(node_runtime& n, set_aside_message m) noexcept {
  object_hooks* hooks = hooks_of(n);
  if (hooks && hooks->push) {
    const object_id id = read_object_header(*m).target;
    hooks->push(hooks->context, std::move(m).to_scheduler(), id);
    return;
  }
  std::move(m).run_later(n);
}

void start_granted(node_runtime& n, set_aside_list& granted) noexcept {
  object_hooks* hooks = hooks_of(n);
  if (hooks && hooks->push) {
    for (set_aside_message& m : granted) {
      const object_id id = read_object_header(*m).target;
      hooks->push(hooks->context, std::move(m).to_scheduler(), id);
    }
    granted.clear();
    return;
  }
  run_all_later(n, granted);
}

void count_arrival(node_runtime& n, object_state& s, double cost) noexcept {
  object_hooks* hooks = hooks_of(n);
  if (hooks && hooks->arrived) hooks->arrived(s.load, cost);
}

void count_finish(node_runtime& n, object_state& s, double cost, double run_us) noexcept {
  object_hooks* hooks = hooks_of(n);
  if (hooks && hooks->finished) hooks->finished(s.load, cost, run_us);
}

void recount_load(node_runtime& n, object_state& s, double cost, std::uint32_t count) noexcept {
  object_hooks* hooks = hooks_of(n);
  if (hooks && hooks->recount) hooks->recount(s.load, cost, count);
}

void notify_load(node_runtime& n, const object_id& id) noexcept {
  object_hooks* hooks = hooks_of(n);
  if (hooks && hooks->notify) hooks->notify(hooks->context, id);
}

void set_object_hooks(node_runtime& n, object_hooks* hooks) noexcept {
  directory_of(n).hooks.store(hooks, std::memory_order_release);
}

void release_access(node_runtime& n, object_entry& e, std::uint8_t mode, bool counted, double cost,
                    double run_us) {
  set_aside_list granted;
  bool migrate_now = false;
  node_id target = 0;
  // Once the lock is released, another thread may destroy the object and remove `e`.
  const object_id id = e.id();
  {
    std::lock_guard guard(e.lock);
    object_state& s = e.state();
    s.release(static_cast<access>(mode));
    if (counted) s.started.fetch_sub(1, std::memory_order_relaxed);
    if (counted) count_finish(n, s, cost, run_us);
    if (s.state == residence::resident) {
      if (s.migration_pending && s.idle()) {
        // The last running handler is done: the balancer's migration goes first.
        s.exclusive_running = true;
        s.migration_pending = false;
        s.revoke.store(false, std::memory_order_relaxed);
        migrate_now = true;
        target = s.migration_target;
      } else {
        dispatch_ready(s, granted);
      }
    }
  }
  if (migrate_now) {
    (void)ship_for_balancer(n, e, target);
    return;
  }
  start_granted(n, granted);
  if (counted) notify_load(n, id);
}

double read_object_cost(const message& m) noexcept {
  return read_object_header(m).cost;  // an admitted message: its header was checked
}

namespace {
/// Calls `visit(load)` for each object resident on `n`, each under its entry's lock.
/// Balancers call this every period: the entry list is copied into a per-thread buffer, so
/// nothing is allocated after the first call on a thread (`visit` must not walk again).
template <class Visit>
void for_each_resident(node_runtime& n, Visit visit) {
  const grace_read_section reading;  // a balancer's thread is no worker
  thread_local std::vector<object_entry*> entries;
  directory_of(n).copy_residents(entries);
  for (object_entry* e : entries) {
    std::lock_guard guard(e->lock);
    object_state& s = e->state();
    // An object whose move waits for its running handlers is on its way: its load is its
    // destination's (a balancer that counted it here would give the same work away twice).
    if (s.state != residence::resident || s.migration_pending) continue;
    object_load l;
    l.id = object_id{e->id().home, s.type, e->id().index};
    l.pending_cost = s.load.pending_cost;
    l.pending_count = s.load.pending_count;
    l.running = s.started.load(std::memory_order_relaxed);
    l.mean_run_us = s.load.mean_run_us;
    l.hint = s.object->load_hint();
    visit(l);
  }
}
}  // namespace

std::vector<object_load> resident_objects(node_runtime& n) {
  std::vector<object_load> loads;
  for_each_resident(n, [&](const object_load& l) { loads.push_back(l); });
  return loads;
}

double resident_load(node_runtime& n) {
  double total = 0;
  for_each_resident(n, [&](const object_load& l) { total += l.load(); });
  return total;
}

bool migrate_resident(node_runtime& n, const object_id& id, node_id dest) {
  if (dest >= size_of(n) || dest == id_of(n)) return false;
  directory& dir = directory_of(n);
  // Announced before the frozen flag is read (both sequentially consistent): a freeze that
  // waits for the announced moves cannot miss one that read the flag clear.
  const struct move_scope {
    explicit move_scope(directory& d) : dir(d) { dir.moves_starting.fetch_add(1); }
    ~move_scope() { dir.moves_starting.fetch_sub(1); }
    directory& dir;
  } moving(dir);
  if (dir.migrations_frozen.load()) return false;
  const grace_read_section reading;
  object_entry* e = dir.find(id);
  if (!e) return false;
  {
    std::lock_guard guard(e->lock);
    object_state* s = e->state_if_any();
    if (!s || s->state != residence::resident || s->migration_pending || s->too_large_to_move)
      return false;
    if (s->exclusive_running || s->shared_running != 0) {
      // Done by the last running handler's release; granted handlers that have not started
      // give their grant back when they are picked.
      s->migration_pending = true;
      s->migration_target = dest;
      if (s->started.load(std::memory_order_relaxed) <
          (s->exclusive_running ? 1u : 0u) + s->shared_running)
        s->revoke.store(true, std::memory_order_release);
      return true;
    }
    s->exclusive_running = true;
  }
  return ship_for_balancer(n, *e, dest);
}

location_outcome location_gate(const object_state& s, const object_entry& e,
                               const object_message_header& oh, node_id here, node_id home,
                               bool issued_here, route& r) {
  if (s.state == residence::destroyed) return location_outcome::destroyed;
  if (s.state == residence::resident) return location_outcome::resident;
  r = e.current_route();
  // The home keeps a route to every object it created until the object is destroyed.
  if (r.version == 0 && here == home)
    return issued_here ? location_outcome::destroyed : location_outcome::never_created;
  if (oh.version > r.version) return location_outcome::awaits_install;
  if (r.version == 0) r.location = home;  // no knowledge here: ask the object's home
  return location_outcome::forward;
}

namespace {

void forward(node_runtime& n, message_ptr m, object_message_header oh, route r) {
  if (r.location == id_of(n))
    fatal("directory inconsistency: node " + std::to_string(id_of(n)) + " routes " +
          describe_object(oh.target) + " to itself but does not hold it");
  // Shortcut: the node that forwarded it here knew an older route than this node does, and
  // would send the object's next messages along the same chain.
  if (oh.previous_hop != 0 && r.version > oh.version) {
    const node_id previous = oh.previous_hop - 1;
    if (previous != r.location) send_location_update(n, previous, oh.target, r);
  }
  oh.previous_hop = id_of(n) + 1;
  oh.version = r.version;
  if (oh.hops < UINT8_MAX) ++oh.hops;
  write_object_header(*m, oh);
  m->header.dest = r.location;
  post(n, std::move(m));
}

/// A balancer's migration waits for this granted handler, which has not started: it gives
/// its grant back and waits in front of the object's queue (moving with it). Returns false
/// if the migration is no longer pending (the handler runs). `from_policy`: the message
/// comes back from a scheduling policy, its pending count with it (else it is the running
/// turn, which is set aside).
bool revoked(node_runtime& n, object_entry& e, message_ptr& m, object_message_header oh,
             bool from_policy) {
  bool ship_now = false;
  node_id target = 0;
  {
    std::lock_guard guard(e.lock);
    object_state& s = e.state();
    if (!s.migration_pending || s.state != residence::resident) return false;
    s.release(static_cast<access>(oh.access));
    m->local_progress = stage_admitted;
    s.ready.push_front(from_policy ? set_aside_message::adopt(std::move(m))
                                   : set_aside_message::set_aside(n, std::move(m)));
    if (s.idle()) {
      s.grant(access::exclusive);  // for the migration
      s.migration_pending = false;
      s.revoke.store(false, std::memory_order_relaxed);
      ship_now = true;
      target = s.migration_target;
    }
  }
  if (ship_now) (void)ship_for_balancer(n, e, target);
  return true;
}

/// Runs a message whose access has been granted, then releases the access.
void run_granted(node_runtime& n, object_entry& e, message_ptr& m, const object_message_header& oh,
                 object_run_function run) {
  const message_header h = m->header;  // the handler may take the block over
  object_state& state = e.state();
  if (state.revoke.load(std::memory_order_acquire) && revoked(n, e, m, oh, false)) return;
  state.started.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t actual_type = state.type;
  if (oh.target.type != actual_type) {
    // Checked once the message has its turn, so later messages of its sender still run.
    fail_object_message(
        n, m, oh,
        "a mobile_ptr<" + object_type_name(oh.target.type) + "> names " +
            describe_object(object_id{oh.target.home, actual_type, oh.target.index}));
    release_access(n, e, oh.access, true, oh.cost);
    return;
  }
  object_hooks* hooks = hooks_of(n);
  const bool measure = hooks && hooks->measure_run_time;
  const auto started =
      measure ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  // The fiber notes the object it holds: a handler that waits for an operation needing
  // that access (its own object's migration) is told instead of waiting forever.
  const held_object held{oh.target, oh.access};
  struct restore_note {
    const void* previous;
    ~restore_note() { exchange_fiber_note(previous); }
  } restore{exchange_fiber_note(&held)};
  try {
    if (oh.operation != operation_none) {
      run_operation(n, e, m, oh);
    } else {
      void* object = e.state().object->get();
      run(n, object, m, oh);
    }
  } catch (const deserialization_error&) {
    throw;  // reported by the node runtime as a malformed payload
  } catch (const std::exception& ex) {
    fatal(describe_object(oh.target) + ": handler '" + handler_name(h, oh) + "' (sent from node " +
          std::to_string(oh.origin) + ", running on node " + std::to_string(id_of(n)) + ") threw " +
          type_name_of(typeid(ex)) + ": " + ex.what());
  } catch (...) {
    fatal(describe_object(oh.target) + ": a handler sent from node " + std::to_string(oh.origin) +
          " threw an exception not derived from std::exception on node " +
          std::to_string(id_of(n)));
  }
  // Lazy updates after a forwarded delivery (unless the handler just moved the object: the
  // destination's installation is the news then): the origin learns where the object was
  // found, and so do the home node, where senders that know nothing go first, and the last
  // node that forwarded it (the earlier ones heard from their successors, in forward()).
  if (oh.hops > 0) {
    const route r = e.current_route();
    if (r.location == id_of(n)) {
      const node_id here = id_of(n), home = home_of(n, oh.target);
      if (oh.origin != here) send_location_update(n, oh.origin, oh.target, r);
      if (home != here && home != oh.origin) send_location_update(n, home, oh.target, r);
      if (oh.previous_hop != 0) {
        const node_id last = oh.previous_hop - 1;
        if (last != here && last != oh.origin && last != home)
          send_location_update(n, last, oh.target, r);
      }
    }
  }
  const double run_us =
      measure
          ? std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
                .count()
          : -1.0;
  release_access(n, e, oh.access, true, oh.cost, run_us);
  // Destroyed here: the entry goes now unless messages on their way to fail still need it
  // (the last of them removes it). The last use of `e` on this path.
  if (oh.operation == operation_destroy) (void)collect_if_dead(n, e);
}

// ---- location updates (runtime-internal, not counted by quiescence) ---------------------

struct location_update {
  object_id id;
  route where;
};

handler_entry location_update_entry{
    "roam.mobile.location_update", [](node_runtime& n, message_ptr& m) {
      if (m->header.payload_size != sizeof(location_update))
        throw deserialization_error("a location update has " +
                                    std::to_string(m->header.payload_size) + " bytes");
      location_update u;
      std::memcpy(&u, m->payload(), sizeof u);
      // A node learns that an object is on itself only by installing it: an update
      // saying so could overtake the installation and make the node forward to itself.
      if (u.where.location == id_of(n)) return;
      const grace_read_section reading;
      directory& dir = directory_of(n);
      // Only a node that knows the object is owed an update. One without an entry, or a
      // home without a route, had it removed because the object was destroyed: a route
      // learnt from a late update would send messages after it, where nobody knows it.
      object_entry* e = dir.find(u.id);
      if (!e || (home_of(n, u.id) == id_of(n) && e->current_route().version == 0)) return;
      e->learn_route(u.where);
    }};

const bool location_update_registered = handler_registry::add(&location_update_entry);

void send_location_update(node_runtime& n, node_id to, const object_id& id, route r) {
  (void)location_update_registered;
  const location_update u{id, r};
  post_protocol_message(n, location_update_entry, to, &u, sizeof u);
}

}  // namespace

void post_protocol_message(node_runtime& n, const handler_entry& handler, node_id to,
                           const void* payload, std::size_t bytes) {
  message_ptr m = message::allocate(bytes);
  m->header.handler = id_of(handler);
  m->header.flags = flag_system;
  m->header.dest = to;
  m->header.payload_size = bytes;
  std::memcpy(m->payload(), payload, bytes);
  post(n, std::move(m));
}

// ---- delivery ---------------------------------------------------------------------------

namespace {

enum class gate_result {
  run_now,   ///< in order with access granted: the caller runs it now
  queued,    ///< granted and queued to run later (it will be counted when it runs)
  consumed,  ///< set aside, forwarded or failed: no longer the caller's
  retry,     ///< the entry was removed meanwhile: look the object up again
};

object_message_header checked_header(node_runtime& n, const message& m) {
  return decode_object_header(std::span(m.payload(), m.header.payload_size), size_of(n),
                              directory_of(n).home_span());
}

/// The three gates (see the file comment) for a message that has not passed them.
gate_result pass_gates(node_runtime& n, object_entry& e, message_ptr& m, object_message_header& oh,
                       bool may_run_here) {
  std::unique_lock lock(e.lock);
  if (e.collected()) return gate_result::retry;
  object_state& s = e.state();
  route r;
  const node_id home = home_of(n, oh.target);
  const bool issued_here =
      s.state != residence::resident && home == id_of(n) && directory_of(n).index_issued(oh.target);
  switch (location_gate(s, e, oh, id_of(n), home, issued_here, r)) {
    case location_outcome::resident:
      break;
    case location_outcome::awaits_install: {
      // Knowing nothing of the object, this node may be the one that destroyed it and
      // removed its entry: the home knows (ADR 46).
      const bool ask = s.awaiting_install.empty() && r.version == 0;
      s.awaiting_install.push_back(set_aside_message::set_aside(n, std::move(m)));
      lock.unlock();
      if (ask) ask_home_if_destroyed(n, oh.target);
      return gate_result::consumed;
    }
    case location_outcome::forward:
      lock.unlock();
      forward(n, std::move(m), oh, r);
      return gate_result::consumed;
    case location_outcome::never_created:
      lock.unlock();
      fail_object_message(n, m, oh, describe_object(oh.target) + " was never created");
      (void)collect_if_dead(n, e);
      return gate_result::consumed;
    case location_outcome::destroyed:
      if (m->local_progress == stage_orphan && s.orphans_failing > 0) --s.orphans_failing;
      lock.unlock();
      fail_object_message(n, m, oh, describe_object(oh.target) + " was destroyed");
      (void)collect_if_dead(n, e);  // the last use of `e` here
      return gate_result::consumed;
  }
  // Load counts a message from its arrival, whether it can run yet or not.
  count_arrival(n, s, oh.cost);
  switch (s.order_gate(oh.origin, oh.series, oh.seq)) {
    case order_outcome::in_order:
      break;
    case order_outcome::early:
      s.early.emplace(std::pair{oh.origin, oh.seq}, set_aside_message::set_aside(n, std::move(m)));
      lock.unlock();
      notify_load(n, oh.target);
      return gate_result::consumed;
    case order_outcome::already_delivered:
      throw deserialization_error("sequence number " + std::to_string(oh.seq) + " from node " +
                                  std::to_string(oh.origin) + " for " + describe_object(oh.target) +
                                  " was already delivered");
    case order_outcome::duplicate_early:
      throw deserialization_error("sequence number " + std::to_string(oh.seq) + " from node " +
                                  std::to_string(oh.origin) + " for " + describe_object(oh.target) +
                                  " arrived twice");
  }
  object_hooks* hooks = hooks_of(n);
  gate_result result = gate_result::consumed;
  set_aside_message granted_now;
  if (s.access_gate(static_cast<access>(oh.access), s.migration_pending) ==
      access_outcome::granted) {
    if (may_run_here && !(hooks && hooks->push)) {
      result = gate_result::run_now;
    } else {
      // Queued below, without allocating a list. Admitting an arrival keeps its count; a
      // running turn (may_run_here) is set aside to run again.
      m->local_progress = stage_granted;
      granted_now = may_run_here ? set_aside_message::set_aside(n, std::move(m))
                                 : set_aside_message::adopt(std::move(m));
      result = gate_result::queued;
    }
  } else {
    m->local_progress = stage_admitted;
    s.ready.push_back(set_aside_message::set_aside(n, std::move(m)));
  }
  s.admit_successors(oh.origin);  // those that arrived early are now in order
  const bool compact = s.compaction_round_due();
  set_aside_list later;
  dispatch_ready(s, later);
  lock.unlock();
  if (compact) ask_idle_origins_to_restart(n, e);
  if (granted_now) start_granted(n, std::move(granted_now));
  if (!later.empty()) start_granted(n, later);
  notify_load(n, oh.target);
  return result;
}

}  // namespace

void deliver_object_message(node_runtime& n, message_ptr& m, object_run_function run) {
  object_message_header oh = checked_header(n, *m);
  if (trace::on()) [[unlikely]]
    trace_object(oh.target);
  directory& dir = directory_of(n);
  for (;;) {
    // A granted message's entry stays: its grant keeps the object from being destroyed.
    object_entry& e = dir.find_or_insert(oh.target);
    if (m->local_progress == stage_granted) {
      run_granted(n, e, m, oh, run);
      return;
    }
    switch (pass_gates(n, e, m, oh, true)) {
      case gate_result::run_now:
        run_granted(n, e, m, oh, run);
        return;
      case gate_result::queued:    // granted, but a scheduling policy runs it: it was set
      case gate_result::consumed:  // aside and counts again when it runs; this turn ends
        if (dir.inserted() >= sweep_min_new_entries) sweep_directory_if_due(n);
        return;
      case gate_result::retry:
        continue;
    }
  }
}

void give_back_granted(node_runtime& n, message_ptr m) noexcept {
  const object_message_header oh = read_object_header(*m);
  const grace_read_section reading;
  object_entry* e = directory_of(n).find(oh.target);
  if (e && e->state().revoke.load(std::memory_order_acquire) && revoked(n, *e, m, oh, true))
    return;  // queued again in front of its object, its count with it
  set_aside_message::adopt(std::move(m)).run_later(n);  // its object is not leaving: it runs
}

bool admit_object_message(node_runtime& n, message_ptr& m) {
  object_message_header oh = checked_header(n, *m);
  // How far a node got with a message is its own business (message::local_progress): bytes
  // that claim progress are forged or corrupt.
  if (oh.unused != 0)
    throw deserialization_error("a message to " + describe_object(oh.target) +
                                " arrived marked as already admitted");
  const grace_read_section reading;  // admission may run on a communication thread
  for (;;) {
    object_entry& e = directory_of(n).find_or_insert(oh.target);
    switch (pass_gates(n, e, m, oh, false)) {
      case gate_result::queued:
        return true;  // counted when it runs
      case gate_result::consumed:
        note_handled(n);  // its arrival is dealt with, as if it had run
        return true;
      case gate_result::run_now:
        return false;  // not with may_run_here == false
      case gate_result::retry:
        continue;
    }
  }
}

node_id route_object_message(node_runtime& n, message& m) {
  object_message_header oh = read_object_header(m);
  const grace_read_section reading;  // a no-op on a worker
  directory& dir = directory_of(n);
  if (dir.inserted() >= sweep_min_new_entries) sweep_directory_if_due(n);
  object_entry& e = dir.find_or_insert(oh.target);
  const object_entry::ticket t = e.take_sequence();
  oh.seq = t.seq;
  oh.series = t.series;
  oh.origin = id_of(n);
  route r = e.current_route();
  oh.version = r.version;
  m.header.dest = r.version ? r.location : home_of(n, oh.target);
  write_object_header(m, oh);
  return m.header.dest;
}

void post_object_message(node_runtime& n, message_ptr m) {
  route_object_message(n, *m);
  post(n, std::move(m));
}

// ---- creation -----------------------------------------------------------------------------

object_id create_local_object(node_runtime& n, std::uint32_t type,
                              std::unique_ptr<object_box> box) {
  const grace_read_section reading;  // the lookup walks a table another thread may replace
  directory& dir = directory_of(n);
  object_id id{id_of(n), type, dir.next_index()};
  object_entry& e = dir.find_or_insert(id);
  std::lock_guard guard(e.lock);
  object_state& s = e.state();
  s.state = residence::resident;
  s.type = type;
  s.object = std::move(box);
  e.learn_route({1, id_of(n)});
  dir.add_resident(e);
  return id;
}

object_id create_remote_object(node_runtime& n, std::uint32_t type, node_id where,
                               message_ptr construct) {
  directory& dir = directory_of(n);
  object_id id{id_of(n), type, dir.next_index()};
  {
    const grace_read_section reading;  // the lookup walks a table another thread may replace
    dir.find_or_insert(id).learn_route({1, where});
  }
  std::memcpy(construct->payload(), &id, sizeof id);
  construct->header.dest = where;
  post(n, std::move(construct));
  return id;
}

void install_constructed_object(node_runtime& n, const object_id& id,
                                std::unique_ptr<object_box> box) {
  installation inst;
  inst.id = id;
  inst.version = 1;
  inst.object = std::move(box);
  install_object(n, std::move(inst));
}

node_id last_known_location(const object_id& id) {
  node_runtime& n = sending_node("roam::call_together");
  const grace_read_section reading;
  const object_entry* e = directory_of(n).find(id);  // no entry made for a lookup
  const route r = e ? e->current_route() : route{};
  return r.version ? r.location : home_of(n, id);
}

}  // namespace roam::detail
