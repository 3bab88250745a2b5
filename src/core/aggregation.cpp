// Aggregation lanes (see include/roam/core/detail/aggregation.hpp) and the bundle handler
// that unpacks them on the receiving node.
#include "aggregation_lanes.hpp"

#include <roam/base/detail/message_text.hpp>
#include <roam/core/detail/fiber.hpp>
#include "node_runtime.hpp"
#include "process_runtime.hpp"
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
void run_bundle(node_runtime& node, message_ptr& m);
// Two handlers: bundles of ordered lanes run one after another per sender thread (their
// admission holds back a bundle while an earlier one of its stream is queued or running);
// those of unordered lanes run as soon as a worker is free, side by side.
handler_entry ordered_bundle_handler{"roam.core.bundle.ordered", run_ordered_bundle, ~0u,
                                     admit_ordered_bundle};
handler_entry unordered_bundle_handler{"roam.core.bundle.unordered", run_bundle};
const bool bundles_registered = handler_registry::add(&ordered_bundle_handler) &&
                                handler_registry::add(&unordered_bundle_handler);

std::uint64_t stream_key(const message_header& h) noexcept {
  return (static_cast<std::uint64_t>(h.source) << 32) | (h.reply_to & 0xffffffffu);
}

bool admit_ordered_bundle(node_runtime& node, message_ptr& m) {
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

void run_bundle(node_runtime& node, message_ptr& m) {
  const message_header h = m->header;
  const std::byte* p = m->payload();
  std::size_t left = h.payload_size;
  while (left > 0) {
    group_header g;
    if (left < sizeof g)
      throw deserialization_error("a bundle ends with " + std::to_string(left) +
                                  " bytes, too few for a group header");
    std::memcpy(&g, p, sizeof g);
    p += sizeof g;
    left -= sizeof g;
    if (g.bytes > left || g.reserved != 0)
      throw deserialization_error("a bundle group of " + handler_label(g.handler) + " announces " +
                                  std::to_string(g.bytes) + " bytes but " + std::to_string(left) +
                                  " remain (corrupt bundle)");
    const handler_entry* e = handler_registry::find(g.handler);
    if (!e)
      fatal("unknown handler id " + std::to_string(g.handler) + " in a bundle from node " +
            std::to_string(h.source) + " to node " + std::to_string(h.dest) + " (this binary has " +
            std::to_string(handler_registry::size()) + " handlers)");
    if (e->batch) {
      set_running_handler(g.handler);  // a stack overflow names it too
      // Errors name the channel's handler, not the bundle that carried it.
      const auto name = [&] { return handler_display_name(g.handler, g.function); };
      try {
        e->batch(node, h.source, p, g.bytes, g.count, g.function);
      } catch (const deserialization_error& ex) {
        fatal("malformed records for handler '" + name() + "' in a bundle from node " +
              std::to_string(h.source) + ": " + exception_text(ex));
      } catch (const std::exception& ex) {
        fatal("handler '" + name() + "' (a channel message from node " + std::to_string(h.source) +
              ") threw " + type_name_of(typeid(ex)) + ": " + ex.what());
      } catch (...) {
        fatal("handler '" + name() + "' (a channel message from node " + std::to_string(h.source) +
              ") threw an exception not derived from std::exception");
      }
    } else {
      fatal("handler '" + std::string(e->name) + "' in a bundle from node " +
            std::to_string(h.source) +
            " is not a channel handler (corrupt bundle, or a "
            "different binary?)");
    }
    p += g.bytes;
    left -= g.bytes;
  }
}

void close_group(lane& l) noexcept {
  if (l.handler == ~0u) return;
  group_header g;
  g.handler = l.handler;
  g.count = l.count;
  g.bytes = static_cast<std::uint32_t>(l.cursor - (l.group + sizeof(group_header)));
  g.function = l.function;
  std::memcpy(l.group, &g, sizeof g);
  l.handler = ~0u;
  l.count = 0;
  l.function = 0;
}

// Ships the lane's bundle; the lane stays listed in `open` (callers unlist it). `full`:
// the next record did not fit, so the thread is streaming and the next bundle doubles;
// otherwise the thread idled, waited or flushed, and the next bundle is sized to hold all
// it sent to this lane since it last did (one message for that much next time).
void flush_lane(thread_lanes& s, std::size_t index, bool full = false) noexcept {
  lane& l = s.lanes[index];
  if (!l.bundle) return;
  close_group(l);
  message_ptr m(l.bundle);
  const auto used = static_cast<std::size_t>(l.cursor - m->payload());
  m->header.payload_size = used;
  const std::size_t burst =
      std::min<std::size_t>(l.burst + used, std::numeric_limits<std::uint32_t>::max());
  lane next;
  if (full) {
    next.burst = static_cast<std::uint32_t>(burst);
    next.growth = static_cast<std::uint8_t>(std::min<unsigned>(l.growth + 1u, s.max_growth));
  } else {
    while (next.growth < s.max_growth && s.room(next.growth) < burst) ++next.growth;
  }
  l = next;
  post_counted(*s.node, std::move(m));
}

message_ptr open_bundle(node_runtime& n, node_id dest, std::size_t room, lane_order order,
                        std::uint32_t serial) {
  message_ptr m = message::allocate(room);
  const bool ordered = order == lane_order::ordered;
  m->header.handler = id_of(ordered ? ordered_bundle_handler : unordered_bundle_handler);
  m->header.dest = dest;
  m->header.flags = 0;
  m->header.reply_to = ordered ? serial : 0;  // the stream; bundles never want replies
  n.sent.fetch_add(1);                        // counted from now on, so quiescence waits for it
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
  s->node = &n;
  // The whole block (message object, header, records) takes the configured bytes, so
  // that it fills its size class exactly.
  s->block = std::max<std::size_t>(n.process().settings().aggregate_bytes,
                                   2 * sizeof(message) + sizeof(group_header));
  while ((2u << s->max_growth) <= n.process().settings().aggregate_growth) ++s->max_growth;
  s->destinations = n.size();
  s->lanes.resize(2 * static_cast<std::size_t>(n.size()));
  s->listed.resize(s->lanes.size());
  // Room for every lane up front: listing an opened (already counted) bundle must not
  // fail, or it would never be shipped and quiescence never come.
  s->open.reserve(s->lanes.size());
  tl_lanes = s.get();
  std::lock_guard guard(n.lanes_lock);
  s->serial = static_cast<std::uint32_t>(n.thread_lanes_list.size() + 1);
  n.thread_lanes_list.push_back(std::move(s));
  return tl_lanes;
}

}  // namespace

