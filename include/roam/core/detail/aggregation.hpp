// roam — aggregation buffers: many small messages to one node travel as one bundle.
//
// Every thread of a node that sends through a channel (am/channel.hpp) gets, lazily, one
// lane per destination node and ordering kind. A lane holds an open bundle: a message of
// the runtime's bundle handler whose payload is a sequence of groups. Consecutive records
// for the same handler (and function) form one group, so the handler id is stored once and
// each record holds only the arguments (combining, STAPL-RTS §2.7). The receiver runs a
// group in one loop through the handler's batch function (handler_registry.hpp).
//
// Lanes belong to one thread and are never locked: threads do not share buffers, so the
// fast path of a record is a few loads, a compare and a copy (ADR 24 says why this beats
// buffers shared between threads).
//
// Buffers adapt to the traffic (config::aggregate_growth): a lane whose bundle fills
// before its thread idles doubles the next one, and a lane emptied by an idle moment sizes
// the next one to what the thread sent since the previous such moment. A stream of
// messages so travels in a few large bundles (fewer MPI messages, each carrying more),
// while occasional messages keep small buffers.
//
// Routing (route_grid.hpp, ADR 43): in a job of at least --roam-route-min-nodes nodes, a
// thread's lanes lead to the nodes of its row and column of a grid of the nodes, each record
// names its destination, and the node a bundle reaches relays the records for others as it
// admits the bundle, through lanes of its own (routing.hpp). A thread then keeps about
// 2 sqrt(P) lanes, and direct messages follow the records' path (so they keep their order).
//
// A bundle is counted for quiescence when it is opened, so quiescence cannot be observed
// while records wait in a lane; lanes are flushed when full, when their thread finds no
// work or waits (including a handler that suspends), on roam::flush(), and before a
// direct message from the same thread to the same node (ordered lanes only), which keeps
// every message a thread sends to one node in order.
#pragma once

#include <roam/transport/message.hpp>
#include <roam/transport/node_id.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace roam::detail {

class node_runtime;

/// How a group is laid out on the wire: this header, then `bytes` bytes of records.
struct group_header {
  std::uint32_t handler = 0;  ///< id of a channel handler
  std::uint32_t count = 0;    ///< records in the group
  std::uint32_t bytes = 0;    ///< record bytes after this header
  /// The node the records are for, or per_record_target: each record starts with its
  /// destination's 4-byte node id (routed lanes, route_grid.hpp).
  std::uint32_t target = 0;
  std::uint64_t function = 0;  ///< function token of pointer handlers, else 0
  std::uint32_t origin = 0;    ///< the node that sent the records (not the one relaying them)
  /// Bytes of each record, or length_prefixed_records: each has a 4-byte length.
  std::uint32_t record = 0;
  /// The ordered stream of `origin` the records belong to (its thread's serial), 0 for
  /// unordered records: a relayed bundle mixes several streams, and its destination keeps
  /// each one's order apart from the others.
  std::uint32_t stream = 0;
  std::uint32_t reserved = 0;  ///< 0
};
static_assert(sizeof(group_header) == 40);
inline constexpr std::uint32_t per_record_target = ~0u;
inline constexpr std::uint32_t length_prefixed_records = ~0u;

/// A group of a bundle as its bytes hold it: the header, and the record bytes after it.
struct bundle_group {
  group_header header;
  std::span<const std::byte> records;
};
/// The group at the front of `rest`, the bytes of a bundle not read yet, and moves `rest`
/// past it. Throws deserialization_error when `rest` does not hold a group header and the
/// record bytes it announces, or its reserved word is not 0. A pure function of the bytes
/// (fuzzed: fuzz/bundle.cpp); whether the group may arrive here (its target and path) and
/// its records are checked by the caller and the channel's handler.
bundle_group next_bundle_group(std::span<const std::byte>& rest);
/// A record of a routed group (target per_record_target): the node it is for, and its bytes
/// as they travel on (its length first when the group's records are length-prefixed).
struct routed_record {
  node_id to = 0;
  std::span<const std::byte> bytes;
};
/// The record at the front of `rest`, the routed group's record bytes not read yet, of
/// records `record_size` bytes long (or length_prefixed_records), and moves `rest` past it;
/// nullopt (nothing moved) when `rest` is too short for it. Pure (fuzzed: fuzz/bundle.cpp).
std::optional<routed_record> next_routed_record(std::span<const std::byte>& rest,
                                                std::uint32_t record_size) noexcept;

