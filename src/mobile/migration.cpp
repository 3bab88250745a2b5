// Operations on mobile objects: migration (pack, ship, install), destruction, locate, and
// the holds of multi-object handlers. Each runs as a message to the object with exclusive
// access (locate: shared), so it is ordered like the sender's other messages and never
// overlaps a running handler.
#include "mobile_node.hpp"

#include <roam/mobile/detail/migration_pack.hpp>

#include <roam/core/detail/grace_period.hpp>

#include <roam/base/detail/fatal.hpp>
#include <roam/base/detail/message_text.hpp>
#include <roam/base/error.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <numeric>

namespace roam::detail {

namespace {

handler_entry operation_entry{
    "roam.mobile.operation",
    [](node_runtime& n, message_ptr& m) { deliver_object_message(n, m, nullptr); }, ~0u,
    &admit_object_message};
const bool operation_registered = handler_registry::add(&operation_entry);

}  // namespace

ship_result ship(node_runtime& n, object_entry& e, node_id dest,
                 const message_header* reply_request, message_ptr* carried, double running_cost,
                 std::uint32_t running_count) {
  object_state& s = e.state();
  ship_result result;
  result.id = object_id{e.id().home, s.type, e.id().index};
  result.limit = largest_message_to(n, dest) - sizeof(message_header);
  message_ptr out = message::allocate(0);
  out->header.handler = s.type;  // the type's install handler
  out->header.dest = dest;
  message_writer w(out);
  migration_pack_header ih;
  w.write(&ih, sizeof ih);
  try {
    s.object->pack(w);  // exclusive access: nobody changes the object meanwhile
  } catch (const std::length_error&) {
    result.shipped = false;  // larger than any block: bytes stays 0 (unknown)
    return result;
  }
  std::unique_ptr<object_box> moved_out;
  {
    std::lock_guard guard(e.lock);
    // Sized before anything is taken from the object, so that a refusal changes nothing
    // (its messages would be lost halfway through otherwise) and nothing grows below.
    std::uint64_t bytes =
        w.position() +
        s.expected.size() * (sizeof(node_id) + sizeof(std::uint32_t) + sizeof(std::uint64_t));
    if (carried) bytes += packed_message_size(**carried);
    for (const set_aside_message& m : s.ready) bytes += packed_message_size(*m);
    for (const auto& [key, m] : s.early) bytes += packed_message_size(*m);
    if (bytes > result.limit) {
      result.shipped = false;
      result.bytes = bytes;
      return result;
    }
    message::reserve(out, bytes, w.position());
    ih.id = result.id;
    ih.version = e.current_route().version + 1;
    if (reply_request) {
      ih.reply_node = reply_request->source;
      ih.reply_to = reply_request->reply_to;
    }
    ih.expected_count = static_cast<std::uint32_t>(s.expected.size());
    for (const origin_order& o : s.expected) {
      w.write(&o.origin, sizeof o.origin);
      w.write(&o.series, sizeof o.series);
      w.write(&o.next, sizeof o.next);
    }
    ih.ready_count = static_cast<std::uint32_t>(s.ready.size()) + (carried ? 1 : 0);
    if (carried) {
      // Set aside to run again on the destination; its count travels with it.
      const message_ptr moving = set_aside_message::set_aside(n, std::move(*carried)).transfer();
      write_packed_message(w, *moving);
    }
    for (set_aside_message& m : s.ready) write_packed_message(w, *std::move(m).transfer());
    ih.early_count = static_cast<std::uint32_t>(s.early.size());
    for (auto& [key, m] : s.early) write_packed_message(w, *std::move(m).transfer());
    s.state = residence::absent;
    moved_out = std::move(s.object);
    s.ready.clear();
    s.early.clear();
    s.expected.clear();
    s.arrivals_since_round = 0;
    recount_load(n, s, running_cost, running_count);
    s.migration_pending = false;
    directory_of(n).remove_resident(e);
    e.learn_route({ih.version, dest});
  }
  w.finish();
  std::memcpy(out->payload(), &ih, sizeof ih);
  if (trace::on()) [[unlikely]]
    trace_migration(n, result.id, dest);
  post(n, std::move(out));
  notify_load(n, e.id());
  return result;
}

std::string too_large_to_ship(node_id dest, const ship_result& r) {
  return describe_object(r.id) + " cannot move to node " + std::to_string(dest) +
         ": packed with the messages waiting for it, it takes " +
         (r.bytes == 0 ? "more than " + std::to_string(max_payload_bytes)
                       : std::to_string(r.bytes)) +
         " bytes, more than one message carries (" + std::to_string(r.limit) +
         "); it stays where it is";
}

bool ship_for_balancer(node_runtime& n, object_entry& e, node_id dest) {
  const ship_result r = ship(n, e, dest, nullptr, nullptr, 0, 0);
  if (!r.shipped) {
    {
      std::lock_guard guard(e.lock);
      e.state().too_large_to_move = true;
    }
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      std::fprintf(
          stderr, "%s\n",
          error_text("warning: a load balancer's move was refused: " + too_large_to_ship(dest, r) +
                     "; the balancers leave it there (said once per process)")
              .c_str());
  }
  release_access(n, e, static_cast<std::uint8_t>(access::exclusive));
  return r.shipped;
}

namespace {

void destroy_here(node_runtime& n, object_entry& e) {
  std::unique_ptr<object_box> dead;
  set_aside_list orphans;
  {
    std::lock_guard guard(e.lock);
    object_state& s = e.state();
    s.state = residence::destroyed;
    dead = std::move(s.object);
    for (set_aside_message& m : s.ready) orphans.push_back(std::move(m));
    for (auto& [key, m] : s.early) orphans.push_back(std::move(m));
    for (set_aside_message& m : s.awaiting_install) orphans.push_back(std::move(m));
    for (set_aside_message& m : orphans) m->local_progress = stage_orphan;
    s.ready.clear();
    s.early.clear();
    s.awaiting_install.clear();
    s.orphans_failing = static_cast<std::uint32_t>(orphans.size());
    s.expected.clear();
    recount_load(n, s, 0, 1);  // the destroy operation itself, which finishes here
    s.migration_pending = false;
    directory_of(n).remove_resident(e);
  }
  notify_load(n, e.id());
  dead.reset();  // the destructor runs with exclusive access still held
  tell_home_destroyed(n, e.id());
  run_all_later(n, orphans);  // each fails: the object is destroyed
}

message_header reply_request_of(const message_header& h, const object_message_header& oh) {
  message_header request = h;
  request.source = oh.origin;
  return request;
}

}  // namespace

// ---- the operations, on the node that holds the object -----------------------------------

void run_operation(node_runtime& n, object_entry& e, message_ptr& m,
                   const object_message_header& oh) {
  const message_header request = reply_request_of(m->header, oh);
  const bool wants_reply = (request.flags & flag_wants_reply) != 0;
  message_reader r(m);
  r.skip_to(sizeof(object_message_header));
  switch (oh.operation) {
    case operation_migrate: {
      node_id dest = 0;
      read_value(r, dest);
      r.expect_end();
      if (dest >= size_of(n))
        throw deserialization_error("migration to node " + std::to_string(dest));
      if (dest == id_of(n)) {
        if (wants_reply) run_and_reply<void>(n, request, "roam::migrate", [] {});
        return;
      }
      const ship_result shipped =
          ship(n, e, dest, wants_reply ? &request : nullptr, nullptr, oh.cost, 1);
      if (shipped.shipped) return;
      const std::string why = too_large_to_ship(dest, shipped);
      if (!wants_reply) fatal("roam::migrate: " + why);
      run_and_reply<void>(n, request, "roam::migrate", [&why] { throw usage_error(why); });
      return;
    }
    case operation_destroy:
      r.expect_end();
      destroy_here(n, e);
      if (wants_reply) run_and_reply<void>(n, request, "roam::destroy", [] {});
      return;
    case operation_locate:
      r.expect_end();
      if (wants_reply) run_and_reply<node_id>(n, request, "roam::locate", [&] { return id_of(n); });
      return;
    case operation_gather: {
      node_id at = 0;
      std::uint64_t address = 0;
      read_value(r, at);
      read_value(r, address);
      r.expect_end();
      if (at >= size_of(n)) throw deserialization_error("gather to node " + std::to_string(at));
      if (at != id_of(n)) {
        // Continues there, first in the queue.
        const ship_result shipped = ship(n, e, at, nullptr, &m, oh.cost, 1);
        if (!shipped.shipped) fatal("roam::call_together: " + too_large_to_ship(at, shipped));
        return;
      }
      // Here: hold the object (this handler keeps its exclusive access) until released.
      auto* hold = reinterpret_cast<object_group::hold*>(static_cast<std::uintptr_t>(address));
      hold_object(*hold, e.state().object->get());
      if (wants_reply) run_and_reply<void>(n, request, "roam::call_together", [] {});
      return;
    }
    default:
      throw deserialization_error("unknown mobile-object operation " +
                                  std::to_string(oh.operation));
  }
}

// ---- installation -------------------------------------------------------------------------

void install_object(node_runtime& n, installation inst) {
  const grace_read_section reading;  // installed from a receive, on any thread
  object_entry& e = directory_of(n).find_or_insert(inst.id);
  set_aside_list later, granted;
  {
    std::lock_guard guard(e.lock);
    object_state& s = e.state();
    if (s.state != residence::absent)
      fatal("directory inconsistency: " + describe_object(inst.id) + " arrives on node " +
            std::to_string(id_of(n)) + " which " +
            (s.state == residence::resident ? "already holds it" : "saw it destroyed"));
    s.state = residence::resident;
    s.too_large_to_move = false;  // what an earlier stay here found no longer holds
    s.type = inst.id.type;
    s.object = std::move(inst.object);
    s.expected = std::move(inst.expected);
    recount_load(n, s, 0, 0);
    for (message_ptr& m : inst.ready) {
      count_arrival(n, s, read_object_header(*m).cost);
      m->local_progress = stage_admitted;
      s.ready.push_back(set_aside_message::adopt(std::move(m)));
    }
    for (message_ptr& m : inst.early) {
      object_message_header oh = read_object_header(*m);
      count_arrival(n, s, oh.cost);
      s.early.emplace(std::pair{oh.origin, oh.seq}, set_aside_message::adopt(std::move(m)));
    }
    e.learn_route({inst.version, id_of(n)});
    directory_of(n).add_resident(e);
    // Messages that were routed here for this installation (or an older one) go through
    // the gates again.
    auto waiting = std::partition(
        s.awaiting_install.begin(), s.awaiting_install.end(),
        [&](const set_aside_message& m) { return read_object_header(*m).version > inst.version; });
    for (auto it = waiting; it != s.awaiting_install.end(); ++it) later.push_back(std::move(*it));
    s.awaiting_install.erase(waiting, s.awaiting_install.end());
    dispatch_ready(s, granted);
  }
  run_all_later(n, later);
  start_granted(n, granted);
  notify_load(n, inst.id);
}

namespace {

void install_migrated_object(node_runtime& n, message_ptr& m, object_unpack_function unpack) {
  message_reader r(m);
  migration_pack pack = decode_migration_pack(
      r, m->header.handler, {size_of(n), directory_of(n).home_span(), handler_registry::size()},
      unpack);
  const migration_pack_header& ih = pack.header;
  if (trace::on()) [[unlikely]]
    trace_object(ih.id);
  installation inst;
  inst.id = ih.id;
  inst.version = ih.version;
  inst.object = std::move(pack.object);
  inst.expected.reserve(pack.expected.size());
  for (const packed_order& o : pack.expected)
    inst.expected.push_back(origin_order{o.origin, o.series, o.next});
  inst.ready = std::move(pack.ready);
  inst.early = std::move(pack.early);
  install_object(n, std::move(inst));
  if (ih.reply_to) {
    message_header request{};
    request.source = ih.reply_node;
    request.reply_to = ih.reply_to;
    request.flags = flag_wants_reply;
    run_and_reply<void>(n, request, "roam::migrate", [] {});
  }
}

}  // namespace

void receive_migrated_object(node_runtime& n, message_ptr& m, object_unpack_function unpack,
                             bool arriving) {
  if (arriving && trace::on()) [[unlikely]] {
    // Installed by the thread that delivers it, not by a handler: a run of its own in the
    // trace, where the arrow from the old node ends.
    const traced_message_run traced(n, *m);
    install_migrated_object(n, m, unpack);
    return;
  }
  install_migrated_object(n, m, unpack);
}

// ---- the callers' side --------------------------------------------------------------------

namespace {

message_ptr operation_message(const object_id& id, object_operation op, access mode,
                              const void* extra, std::size_t size) {
  (void)operation_registered;
  message_ptr m = message::allocate(sizeof(object_message_header) + size);
  m->header.handler = id_of(operation_entry);
  m->header.flags = flag_wants_reply;
  object_message_header oh;
  oh.target = id;
  oh.access = static_cast<std::uint8_t>(mode);
  oh.operation = op;
  std::memcpy(m->payload(), &oh, sizeof oh);
  if (size) std::memcpy(m->payload() + sizeof oh, extra, size);
  m->header.payload_size = sizeof oh + size;
  return m;
}

template <class R>
future<R> call_operation(const char* caller, const object_id& id, object_operation op, access mode,
                         const void* extra = nullptr, std::size_t size = 0) {
  node_runtime& n = sending_node(caller);
  if (!id.index) throw usage_error(std::string(caller) + " on a null mobile_ptr");
  auto state = std::make_shared<call_state<R>>();
  // From a handler that holds this object in a way the operation cannot share, the
  // operation runs only after the handler returns: waiting for it there never ends.
  if (const auto* held = static_cast<const held_object*>(fiber_note());
      held && held->target.home == id.home && held->target.index == id.index &&
      (mode == access::exclusive || held->access == static_cast<std::uint8_t>(access::exclusive)))
    state->forbid_wait_from_this_fiber(
        std::string(caller) + " of " + describe_object(id) +
        " waited for inside a handler running on that object: the operation needs the object, "
        "which the handler holds until it returns (do not wait for it there; use then(), or "
        "wait elsewhere)");
  message_ptr m = operation_message(id, op, mode, extra, size);
  m->header.reply_to = register_call(n, state);
  post_object_message(n, std::move(m));
  return make_future<R>(std::move(state));
}

}  // namespace

future<void> migrate_object(const object_id& id, node_id dest) {
  node_runtime& n = sending_node("roam::migrate");
  if (dest >= size_of(n))
    throw usage_error("roam::migrate: node " + std::to_string(dest) +
                      " is out of range (the job has " + std::to_string(size_of(n)) + " nodes)");
  return call_operation<void>("roam::migrate", id, operation_migrate, access::exclusive, &dest,
                              sizeof dest);
}

future<void> destroy_object(const object_id& id) {
  return call_operation<void>("roam::destroy", id, operation_destroy, access::exclusive);
}

future<node_id> locate_object(const object_id& id) {
  return call_operation<node_id>("roam::locate", id, operation_locate, access::shared);
}

// ---- multi-object groups ------------------------------------------------------------------

struct object_group::hold {
  ready_flag held;      ///< the object is on the group's node and held (or failed)
  ready_flag released;  ///< the group is done with it
  ready_flag done;      ///< the gather request has finished (its reply arrived)
  void* object = nullptr;
  bool sent = false;
  bool failed = false;
  std::string error;
};

void hold_object(object_group::hold& h, void* object) {
  h.object = object;
  h.held.set();
  wait(h.released);
}

namespace {

class gather_reply final : public reply_target {
 public:
  explicit gather_reply(std::shared_ptr<object_group::hold> h) noexcept : hold_(std::move(h)) {}
  void deliver(const std::byte* payload, std::size_t size, bool is_error) override {
    if (is_error) {
      message_reader r(payload, size);
      std::string type, handler;
      read_value(r, type);
      read_value(r, hold_->error);
      read_value(r, handler);
      hold_->failed = true;
      hold_->held.set();
    }
    hold_->done.set();
  }

