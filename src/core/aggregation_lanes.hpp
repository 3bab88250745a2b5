// The aggregation lanes of one thread, and what the node runtime calls of them.
#pragma once

#include <roam/core/detail/aggregation.hpp>
#include "route_grid.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace roam::detail {

/// The lanes of one sender: a thread's (thread_lanes) or, in a routed job, those through
/// which a node relays records for others (relay_lanes).
struct lane_set {
  node_runtime* node = nullptr;
  std::uint32_t serial = 0;     ///< names the ordered stream of this set's bundles
  std::size_t block = 0;        ///< bytes of a bundle's block (config aggregate_bytes)
  std::uint8_t max_growth = 0;  ///< log2 of config aggregate_growth
  bool by_slot = false;         ///< lanes are the grid slots of `node`, not every node
  route_grid grid;              ///< the job's grid (by_slot)
  node_id self = 0;             ///< `node`'s id
  /// Where shipped bundles go when not straight to the transport (relay lanes: see there).
  std::vector<message*>* outbox = nullptr;
  /// Bytes of records in a bundle of a lane at `growth`: its block fills a size class.
  std::size_t room(unsigned growth) const noexcept { return (block << growth) - sizeof(message); }
  /// The lane for records to `dest`: index 2 * (slot or dest) + order.
  std::size_t index_of(node_id dest, lane_order order) const noexcept {
    return 2 * (by_slot ? grid.slot(self, dest) : std::size_t{dest}) + static_cast<unsigned>(order);
  }
  std::vector<lane> lanes;           ///< see index_of
  std::vector<std::size_t> open;     ///< indices of lanes that may hold a bundle
  std::vector<std::uint8_t> listed;  ///< whether a lane's index is in `open`
};

/// One thread's lanes on one node: two per destination (ordered, unordered), or per grid
/// slot when the job routes; created on the thread's first channel message and owned by
/// the node (freed with it).
struct thread_lanes : lane_set {
  node_id destinations = 0;  ///< nodes of the job
  /// Routed (by_slot): records name their destination and go to next_hop().
  bool routed() const noexcept { return by_slot; }
};

/// The lanes through which a node of a routed job relays records (routing.cpp): one
/// ordered and one unordered per node of its row and column, shared by the threads that
/// admit arrivals, so records from every sender of its row travel on together. A second
/// set of the same shape carries the node's own traffic that takes a relay (threads
/// without lanes, admission functions): see `for_others`.
struct relay_lanes : lane_set {
  explicit relay_lanes(bool relays_for_others) : for_others(relays_for_others) {
    outbox = &shipped;
  }
  /// Bundles of records relayed for other nodes, which the transport counts while they
  /// wait (message::relayed). The node's own first steps are not: a relay holding its
  /// senders' credit until its own traffic leaves could wait on a row-mate that does the
  /// same (ADR 43).
  const bool for_others;
  std::mutex lock;            ///< guards everything here
  bool flush_queued = false;  ///< a flush of the open lanes waits in the node's queue
  /// Bundles shipped from the lanes, not yet handed to the transport: sending may deliver
  /// arrivals on the sending thread, whose admission relays through these lanes again, so
  /// nothing is sent under `lock`. One thread at a time (`sending`) sends them, in order.
  std::vector<message*> shipped;
  bool sending = false;
};

/// The serial of relay lanes' ordered streams (a thread's serials count from 1).
inline constexpr std::uint32_t relay_serial = ~0u;

/// What a group of a lane is: records of one channel (handler, function), for one target
/// (or per_record_target), from one stream of one origin, of one size (or length-prefixed).
struct group_key {
  std::uint32_t handler = 0;
  std::uint64_t function = 0;
  std::uint32_t target = 0;
  node_id origin = 0;
  std::uint32_t record = 0;
  std::uint32_t stream = 0;
};

/// Room for `bytes` more bytes of `records` records (one by default) of `key` in lane `index` of
/// `s`, whose bundles go to `to`: ships the lane's bundle first when the record does not fit, opens
/// a bundle or a group as needed, and counts the record. Returns where to write its bytes. `alone`:
/// the caller ships the lane right after, so a bundle opened for it holds just this record (a full
/// block each would make every carried message cost a block while it waits).
std::byte* make_room(lane_set& s, std::size_t index, node_id to, lane_order order,
                     const group_key& key, std::size_t bytes, std::uint32_t records = 1,
                     bool alone = false);
/// Ships lane `index`'s open bundle (if any) and takes the lane off `s.open`.
void ship_lane(lane_set& s, std::size_t index) noexcept;
/// Ships every open bundle of `s`.
void ship_open_lanes(lane_set& s) noexcept;
/// Fits an empty lane set to `node`: its sizes from the settings, its lanes (by slot when
/// `by_slot`), and room in `open` for every lane.
void shape_lane_set(lane_set& s, node_runtime& node, bool by_slot);

/// The receiving side of ordered streams: bundles of one sender thread's ordered lane run
/// one after another. A stream is keyed by (source node, sender serial).
struct ordered_streams {
  struct stream {
    bool busy = false;          ///< a bundle of it is queued or running
    std::deque<message*> held;  ///< bundles that arrived meanwhile, in order
  };
  std::mutex lock;
  std::unordered_map<std::uint64_t, stream> streams;
  /// Bundles held in all streams: they wait at this node as queued arrivals do, and flow
  /// control counts them (process_runtime::inbox_full, hold_back_application_thread).
  std::atomic<std::size_t> held_bundles{0};
};

/// Whether `id` is one of the two bundle handlers.
bool is_bundle_handler(std::uint32_t id) noexcept;

/// Admission of an ordered bundle into its stream (source node, sender serial): true when
/// an earlier bundle of the stream is queued or running, and this one is held until it ends;
/// false when it may run now (the caller queues it).
bool wait_for_stream_turn(node_runtime& node, message_ptr& m);

/// Ships the calling thread's open ordered bundle to `dest` (if it acts for `from` and has
/// one): a direct message from this thread must not overtake it.
void flush_ordered_lane(node_runtime& from, node_id dest) noexcept;
/// In a routed job, a direct message (`m`, not a system message, not a broadcast) from the
/// calling thread to a node outside its row and column travels as a record of the thread's
/// ordered lane toward it, after what the thread sent that way, and ships at once: it keeps
/// its place among them on their longer path. Returns true when it took `m`.
bool carry_through_lanes(node_runtime& from, message_ptr& m);
/// The calling thread no longer uses its lanes (it changes node or leaves).
void forget_thread_lanes() noexcept;
/// Frees every lane of `n` (its threads have stopped).
void release_thread_lanes(node_runtime& n) noexcept;

}  // namespace roam::detail
