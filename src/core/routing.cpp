// Routed aggregation: relaying records at the node between a sender and its destination,
// and direct messages carried through lanes. See routing.hpp and ADR 43.
#include "routing.hpp"

#include "node_runtime.hpp"
#include "process_runtime.hpp"

#include <roam/base/error.hpp>
#include <roam/core/detail/aggregation.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace roam::detail {
namespace {

// Sends what `relays` (node's relay lanes or its own) shipped, in order, unless another
// thread is at it (it sends these too before it stops).
void send_shipped(node_runtime& node, relay_lanes& relays) noexcept {
  std::vector<message*> batch;
  std::unique_lock guard(relays.lock);
  if (relays.sending) return;
  relays.sending = true;
  while (!relays.shipped.empty()) {
    batch.swap(relays.shipped);
    guard.unlock();
    for (message* m : batch) {
      // The transport counts it while it waits (hold_credit_for_relay).
      m->relayed = relays.for_others ? 1 : 0;
      post_counted(node, message_ptr(m));
    }
    batch.clear();
    guard.lock();
  }
  relays.sending = false;
}

void flush_relay_lanes(node_runtime& node, message_ptr&) {
  {
    relay_lanes& relays = *node.relays;
    std::lock_guard guard(relays.lock);
    relays.flush_queued = false;
    ship_open_lanes(relays);
  }
  send_shipped(node, *node.relays);
}

handler_entry relay_flush_handler{"roam.core.relay.flush", flush_relay_lanes};
const bool routing_registered =
    handler_registry::add(&carried_message_handler) && handler_registry::add(&relay_flush_handler);

std::string record_problem(const message_header& h, std::uint32_t handler, const char* what) {
  const handler_entry* e = handler_registry::find(handler);
  return std::string("a routed record of handler '") +
         (e ? std::string(e->name) : "#" + std::to_string(handler)) + "' in a bundle from node " +
         std::to_string(h.source) + " to node " + std::to_string(h.dest) + " " + what +
         " (corrupt bundle)";
}

}  // namespace

// Never run: admission takes a carried message off the end of its bundle (run_bundle
// rejects one anywhere else). Registered so that its records have a handler id.
handler_entry carried_message_handler{"roam.core.carried", nullptr};

std::optional<routed_record> next_routed_record(std::span<const std::byte>& rest,
                                                std::uint32_t record_size) noexcept {
  routed_record r;
  std::uint32_t length = record_size;
  std::size_t head = sizeof r.to;
  if (rest.size() < head) return std::nullopt;
  std::memcpy(&r.to, rest.data(), sizeof r.to);
  if (record_size == length_prefixed_records) {
    if (rest.size() < head + sizeof length) return std::nullopt;
    std::memcpy(&length, rest.data() + head, sizeof length);
    head += sizeof length;
  }
  if (rest.size() - head < length) return std::nullopt;
  r.bytes = rest.subspan(sizeof r.to, head - sizeof r.to + length);
  rest = rest.subspan(head + length);
  return r;
}

bool routed_from(node_runtime& here, node_id origin, node_id source) noexcept {
  if (origin == source) return true;
  const process_runtime& p = here.process();
  return p.routes() && origin < p.size() && source != here.id() &&
         p.grid().next_hop(origin, here.id()) == source;
}

void make_relay_lanes(node_runtime& n) {
  (void)routing_registered;
  if (!n.process().routes()) return;
  for (const bool for_others : {true, false}) {
    auto& relays = for_others ? n.relays : n.own_relays;
    relays = std::make_unique<relay_lanes>(for_others);
    shape_lane_set(*relays, n, /*by_slot=*/true);
    relays->serial = relay_serial;
  }
}