/// Ordered lanes keep a thread's messages to one node in order with its direct sends;
/// unordered ones are not flushed by direct sends (their records may run before or after
/// the thread's other messages).
enum class lane_order : unsigned { ordered = 0, unordered = 1 };

/// One thread's aggregation buffer to one destination (or, routed, to the next node on the
/// way to several). Touched only by its thread.
struct lane {
  // What a record touches first, together at the front: a lane is 72 bytes, so fields
  // further on often sit in the next cache line.
  std::byte* cursor = nullptr;  ///< where the next record goes (nullptr: no open bundle)
  std::byte* limit = nullptr;   ///< end of the room for records
  std::uint64_t function = 0;   ///< function token of the open group
  std::uint32_t handler = ~0u;  ///< handler of the open group (~0u: none)
  std::uint32_t count = 0;      ///< records in the open group
  /// Bytes before each record naming its destination: 4 on a routed lane, else 0.
  std::uint8_t target_bytes = 0;
  std::uint8_t growth = 0;     ///< the next bundle's block is aggregate_bytes << growth
  std::uint32_t burst = 0;     ///< record bytes shipped full since the lane last emptied
  std::byte* group = nullptr;  ///< header of the open group
  message* bundle = nullptr;   ///< the open bundle (owned)
  std::uint32_t target = 0;    ///< group_header::target of the open group
  node_id origin = 0;          ///< group_header::origin of the open group
  std::uint32_t record = 0;    ///< group_header::record of the open group
  std::uint32_t stream = 0;    ///< group_header::stream of the open group
};
static_assert(sizeof(lane) == 72);

/// The calling thread's lane to `dest` on the node it belongs to, or nullptr when the
/// thread has no lanes yet or aggregates nothing (it belongs to no node, aggregation is
/// off) or `dest` is out of range; append_record() then does the right thing.
/// Not inlined: a fiber may resume on another thread, whose lanes it must then use.
lane* lane_to(node_id dest, lane_order order) noexcept;

/// Appends a record (the slow path of reserve_fixed_record, and every variable-size
/// record): opens a bundle or a group, flushes a full bundle, or ships the record at once
/// when the calling thread has no lanes. `length_prefixed` records get a 4-byte length.
/// Throws roam::usage_error when `dest` is not a node of the job.
void append_record(node_id dest, lane_order order, std::uint32_t handler, std::uint64_t function,
                   const void* record, std::size_t size, bool length_prefixed);

/// The fast path: room for a fixed-size record that continues the open group of the
/// calling thread's lane to `dest`. Returns where to write its `Size` bytes (the record
/// is counted already: write them before anything else touches the lane), or nullptr when
/// the record must go through append_record().
template <std::size_t Size>
inline std::byte* reserve_fixed_record(node_id dest, lane_order order, std::uint32_t handler,
                                       std::uint64_t function) noexcept {
  lane* l = lane_to(dest, order);
  if (l && l->handler == handler && l->function == function &&
      static_cast<std::size_t>(l->limit - l->cursor) >= Size + l->target_bytes) {
    std::byte* at = l->cursor;
    if (l->target_bytes) {  // a routed lane: the record names its destination
      std::memcpy(at, &dest, sizeof dest);
      at += sizeof dest;
    }
    l->cursor = at + Size;
    ++l->count;
    return at;
  }
  return nullptr;
}

/// Record bytes the calling thread's next bundle to `dest` will hold (0: the thread has no
/// lanes). For tests of the buffers' growth.
std::size_t next_bundle_room(node_id dest, lane_order order) noexcept;

/// Bytes each record of the calling thread takes beyond its arguments to name its
/// destination: 4 when its job routes (its lanes lead to next hops), else 0. For tests.
std::size_t record_target_bytes() noexcept;

/// Lanes the calling thread has (0: none yet): two per destination, or per grid slot when
/// its job routes. For tests.
std::size_t thread_lane_count() noexcept;

/// Ships every open bundle of the calling thread (no-op when it has none).
void flush_thread_lanes() noexcept;

}  // namespace roam::detail
