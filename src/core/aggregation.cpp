// Aggregation lanes (see include/roam/core/detail/aggregation.hpp) and the bundle handler
// that unpacks them on the receiving node.
#include "aggregation_lanes.hpp"

#include <roam/base/detail/message_text.hpp>
#include <roam/core/detail/fiber.hpp>
#include "node_runtime.hpp"
#include "process_runtime.hpp"
#include "routing.hpp"
#include "scheduler.hpp"

#include <roam/core/detail/aggregation.hpp>
#include <roam/core/detail/function_symbol.hpp>
#include <roam/core/detail/handler_registry.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

namespace roam::detail {
namespace {

thread_local thread_lanes* tl_lanes [[gnu::tls_model("initial-exec")]] = nullptr;

void run_ordered_bundle(node_runtime& node, message_ptr& m);
bool admit_ordered_bundle(node_runtime& node, message_ptr& m);
bool admit_unordered_bundle(node_runtime& node, message_ptr& m) {
  return admit_routed_bundle(node, m, lane_order::unordered);
}
void run_bundle(node_runtime& node, message_ptr& m);
// Two handlers: bundles of ordered lanes run one after another per sender thread (their
// admission holds back a bundle while an earlier one of its stream is queued or running);
// those of unordered lanes run as soon as a worker is free, side by side.
handler_entry ordered_bundle_handler{"roam.core.bundle.ordered", run_ordered_bundle, ~0u,
                                     admit_ordered_bundle};
handler_entry unordered_bundle_handler{"roam.core.bundle.unordered", run_bundle, ~0u,
                                       admit_unordered_bundle};
const bool bundles_registered = handler_registry::add(&ordered_bundle_handler) &&
                                handler_registry::add(&unordered_bundle_handler);

std::uint64_t stream_key(const message_header& h) noexcept {
  return (static_cast<std::uint64_t>(h.source) << 32) | (h.reply_to & 0xffffffffu);
}

bool admit_ordered_bundle(node_runtime& node, message_ptr& m) {
  return admit_routed_bundle(node, m, lane_order::ordered) || wait_for_stream_turn(node, m);
}

}  // namespace

bool wait_for_stream_turn(node_runtime& node, message_ptr& m) {
  std::lock_guard guard(node.streams.lock);
  auto& s = node.streams.streams[stream_key(m->header)];
  if (!s.busy) {
    s.busy = true;
    return false;  // runs now (queued like any message)
  }
  s.held.push_back(m.release());
  node.streams.held_bundles.fetch_add(1, std::memory_order_relaxed);
  return true;
}

namespace {

void run_ordered_bundle(node_runtime& node, message_ptr& m) {
  const std::uint64_t key = stream_key(m->header);
  run_bundle(node, m);
  message* next = nullptr;
  {
    std::lock_guard guard(node.streams.lock);
    auto it = node.streams.streams.find(key);
    if (it->second.held.empty()) {
      node.streams.streams.erase(it);
    } else {
      next = it->second.held.front();
      it->second.held.pop_front();
      node.streams.held_bundles.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  if (next) run_later(node, message_ptr(next));  // admitted already: straight to a queue
}

std::string handler_label(std::uint32_t id) {
  const handler_entry* e = handler_registry::find(id);
  return e ? "handler '" + std::string(e->name) + "'" : "handler #" + std::to_string(id);
}

}  // namespace

bundle_group next_bundle_group(std::span<const std::byte>& rest) {
  bundle_group group;
  group_header& g = group.header;
  if (rest.size() < sizeof g)
    throw deserialization_error("a bundle ends with " + std::to_string(rest.size()) +
                                " bytes, too few for a group header");
  std::memcpy(&g, rest.data(), sizeof g);
  rest = rest.subspan(sizeof g);
  if (g.bytes > rest.size() || g.reserved != 0)
    throw deserialization_error("a bundle group of " + handler_label(g.handler) + " announces " +
                                std::to_string(g.bytes) + " bytes but " +
                                std::to_string(rest.size()) + " remain (corrupt bundle)");
  group.records = rest.first(g.bytes);
  rest = rest.subspan(g.bytes);
  return group;
}

namespace {

void run_bundle(node_runtime& node, message_ptr& m) {
  const message_header h = m->header;
  std::span<const std::byte> rest(m->payload(), h.payload_size);
  while (!rest.empty()) {
    const bundle_group group = next_bundle_group(rest);
    const group_header& g = group.header;
    const std::byte* p = group.records.data();
    // Admission took every record for another node out (routing.cpp): what runs here was
    // sent here, by the bundle's source or by a node whose records it relays.
    if (g.target != h.dest || !routed_from(node, g.origin, h.source))
      throw deserialization_error("a bundle group of " + handler_label(g.handler) + " for node " +
                                  std::to_string(g.target) + " from node " +
                                  std::to_string(g.origin) +
                                  " cannot come this way (corrupt bundle)");
    const handler_entry* e = handler_registry::find(g.handler);
    if (!e)
      fatal("unknown handler id " + std::to_string(g.handler) + " in a bundle from node " +
            std::to_string(h.source) + " to node " + std::to_string(h.dest) + " (this binary has " +
            std::to_string(handler_registry::size()) + " handlers)");
    if (e == &carried_message_handler)  // admission takes a carried message off a bundle's end
      throw deserialization_error(
          "a carried message that is not the last record of its bundle "
          "(corrupt bundle)");
    if (e->batch) {
      set_running_handler(g.handler);  // a stack overflow names it too
      // Errors name the channel's handler, not the bundle that carried it.
      const auto name = [&] { return handler_display_name(g.handler, g.function); };
      try {
        e->batch(node, g.origin, p, g.bytes, g.count, g.function);
      } catch (const deserialization_error& ex) {
        fatal("malformed records for handler '" + name() + "' in a bundle from node " +
              std::to_string(g.origin) + ": " + exception_text(ex));
      } catch (const std::exception& ex) {
        fatal("handler '" + name() + "' (a channel message from node " + std::to_string(g.origin) +
              ") threw " + type_name_of(typeid(ex)) + ": " + ex.what());
      } catch (...) {
        fatal("handler '" + name() + "' (a channel message from node " + std::to_string(g.origin) +
              ") threw an exception not derived from std::exception");
      }
    } else {
      fatal("handler '" + std::string(e->name) + "' in a bundle from node " +
            std::to_string(h.source) +
            " is not a channel handler (corrupt bundle, or a "
            "different binary?)");
    }
  }
}

void close_group(lane& l) noexcept {
  if (l.handler == ~0u) return;
  group_header g;
  g.handler = l.handler;
  g.count = l.count;
  g.bytes = static_cast<std::uint32_t>(l.cursor - (l.group + sizeof(group_header)));
  g.target = l.target;
  g.function = l.function;
  g.origin = l.origin;
  g.record = l.record;
  g.stream = l.stream;
  std::memcpy(l.group, &g, sizeof g);
  l.handler = ~0u;
  l.count = 0;
  l.function = 0;
}

// Ships the lane's bundle; the lane stays listed in `open` (callers unlist it). `full`:
// the next record did not fit, so the thread is streaming and the next bundle doubles;
// otherwise the thread idled, waited or flushed, and the next bundle is sized to hold all
// it sent to this lane since it last did (one message for that much next time).
void flush_lane(lane_set& s, std::size_t index, bool full = false) noexcept {
  lane& l = s.lanes[index];
  if (!l.bundle) return;
  close_group(l);
  message_ptr m(l.bundle);
  const auto used = static_cast<std::size_t>(l.cursor - m->payload());
  m->header.payload_size = used;
  const std::size_t burst =
      std::min<std::size_t>(l.burst + used, std::numeric_limits<std::uint32_t>::max());
  lane next;
  next.target_bytes = l.target_bytes;
  if (full) {
    next.burst = static_cast<std::uint32_t>(burst);
    next.growth = static_cast<std::uint8_t>(std::min<unsigned>(l.growth + 1u, s.max_growth));
  } else {
    while (next.growth < s.max_growth && s.room(next.growth) < burst) ++next.growth;
  }
  l = next;
  if (s.outbox)
    s.outbox->push_back(m.release());
  else
    post_counted(*s.node, std::move(m));
}

message_ptr open_bundle(node_runtime& n, node_id dest, std::size_t room, lane_order order,
                        std::uint32_t serial) {
  message_ptr m = message::allocate(room);
  const bool ordered = order == lane_order::ordered;
  m->header.handler = id_of(ordered ? ordered_bundle_handler : unordered_bundle_handler);
  m->header.dest = dest;
  m->header.flags = 0;
  // The stream (ordered), or that a node relayed it; bundles never want replies.
  m->header.reply_to = ordered || serial == relay_serial ? serial : 0;
  n.sent.fetch_add(1);  // counted from now on, so quiescence waits for it
  return m;
}

// Writes the record (with its length prefix) at `at`.
std::byte* put_record(std::byte* at, const void* record, std::size_t size, bool prefixed) {
  if (prefixed) {
    const auto length = static_cast<std::uint32_t>(size);
    std::memcpy(at, &length, sizeof length);
    at += sizeof length;
  }
  if (size) std::memcpy(at, record, size);
  return at + size;
}

thread_lanes* lanes_of_this_thread(node_runtime& n) {
  if (tl_lanes) return tl_lanes->node == &n ? tl_lanes : nullptr;
  if (n.process().settings().aggregate_bytes == 0) return nullptr;
  // Only threads that flush when they run out of work aggregate: workers and the
  // application thread. A service thread (the balancer's) or the communication thread
  // has no idle moment the runtime sees, so a record it buffered could stay there while
  // the job waits for it; its records ship at once.
  if (current_worker() < 0 && !is_application_thread()) return nullptr;
  auto s = std::make_unique<thread_lanes>();
  shape_lane_set(*s, n, n.process().routes());
  s->destinations = n.size();
  if (s->routed())
    for (lane& l : s->lanes) l.target_bytes = sizeof(node_id);
  tl_lanes = s.get();
  std::lock_guard guard(n.lanes_lock);
  s->serial = static_cast<std::uint32_t>(n.thread_lanes_list.size() + 1);
  n.thread_lanes_list.push_back(std::move(s));
  return tl_lanes;
}

}  // namespace

void shape_lane_set(lane_set& s, node_runtime& node, bool by_slot) {
  const config& cfg = node.process().settings();
  s.node = &node;
  s.self = node.id();
  s.by_slot = by_slot;
  if (by_slot) s.grid = node.process().grid();
  // The whole block (message object, header, records) takes the configured bytes, so
  // that it fills its size class exactly.
  s.block = std::max<std::size_t>(cfg.aggregate_bytes, 2 * sizeof(message) + sizeof(group_header));
  while ((2u << s.max_growth) <= cfg.aggregate_growth) ++s.max_growth;
  s.lanes.resize(2 * (by_slot ? s.grid.slots() : std::size_t{node.size()}));
  s.listed.resize(s.lanes.size());
  // Room for every lane up front: listing an opened (already counted) bundle must not
  // fail, or it would never be shipped and quiescence never come.
  s.open.reserve(s.lanes.size());
}

std::byte* make_room(lane_set& s, std::size_t index, node_id to, lane_order order,
                     const group_key& key, std::size_t bytes, std::uint32_t records, bool alone) {
  lane* l = &s.lanes[index];
  auto continues = [&] {
    return l->handler == key.handler && l->function == key.function && l->target == key.target &&
           l->origin == key.origin && l->record == key.record && l->stream == key.stream;
  };
  const std::size_t wanted = bytes + (continues() ? 0 : sizeof(group_header));
  if (l->bundle && static_cast<std::size_t>(l->limit - l->cursor) < wanted)
    flush_lane(s, index, /*full=*/true);
  if (!l->bundle) {
    const std::size_t fit = sizeof(group_header) + bytes;
    const std::size_t room = alone ? fit : std::max<std::size_t>(s.room(l->growth), fit);
    message_ptr m = open_bundle(*s.node, to, room, order, s.serial);
    l->cursor = m->payload();
    l->limit = m->payload() + room;
    l->bundle = m.release();
    if (!s.listed[index]) {
      s.listed[index] = 1;
      s.open.push_back(index);
    }
  }
  if (!continues()) {
    close_group(*l);
    l->group = l->cursor;
    l->cursor += sizeof(group_header);
    l->handler = key.handler;
    l->function = key.function;
    l->target = key.target;
    l->origin = key.origin;
    l->record = key.record;
    l->stream = key.stream;
  }
  std::byte* at = l->cursor;
  l->cursor += bytes;
  l->count += records;
  return at;
}

void ship_lane(lane_set& s, std::size_t index) noexcept {
  if (!s.listed[index]) return;
  flush_lane(s, index);
  s.listed[index] = 0;
  s.open.erase(std::find(s.open.begin(), s.open.end(), index));
}

void ship_open_lanes(lane_set& s) noexcept {
  for (std::size_t index : s.open) {
    flush_lane(s, index);
    s.listed[index] = 0;
  }
  s.open.clear();
}

// A thread's lanes are those of the node it is bound to (bind_thread_to_node forgets them).
// Admission functions, which act for another node on the delivering thread, never send
// through channels, so the lanes need no check against the current node.
[[gnu::noinline]] lane* lane_to(node_id dest, lane_order order) noexcept {
  thread_lanes* s = tl_lanes;
  if (!s || dest >= s->destinations) return nullptr;
  return &s->lanes[s->index_of(dest, order)];
}

void append_record(node_id dest, lane_order order, std::uint32_t handler, std::uint64_t function,
                   const void* record, std::size_t size, bool length_prefixed) {
  node_runtime& n = sending_node("roam::channel");
  if (dest >= n.size())
    throw usage_error("a channel message for node " + std::to_string(dest) + " but the job has " +
                      std::to_string(n.size()) + " nodes");
  const std::size_t need = size + (length_prefixed ? sizeof(std::uint32_t) : 0);
  if (need > std::numeric_limits<std::uint32_t>::max() - sizeof(group_header) - sizeof(node_id))
    throw usage_error("a channel message of " + std::to_string(size) +
                      " bytes exceeds the 4 GiB limit of a record");
  const std::uint32_t kind =
      length_prefixed ? length_prefixed_records : static_cast<std::uint32_t>(size);
  // Before the lanes are touched: a wait ships this thread's open bundles.
  hold_back_application_thread(n, dest);
  thread_lanes* s = current_node() == &n ? lanes_of_this_thread(n) : nullptr;
  if (!s && routed_elsewhere(n, dest)) {
    // No lanes, in a routed job: the path the node's direct messages to `dest` take.
    relay_own_record(n, dest, order, handler, function, kind, need,
                     [&](std::byte* at) { put_record(at, record, size, length_prefixed); });
    return;
  }
  if (!s) {
    // No lanes (aggregation off, a thread of the application): a bundle of one record,
    // straight to its node. Serial 0: a stream of its own per node for all threads without
    // lanes (each such message is a bundle of one, shipped at once).
    message_ptr m = open_bundle(n, dest, sizeof(group_header) + need, order, 0);
    group_header g;
    g.handler = handler;
    g.count = 1;
    g.bytes = static_cast<std::uint32_t>(need);
    g.target = dest;
    g.function = function;
    g.origin = n.id();
    g.record = kind;
    g.stream = 0;  // the stream of every thread without lanes
    std::memcpy(m->payload(), &g, sizeof g);
    put_record(m->payload() + sizeof g, record, size, length_prefixed);
    m->header.payload_size = sizeof g + need;
    post_counted(n, std::move(m));
    return;
  }
  const group_key key{handler, function, s->routed() ? per_record_target : dest,
                      n.id(),  kind,     order == lane_order::ordered ? s->serial : 0};
  const node_id to = s->routed() ? s->grid.next_hop(n.id(), dest) : dest;
  std::byte* at =
      make_room(*s, s->index_of(dest, order), to, order, key, s->lanes[0].target_bytes + need);
  if (s->routed()) {
    std::memcpy(at, &dest, sizeof dest);
    at += sizeof dest;
  }
  put_record(at, record, size, length_prefixed);
}

bool carry_through_lanes(node_runtime& from, message_ptr& m) {
  const node_id dest = m->header.dest;
  thread_lanes* s = current_node() == &from ? lanes_of_this_thread(from) : nullptr;
  if (!s || !s->routed()) return false;
  const node_id to = s->grid.next_hop(from.id(), dest);
  if (to == dest) return false;  // a node of its row or column: the records' path too
  const std::size_t index = s->index_of(dest, lane_order::ordered);
  const std::size_t bytes = carried_record_bytes(*m);
  const group_key key{id_of(carried_message_handler), 0,        per_record_target, from.id(),
                      length_prefixed_records,        s->serial};
  std::byte* at = make_room(*s, index, to, lane_order::ordered, key, sizeof(node_id) + bytes, 1,
                            /*alone=*/true);
  std::memcpy(at, &dest, sizeof dest);
  write_carried_record(at + sizeof dest, *m);
  ship_lane(*s, index);  // a direct message does not wait in a buffer
  m.reset();
  return true;
}

std::size_t next_bundle_room(node_id dest, lane_order order) noexcept {
  const thread_lanes* s = tl_lanes;
  if (!s || dest >= s->destinations) return 0;
  return s->room(s->lanes[s->index_of(dest, order)].growth);
}

bool is_bundle_handler(std::uint32_t id) noexcept {
  return id == ordered_bundle_handler.id || id == unordered_bundle_handler.id;
}

std::size_t record_target_bytes() noexcept {
  const thread_lanes* s = tl_lanes;
  return s && s->routed() ? sizeof(node_id) : 0;
}

std::size_t thread_lane_count() noexcept { return tl_lanes ? tl_lanes->lanes.size() : 0; }

void flush_thread_lanes() noexcept {
  thread_lanes* s = tl_lanes;
  if (!s || s->open.empty()) return;
  ship_open_lanes(*s);
}

void flush_ordered_lane(node_runtime& from, node_id dest) noexcept {
  thread_lanes* s = tl_lanes;
  if (!s || s->open.empty() || s->node != &from || dest >= s->destinations) return;
  ship_lane(*s, s->index_of(dest, lane_order::ordered));
}

void forget_thread_lanes() noexcept { tl_lanes = nullptr; }

void release_thread_lanes(node_runtime& n) noexcept {
  std::lock_guard guard(n.lanes_lock);
  for (auto& s : n.thread_lanes_list)
    for (lane& l : s->lanes)
      if (l.bundle) message_deleter{}(l.bundle);
  n.thread_lanes_list.clear();
  for (auto* relays : {&n.relays, &n.own_relays}) {
    if (!*relays) continue;
    for (lane& l : (*relays)->lanes)
      if (l.bundle) message_deleter{}(l.bundle);
    for (message* m : (*relays)->shipped) message_deleter{}(m);
    relays->reset();
  }
  for (auto& [key, stream] : n.streams.streams)
    for (message* m : stream.held) message_deleter{}(m);
  n.streams.streams.clear();
  n.streams.held_bundles.store(0, std::memory_order_relaxed);
  (void)bundles_registered;
}

}  // namespace roam::detail
