#include "node_cache.hpp"

#include <roam/base/error.hpp>

#include <cstring>
#include <string>

namespace roam::gas::detail {

node_cache::node_cache(std::uint64_t capacity, unsigned shards)
    : shard_capacity_(capacity / (shards == 0 ? 1 : shards)), shards_(shards == 0 ? 1 : shards) {}

std::size_t node_cache::key_hash::operator()(const key& k) const noexcept {
  std::uint64_t h = (std::uint64_t{k.node} << 32 | k.slot) * 0x9e3779b97f4a7c15ull;
  h ^= (k.offset + (std::uint64_t{k.generation} << 48)) * 0xc2b2ae3d27d4eb4full;
  h ^= k.bytes * 0x165667b19e3779f9ull;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

bool node_cache::read_hit(const key& k, std::byte* dest) {
  shard& s = shard_of(k);
  std::lock_guard guard(s.lock);
  return hit_locked(s, k, dest);
}

bool node_cache::hit_locked(shard& s, const key& k, std::byte* dest) {
  const auto hit = s.entries.find(k);
  if (hit == s.entries.end()) return false;
  if (k.bytes != 0) std::memcpy(dest, hit->second.data.data(), k.bytes);
  if (hit->second.evictable) s.recent.splice(s.recent.begin(), s.recent, hit->second.recency);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

future<void> node_cache::read(const key& k, std::byte* dest, cache_read mode, cache_policy policy,
                              const fetch_function& fetch) {
  shard& s = shard_of(k);
  promise<void> done;
  future<void> result;
  std::shared_ptr<pending> mine;
  {
    std::lock_guard guard(s.lock);
    if (mode != cache_read::refetch && hit_locked(s, k, dest)) return make_ready_future();
    result = done.get_future();
    if (mode == cache_read::cached_only) {
      done.set_exception(std::make_exception_ptr(memory_error(
          "roam::gas::lget: " + std::to_string(k.bytes) + " bytes at offset " +
          std::to_string(k.offset) + " of allocation " + std::to_string(k.slot) + "." +
          std::to_string(k.generation) + " on node " + std::to_string(k.node) +
          " are not in this node's cache (never fetched by a get or rget of the same pointer "
          "and count, evicted, or invalidated since)")));
      return result;
    }
    // Join a fetch in flight only when it started after the last invalidation and the
    // caller does not ask for a fresh copy: an rget after a put, or a get after end_phase(),
    // must not receive bytes read before them.
    const std::uint64_t now = epoch_.load(std::memory_order_acquire);
    if (const auto running = s.fetching.find(k); running != s.fetching.end() &&
                                                 mode != cache_read::refetch &&
                                                 running->second->epoch == now) {
      running->second->waiters.push_back({dest, std::move(done)});
      joined_.fetch_add(1, std::memory_order_relaxed);
      return result;
    }
    mine = std::make_shared<pending>();
    mine->epoch = now;
    mine->policy = policy;
    mine->waiters.push_back({dest, std::move(done)});
    s.fetching[k] = mine;  // later misses join this one (an older fetch still completes)
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  auto data = std::make_shared<std::vector<std::byte>>(k.bytes);
  future<void> fetching;
  try {
    fetching = fetch(data->data());
  } catch (...) {
    fetched(k, mine, data, std::current_exception());
    return result;
  }
  auto state = roam::detail::release_state(std::move(fetching));
  state->on_ready([this, k, mine, data, state] {
    fetched(k, mine, data, state->has_error() ? state->error() : nullptr);
  });
  return result;
}

void node_cache::fetched(const key& k, const std::shared_ptr<pending>& p,
                         const std::shared_ptr<std::vector<std::byte>>& data,
                         const std::exception_ptr& error) {
  shard& s = shard_of(k);
  std::vector<waiter> waiters;
  {
    std::lock_guard guard(s.lock);
    if (const auto at = s.fetching.find(k); at != s.fetching.end() && at->second == p)
      s.fetching.erase(at);
    waiters = std::move(p->waiters);
    if (!error) {
      fetched_bytes_.fetch_add(k.bytes, std::memory_order_relaxed);
      if (p->epoch == epoch_.load(std::memory_order_acquire)) keep(s, k, *data, p->policy);
    }
  }
  for (waiter& w : waiters) {
    if (error) {
      w.done.set_exception(error);
      continue;
    }
    if (k.bytes != 0) std::memcpy(w.dest, data->data(), k.bytes);
    w.done.set_value();
  }
}

void node_cache::keep(shard& s, const key& k, std::vector<std::byte> data, cache_policy policy) {
  const std::uint64_t charge = k.bytes + entry_overhead;
  if (charge > shard_capacity_) {  // could never fit: leave the shard as it is
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (const auto old = s.entries.find(k); old != s.entries.end()) {  // an rget's refresh
    if (old->second.evictable) s.recent.erase(old->second.recency);
    s.bytes -= charge;
    bytes_.fetch_sub(charge, std::memory_order_relaxed);
    s.entries.erase(old);
  }
  while (s.bytes + charge > shard_capacity_ && !s.recent.empty()) {
    const auto victim = s.entries.find(s.recent.back());
    const std::uint64_t freed = victim->first.bytes + entry_overhead;
    s.bytes -= freed;
    bytes_.fetch_sub(freed, std::memory_order_relaxed);
    s.entries.erase(victim);
    s.recent.pop_back();
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  if (s.bytes + charge > shard_capacity_) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  entry& e = s.entries[k];
  e.data = std::move(data);
  e.evictable = policy == cache_policy::lru;
  if (e.evictable) e.recency = s.recent.insert(s.recent.begin(), k);
  s.bytes += charge;
  bytes_.fetch_add(charge, std::memory_order_relaxed);
}

void node_cache::invalidate() {
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  for (shard& s : shards_) {
    std::lock_guard guard(s.lock);
    bytes_.fetch_sub(s.bytes, std::memory_order_relaxed);
    s.entries.clear();
    s.recent.clear();
    s.bytes = 0;
  }
}

cache_statistics node_cache::statistics() const {
  return {hits_.load(std::memory_order_relaxed),         misses_.load(std::memory_order_relaxed),
          joined_.load(std::memory_order_relaxed),       evictions_.load(std::memory_order_relaxed),
          refused_.load(std::memory_order_relaxed),      bytes_.load(std::memory_order_relaxed),
          fetched_bytes_.load(std::memory_order_relaxed)};
}

}  // namespace roam::gas::detail