 private:
  std::shared_ptr<object_group::hold> hold_;
};

}  // namespace

object_group::object_group(const object_id* ids, std::size_t count) {
  node_runtime& n = require_node("roam::call_together");
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto key = [&](std::size_t i) { return std::pair{ids[i].home, ids[i].index}; };
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return key(a) < key(b); });
  for (std::size_t i = 1; i < count; ++i)
    if (key(order[i]) == key(order[i - 1]))
      throw usage_error("a multi-object handler names " + describe_object(ids[order[i]]) +
                        " twice");
  holds_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) holds_.push_back(std::make_shared<hold>());
  const node_id here = id_of(n);
  std::exception_ptr failure;
  try {
    for (std::size_t i : order) {
      hold& h = *holds_[i];
      // The payload after the object header: (node_id at, uint64 address of the hold).
      std::byte extra[sizeof(node_id) + sizeof(std::uint64_t)];
      const std::uint64_t address = reinterpret_cast<std::uintptr_t>(&h);
      std::memcpy(extra, &here, sizeof here);
      std::memcpy(extra + sizeof here, &address, sizeof address);
      message_ptr m =
          operation_message(ids[i], operation_gather, access::exclusive, extra, sizeof extra);
      m->header.reply_to = register_call(n, std::make_shared<gather_reply>(holds_[i]));
      h.sent = true;
      post_object_message(n, std::move(m));
      wait(h.held);
      if (h.failed) throw object_error(h.error);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    // Outside the catch block: releasing waits, and a fiber that waits inside a catch
    // block may resume on another thread, whose exception bookkeeping is not its own.
    release_all();  // the destructor does not run for a constructor that throws
    std::rethrow_exception(failure);
  }
}

object_group::~object_group() { release_all(); }

void object_group::release_all() noexcept {
  for (auto& h : holds_)
    if (h->sent && !h->failed && !h->released.ready()) h->released.set();
  for (auto& h : holds_)
    if (h->sent) wait(h->done);
}

void* object_group::object(std::size_t i) const noexcept { return holds_[i]->object; }

}  // namespace roam::detail