// A thread's lanes are those of the node it is bound to (bind_thread_to_node forgets them).
// Admission functions, which act for another node on the delivering thread, never send
// through channels, so the lanes need no check against the current node.
[[gnu::noinline]] lane* lane_to(node_id dest, lane_order order) noexcept {
  thread_lanes* s = tl_lanes;
  if (!s || dest >= s->destinations) return nullptr;
  return &s->lanes[2 * static_cast<std::size_t>(dest) + static_cast<unsigned>(order)];
}

void append_record(node_id dest, lane_order order, std::uint32_t handler, std::uint64_t function,
                   const void* record, std::size_t size, bool length_prefixed) {
  node_runtime& n = sending_node("roam::channel");
  if (dest >= n.size())
    throw usage_error("a channel message for node " + std::to_string(dest) + " but the job has " +
                      std::to_string(n.size()) + " nodes");
  const std::size_t need = size + (length_prefixed ? sizeof(std::uint32_t) : 0);
  if (need > std::numeric_limits<std::uint32_t>::max() - sizeof(group_header))
    throw usage_error("a channel message of " + std::to_string(size) +
                      " bytes exceeds the 4 GiB limit of a record");
  // Before the lanes are touched: a wait ships this thread's open bundles.
  hold_back_application_thread(n, dest);
  thread_lanes* s = current_node() == &n ? lanes_of_this_thread(n) : nullptr;
  if (!s) {
    // No lanes (aggregation off, a thread of the application): a bundle of one record.
    // Serial 0: a stream of its own per node for all threads without lanes (each such
    // message is a bundle of one, shipped at once).
    message_ptr m = open_bundle(n, dest, sizeof(group_header) + need, order, 0);
    group_header g;
    g.handler = handler;
    g.count = 1;
    g.bytes = static_cast<std::uint32_t>(need);
    g.function = function;
    std::memcpy(m->payload(), &g, sizeof g);
    put_record(m->payload() + sizeof g, record, size, length_prefixed);
    m->header.payload_size = sizeof g + need;
    post_counted(n, std::move(m));
    return;
  }
  const std::size_t index = 2 * static_cast<std::size_t>(dest) + static_cast<unsigned>(order);
  lane* l = &s->lanes[index];
  const bool same_group = l->handler == handler && l->function == function;
  const std::size_t wanted = need + (same_group ? 0 : sizeof(group_header));
  if (l->bundle && static_cast<std::size_t>(l->limit - l->cursor) < wanted)
    flush_lane(*s, index, /*full=*/true);
  if (!l->bundle) {
    const std::size_t room = std::max<std::size_t>(s->room(l->growth), sizeof(group_header) + need);
    message_ptr m = open_bundle(n, dest, room, order, s->serial);
    l->cursor = m->payload();
    l->limit = m->payload() + room;
    l->bundle = m.release();
    if (!s->listed[index]) {
      s->listed[index] = 1;
      s->open.push_back(index);
    }
  }
  if (l->handler != handler || l->function != function) {
    close_group(*l);
    l->group = l->cursor;
    l->cursor += sizeof(group_header);
    l->handler = handler;
    l->function = function;
  }
  l->cursor = put_record(l->cursor, record, size, length_prefixed);
  ++l->count;
}

std::size_t next_bundle_room(node_id dest, lane_order order) noexcept {
  const thread_lanes* s = tl_lanes;
  if (!s || dest >= s->destinations) return 0;
  return s->room(
      s->lanes[2 * static_cast<std::size_t>(dest) + static_cast<unsigned>(order)].growth);
}

void flush_thread_lanes() noexcept {
  thread_lanes* s = tl_lanes;
  if (!s || s->open.empty()) return;
  for (std::size_t index : s->open) {
    flush_lane(*s, index);
    s->listed[index] = 0;
  }
  s->open.clear();
}

void flush_ordered_lane(node_runtime& from, node_id dest) noexcept {
  thread_lanes* s = tl_lanes;
  if (!s || s->open.empty() || s->node != &from || dest >= s->destinations) return;
  const std::size_t index = 2 * static_cast<std::size_t>(dest);
  if (!s->lanes[index].bundle) return;
  flush_lane(*s, index);
  s->listed[index] = 0;
  s->open.erase(std::find(s->open.begin(), s->open.end(), index));
}

void forget_thread_lanes() noexcept { tl_lanes = nullptr; }

void release_thread_lanes(node_runtime& n) noexcept {
  std::lock_guard guard(n.lanes_lock);
  for (auto& s : n.thread_lanes_list)
    for (lane& l : s->lanes)
      if (l.bundle) message_deleter{}(l.bundle);
  n.thread_lanes_list.clear();
  for (auto& [key, stream] : n.streams.streams)
    for (message* m : stream.held) message_deleter{}(m);
  n.streams.streams.clear();
  n.streams.held_bundles.store(0, std::memory_order_relaxed);
  (void)bundles_registered;
}

}  // namespace roam::detail
