// One node's software cache of remote global memory (PPL's): objects keyed by pointer and
// size, sharded, each shard with its own lock and least-recently-used order.
#pragma once

#include <roam/gas/cache.hpp>
#include <roam/gas/detail/operations.hpp>
#include <roam/task/future.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace roam::gas::detail {

/// The cache of one node. Entries are the bytes of one get: (node, slot, generation, offset,
/// bytes) name them, so a reallocated slot never hits an entry of its previous allocation.
///
/// Memory: at most `capacity` bytes (data and a fixed charge per entry), split evenly among
/// the shards; `keep` entries are never evicted, so a fetch that finds its shard full of them
/// is not kept (counted as refused). Concurrent misses of one entry fetch once: the later
/// ones wait for the first fetch (counted as joined).
///
/// Threading: any thread; each shard has its own mutex (a hit takes one shard's lock, never
/// all of them). invalidate() takes each shard's lock in turn.
class node_cache {
 public:
  node_cache(std::uint64_t capacity, unsigned shards);

  struct key {
    node_id node = 0;
    std::uint32_t slot = 0;
    std::uint16_t generation = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    friend bool operator==(const key&, const key&) = default;
  };
  /// Fetches the bytes `k` names into `into`; ready when they are there.
  using fetch_function = std::function<future<void>(std::byte* into)>;

  /// Reads `k` into `dest` as `mode` asks, fetching with `fetch` on a miss (and keeping what
  /// came under `policy`). `dest` stays valid until the future is ready.
  future<void> read(const key& k, std::byte* dest, cache_read mode, cache_policy policy,
                    const fetch_function& fetch);
  /// Copies the entry `k` into `dest` and returns true (a hit), or returns false.
  bool read_hit(const key& k, std::byte* dest);
  /// Forgets every entry; fetches in flight are not kept.
  void invalidate();
  cache_statistics statistics() const;

  /// Bytes charged per entry besides its data (the entry and its bookkeeping).
  static constexpr std::uint64_t entry_overhead = 128;

 private:
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept;
  };
  struct entry {
    std::vector<std::byte> data;
    bool evictable = false;
    std::list<key>::iterator recency;  // in shard::recent, when evictable
  };
  struct waiter {
    std::byte* dest;
    promise<void> done;
  };
  struct pending {
    std::uint64_t epoch = 0;  // invalidate() calls before the fetch started
    cache_policy policy = cache_policy::none;
    std::vector<waiter> waiters;
  };
  struct shard {
    std::mutex lock;
    std::unordered_map<key, entry, key_hash> entries;
    std::list<key> recent;  // evictable entries, most recently used first
    std::uint64_t bytes = 0;
    std::unordered_map<key, std::shared_ptr<pending>, key_hash> fetching;  // the newest per key
  };

  shard& shard_of(const key& k) noexcept { return shards_[key_hash{}(k) % shards_.size()]; }
  /// A hit of `k` in `s` (under its lock): copied into `dest`, counted, made most recent.
  bool hit_locked(shard& s, const key& k, std::byte* dest);
  /// Keeps `data` for `k` in `s` (under its lock) if it fits after evicting what may go.
  void keep(shard& s, const key& k, std::vector<std::byte> data, cache_policy policy);
  void fetched(const key& k, const std::shared_ptr<pending>& p,
               const std::shared_ptr<std::vector<std::byte>>& data,
               const std::exception_ptr& error);

  std::uint64_t shard_capacity_;
  std::vector<shard> shards_;
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, joined_{0}, evictions_{0}, refused_{0},
      bytes_{0}, fetched_bytes_{0};
};

}  // namespace roam::gas::detail
