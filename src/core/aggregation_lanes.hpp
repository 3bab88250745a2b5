// The aggregation lanes of one thread, and what the node runtime calls of them.
#pragma once

#include <roam/core/detail/aggregation.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace roam::detail {

/// One thread's lanes on one node: two per destination (ordered, unordered), created on
/// the thread's first channel message and owned by the node (freed with it).
struct thread_lanes {
  node_runtime* node = nullptr;
  std::uint32_t serial = 0;     ///< names this thread's ordered streams (from 1)
  node_id destinations = 0;     ///< nodes of the job
  std::size_t block = 0;        ///< bytes of a bundle's block (config aggregate_bytes)
  std::uint8_t max_growth = 0;  ///< log2 of config aggregate_growth
  /// Bytes of records in a bundle of a lane at `growth`: its block fills a size class.
  std::size_t room(unsigned growth) const noexcept { return (block << growth) - sizeof(message); }
  std::vector<lane> lanes;           ///< index 2 * dest + order
  std::vector<std::size_t> open;     ///< indices of lanes that may hold a bundle
  std::vector<std::uint8_t> listed;  ///< whether a lane's index is in `open`
};

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

/// Ships the calling thread's open ordered bundle to `dest` (if it acts for `from` and has
/// one): a direct message from this thread must not overtake it.
void flush_ordered_lane(node_runtime& from, node_id dest) noexcept;
/// The calling thread no longer uses its lanes (it changes node or leaves).
void forget_thread_lanes() noexcept;
/// Frees every lane of `n` (its threads have stopped).
void release_thread_lanes(node_runtime& n) noexcept;

}  // namespace roam::detail