namespace {

// The message a carried record holds (`data`: its length prefix and the message), checked
// against the group it came in.
message_ptr carried_message(node_runtime& here, node_id origin, const std::byte* data,
                            std::size_t bytes) {
  std::uint32_t length = 0;
  message_header h;
  if (bytes < sizeof length + sizeof h ||
      (std::memcpy(&length, data, sizeof length), length != bytes - sizeof length))
    throw deserialization_error("a carried message is truncated");
  std::memcpy(&h, data + sizeof length, sizeof h);
  // A message of a handler of its own, not a bundle (or anything else that travels only
  // inside one): it would run the routing again, for credit nobody spent.
  const handler_entry* e = handler_registry::find(h.handler);
  if (h.payload_size != length - sizeof h || h.dest != here.id() || h.source != origin ||
      (h.flags & ~all_flags) || (h.flags & (flag_system | flag_broadcast)) || !e || !e->invoke ||
      is_bundle_handler(h.handler))
    throw deserialization_error("a carried message's header (handler #" +
                                std::to_string(h.handler) + ", node " + std::to_string(h.source) +
                                " -> node " + std::to_string(h.dest) + ") does not fit its record");
  message_ptr m = message::allocate(h.payload_size);
  m->header = h;
  if (h.payload_size) std::memcpy(m->payload(), data + sizeof length + sizeof h, h.payload_size);
  return m;
}

// The records of one stream that a bundle brought for its node.
struct piece {
  node_id origin = 0;
  std::uint32_t stream = 0;
  std::vector<std::byte> bytes;
};

piece& piece_of(std::vector<piece>& pieces, node_id origin, std::uint32_t stream) {
  for (piece& p : pieces)
    if (p.origin == origin && p.stream == stream) return p;
  return pieces.emplace_back(piece{origin, stream, {}});
}

void append(std::vector<std::byte>& to, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const std::byte*>(data);
  to.insert(to.end(), p, p + bytes);
}

// Where records for this node go: a relayed bundle's piece of one stream, or, for a bundle
// straight from its sender (one stream), the bundle's own bytes: what stays is never longer
// than what it replaces, and it is written behind the reading.
struct local_sink {
  std::vector<std::byte>* buffer = nullptr;
  std::byte* start = nullptr;  ///< in place (buffer null)
  std::byte* end = nullptr;
  std::size_t size() const noexcept {
    return buffer ? buffer->size() : static_cast<std::size_t>(end - start);
  }
  std::byte* data() noexcept { return buffer ? buffer->data() : start; }
  void add(const void* data, std::size_t bytes) {
    if (buffer) {
      append(*buffer, data, bytes);
    } else {
      std::memmove(end, data, bytes);
      end += bytes;
    }
  }
};

}  // namespace

namespace {

// Appends `bytes` bytes (from `write`) as one record of `key` to `from`'s own relay lane
// toward `dest`, and ships the lane: what a thread without lanes of its own sends, and what
// an admission function sends, takes the path of `from`'s other traffic to `dest`. (One
// stream, origin `from` and serial 0, which only these lanes carry: apart from the relay
// lanes, its order is still its own.)
template <class Write>
void send_through_relays(node_runtime& from, node_id dest, lane_order order, const group_key& key,
                         std::size_t bytes, Write write) {
  relay_lanes& own = *from.own_relays;
  {
    std::lock_guard guard(own.lock);
    const std::size_t index = own.index_of(dest, order);
    write(make_room(own, index, from.process().grid().next_hop(from.id(), dest), order, key, bytes,
                    1, /*alone=*/true));
    ship_lane(own, index);
  }
  send_shipped(from, own);
}

}  // namespace

bool routed_elsewhere(node_runtime& from, node_id dest) noexcept {
  return from.relays && from.process().grid().next_hop(from.id(), dest) != dest;
}

void write_carried_record(std::byte* at, const message& m) noexcept {
  const auto length = static_cast<std::uint32_t>(m.wire_size());  // post() checked the size
  std::memcpy(at, &length, sizeof length);
  std::memcpy(at + sizeof length, &m.header, m.wire_size());  // header and payload: one block
}

void carry_through_relays(node_runtime& from, message_ptr& m) {
  send_through_relays(from, m->header.dest, lane_order::ordered,
                      group_key{id_of(carried_message_handler), 0, m->header.dest, from.id(),
                                length_prefixed_records, 0},
                      carried_record_bytes(*m),
                      [&](std::byte* at) { write_carried_record(at, *m); });
  m.reset();
}

void relay_own_record(node_runtime& from, node_id dest, lane_order order, std::uint32_t handler,
                      std::uint64_t function, std::uint32_t record_kind, std::size_t bytes,
                      const std::function<void(std::byte*)>& write) {
  send_through_relays(from, dest, order,
                      group_key{handler, function, dest, from.id(), record_kind, 0}, bytes, write);
}

bool admit_routed_bundle(node_runtime& here, message_ptr& m, lane_order order) {
  const message_header h = m->header;
  const bool ordered = order == lane_order::ordered;
  group_header g;
  if (!here.relays || h.payload_size < sizeof g) return false;
  std::memcpy(&g, m->payload(), sizeof g);
  const bool relayed_here = h.reply_to == relay_serial;
  // A plain bundle straight from its sender (a thread without lanes, to a node of its row
  // or column): it runs as it is (run_bundle checks it).
  if (g.target != per_record_target && !relayed_here) return false;

  const route_grid& grid = here.process().grid();
  const node_id self = here.id();
  const std::uint32_t carried = id_of(carried_message_handler);
  const std::uint32_t sender_stream = ordered ? static_cast<std::uint32_t>(h.reply_to) : 0;
  std::vector<piece> pieces;
  local_sink in_place{nullptr, m->payload(), m->payload()};
  local_sink a_piece;
  // The sink of the records for this node of (origin, stream): valid for one group.
  auto sink_of = [&](node_id origin, std::uint32_t stream) -> local_sink& {
    if (!relayed_here) return in_place;
    a_piece = local_sink{&piece_of(pieces, origin, stream).bytes};
    return a_piece;
  };
  message_ptr carried_here;
  bool relayed_any = false;            // took the relay lanes' lock
  std::uint64_t first_step_bytes = 0;  // relayed records that came straight from their sender
  {
    relay_lanes& relays = *here.relays;
    bool relayed = false;
    // Taken at the first record to relay, and held to the bundle's end: its records stay
    // together and in order in the relay lanes. (Nothing is sent under it: send_shipped.)
    std::unique_lock<std::mutex> guard(relays.lock, std::defer_lock);
    const std::byte* p = m->payload();
    std::size_t left = h.payload_size;
    while (left > 0) {
      if (left < sizeof g) throw deserialization_error("a bundle ends inside a group header");
      std::memcpy(&g, p, sizeof g);
      if (g.bytes > left - sizeof g || g.reserved != 0)
        throw deserialization_error(record_problem(h, g.handler, "overruns its bundle"));
      if (g.target != per_record_target && g.target != self) {
        // A group its origin sent through its own relay lanes (a thread without lanes, an
        // admission function): on to its node, as it is.
        if (g.origin != h.source || g.target >= grid.nodes ||
            grid.next_hop(g.origin, g.target) != self)
          throw deserialization_error(record_problem(
              h, g.handler,
              ("is for node " + std::to_string(g.target) + ", not reached this way").c_str()));
        if (!guard.owns_lock()) guard.lock();
        const std::size_t index = relays.index_of(g.target, order);
        std::memcpy(
            make_room(relays, index, g.target, order,
                      group_key{g.handler, g.function, g.target, g.origin, g.record, g.stream},
                      g.bytes, g.count, g.handler == carried),
            p + sizeof g, g.bytes);
        if (g.handler == carried)
          ship_lane(relays, index);  // a direct message goes on at once, last in its bundle
        else
          relayed = true;
        p += sizeof g + g.bytes;
        left -= sizeof g + g.bytes;
        continue;
      }
      if (g.target == self) {
        // Records relayed here by a node of their path (or sent here by the bundle's
        // sender), each stream's apart: they run in their own stream's order.
        const bool fits = relayed_here
                              ? g.origin != h.source && routed_from(here, g.origin, h.source) &&
                                    g.stream != relay_serial
                              : g.origin == h.source && g.stream == sender_stream;
        if (!fits)
          throw deserialization_error(record_problem(h, g.handler, "cannot come this way"));
        if (g.handler == carried && relayed_here) {
          if (g.count != 1 || left != sizeof g + g.bytes)
            throw deserialization_error(
                "a carried message that is not the last record of its bundle (corrupt bundle)");
          carried_here = carried_message(here, g.origin, p + sizeof g, g.bytes);
        } else {
          (ordered ? sink_of(g.origin, g.stream) : sink_of(h.source, 0)).add(p, sizeof g + g.bytes);
        }
        p += sizeof g + g.bytes;
        left -= sizeof g + g.bytes;
        continue;
      }
      if (g.origin != h.source || g.stream != sender_stream)
        throw deserialization_error(record_problem(h, g.handler, "claims another origin"));
      p += sizeof g;
      left -= sizeof g;
      const std::byte* const end = p + g.bytes;
      local_sink* mine = nullptr;  // this node's records, as a plain group
      std::size_t mine_at = 0;
      group_header plain = g;
      plain.target = self;
      plain.count = 0;
      std::span<const std::byte> records(p, g.bytes);
      for (std::uint32_t i = 0; i < g.count; ++i) {
        const std::optional<routed_record> next = next_routed_record(records, g.record);
        if (!next) throw deserialization_error(record_problem(h, g.handler, "is truncated"));
        const node_id to = next->to;
        const std::size_t bytes = next->bytes.size();  // the record as it travels on
        const std::byte* record = next->bytes.data();
        p = records.data();
        // Sent here directly, or to be relayed from here: no other node of its path.
        if (to >= grid.nodes || grid.next_hop(h.source, to) != self)
          throw deserialization_error(record_problem(
              h, g.handler,
              ("is for node " + std::to_string(to) + ", not reached this way").c_str()));
        if (to == self) {
          if (g.handler == carried)  // its sender carries only what goes through another node
            throw deserialization_error(record_problem(h, g.handler, "carries a message here"));
          if (!mine) {
            mine = &sink_of(h.source, sender_stream);
            mine_at = mine->size();
            mine->add(&plain, sizeof plain);
          }
          mine->add(record, bytes);
          ++plain.count;
          continue;
        }
        if (!guard.owns_lock()) guard.lock();
        const std::size_t index = relays.index_of(to, order);
        std::memcpy(make_room(relays, index, to, order,
                              group_key{g.handler, g.function, to, g.origin, g.record, g.stream},
                              bytes, 1, g.handler == carried),
                    record, bytes);
        if (g.handler == carried)
          ship_lane(relays, index);  // a direct message goes on at once, last in its bundle
        else
          relayed = true;
        first_step_bytes += bytes;
      }
      if (p != end)
        throw deserialization_error(record_problem(h, g.handler, "has bytes after its records"));
      left -= g.bytes;
      if (mine) {
        plain.bytes = static_cast<std::uint32_t>(mine->size() - mine_at - sizeof plain);
        std::memcpy(mine->data() + mine_at, &plain, sizeof plain);
      }
    }
    // Relayed records wait for more from this node's other senders until a worker gets to
    // the flush: what arrives meanwhile travels on in the same bundles.
    if (relayed && !relays.flush_queued) {
      relays.flush_queued = true;
      here.accept_local(make_system_message(self, relay_flush_handler, nullptr, 0));
    }
    relayed_any = guard.owns_lock();  // what it put in the relay lanes goes now
  }
  if (relayed_any) send_shipped(here, *here.relays);
  // Their sender gets their credit back once they have left this process: relays push back
  // on whoever fills them. (Records relayed on their last step, and those a node sends
  // through its own relay lanes, are never held: the last step's credit always comes back.)
  if (first_step_bytes != 0 && here.process().relay_holds_credit() &&
      !here.process().local(h.source))
    here.process().net().hold_credit_for_relay(h.source, first_step_bytes);
  if (!relayed_here) {  // what stays here is the bundle itself, rewritten in place
    if (in_place.size() != 0) {
      m->header.payload_size = in_place.size();
      return false;
    }
    here.handled.fetch_add(1);  // counted when sent; relayed whole
    m.reset();
    return true;
  }
  // One bundle in, one per stream out: counted as sent before the bundle counts as handled,
  // so quiescence never sees them missing.
  here.sent.fetch_add(pieces.size());
  here.handled.fetch_add(1);
  bool first = true;
  for (piece& part : pieces) {
    message_ptr bundle = message::allocate(part.bytes.size());
    bundle->header = h;
    if (!first) bundle->header.flow = 0;  // the trace's arrow ends at one of them
    first = false;
    bundle->header.source = part.origin;
    bundle->header.reply_to = part.stream;
    bundle->header.payload_size = part.bytes.size();
    std::memcpy(bundle->payload(), part.bytes.data(), part.bytes.size());
    if (!ordered || !wait_for_stream_turn(here, bundle))
      here.queue_admitted_arrival(std::move(bundle));
  }
  // After what came before it: the place a direct message of its sender would take.
  if (carried_here) here.accept_arrival(std::move(carried_here));
  m.reset();
  return true;
}

}  // namespace roam::detail
