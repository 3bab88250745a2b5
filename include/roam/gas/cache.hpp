// roam — the software cache of remote global memory (PPL's), with phase-based coherence.
//
//   auto cells = roam::gas::allocate<cell>(owner, n, roam::gas::cache_policy::lru).get();
//   cell c = roam::gas::get(cells + i).get();   // fetched once, then served from the cache
//   ...
//   roam::gas::end_phase();                     // collective: every node's cache forgotten
//
// What is cached: an allocation made with a policy other than none (allocate, gvar,
// distributed_array take one; it travels in the pointer). Entries are objects, not bytes
// (PPL): a get of `count` elements at `p` caches exactly those, under (p, count); another
// get hits only with the same pointer and count. Memory the calling thread reads directly
// (nodes of its process, unless --roam-gas-path am) is never cached: a copy would only go
// stale. A cached copy is served without checking the allocation: free memory that other
// nodes cache only before an end_phase(). Only get, lget and rget use the cache, on contiguous
// ranges; put, strided, indexed and atomic operations neither read nor update it.
//
// Coherence: none between nodes. A cached copy is the value at its fetch; later puts (from
// any node, this one included) are not seen through the cache until the entry is refetched
// (rget) or forgotten (invalidate, end_phase). Programs that write cached memory do so in
// phases: write, wait for the puts, end_phase(), read.
//
// Each node has its own cache of --roam-gas-cache-bytes (default 64 MiB), in
// --roam-gas-cache-shards shards (default 16), each with its own lock (no global lock on
// a hit) and its own least-recently-used order; concurrent misses of one entry fetch once.
#pragma once

#include <roam/gas/detail/operations.hpp>

#include <cstdint>
#include <memory>
#include <type_traits>

namespace roam::gas {

/// How an allocation's remote copies are cached (chosen when it is allocated).
enum class cache_policy : std::uint8_t {
  none = 0,  ///< every get fetches
  keep = 1,  ///< cached until invalidated; never evicted (a fetch that does not fit is not kept)
  lru = 2,   ///< cached; the least recently used entries of a shard make room for new ones
};

/// The cached copy of `count` elements at `src` (cached by an earlier get or rget of the same
/// pointer and count) into `dest`, or of one element as the result, without communication.
/// Throws roam::memory_error when there is none (never fetched, evicted, or invalidated
/// since; an allocation without a cache policy never has one). Memory the calling thread
/// reads directly is read where it is.
///@{
template <class T>
void lget(const global_ptr<T>& src, std::remove_const_t<T>* dest, std::size_t count) {
  detail::cached_get(detail::ref_of(src), detail::ptr_access::offset(src), count * sizeof(T),
                     reinterpret_cast<std::byte*>(dest), detail::cache_read::cached_only)
      .get();
}
template <class T>
std::remove_const_t<T> lget(const global_ptr<T>& src) {
  std::remove_const_t<T> value;
  lget(src, &value, 1);
  return value;
}
///@}

/// Fetches `count` elements at `src` into `dest` (or one element, as the future's value)
/// whatever the cache holds, and updates the cached copy (on an allocation with a cache
/// policy).
///@{
template <class T>
[[nodiscard]] future<void> rget(const global_ptr<T>& src, std::remove_const_t<T>* dest,
                                std::size_t count) {
  return detail::cached_get(detail::ref_of(src), detail::ptr_access::offset(src), count * sizeof(T),
                            reinterpret_cast<std::byte*>(dest), detail::cache_read::refetch);
}
template <class T>
[[nodiscard]] future<std::remove_const_t<T>> rget(const global_ptr<T>& src) {
  auto value = std::make_shared<std::remove_const_t<T>>();
  return rget(src, value.get(), 1).then([value] { return *value; });
}
///@}

/// Forgets every entry of the calling node's cache. Operations in flight complete, and what
/// they fetch is not kept.
void invalidate();
/// The end of a phase: every node (application thread, collectively) waits for the others to
/// reach it, then forgets its cache. Wait for the phase's puts before calling it.
void end_phase();

/// What the calling node's cache did since roam::run started.
struct cache_statistics {
  std::uint64_t hits = 0;           ///< gets and lgets served by the cache
  std::uint64_t misses = 0;         ///< gets that fetched (rgets included)
  std::uint64_t joined = 0;         ///< misses that waited for a fetch of the same entry in flight
  std::uint64_t evictions = 0;      ///< entries dropped to make room (lru)
  std::uint64_t refused = 0;        ///< fetched entries not kept: they did not fit
  std::uint64_t bytes = 0;          ///< held now
  std::uint64_t fetched_bytes = 0;  ///< fetched by its misses
};
/// The calling node's cache statistics (a snapshot; any thread inside roam::run).
cache_statistics node_cache_statistics();

}  // namespace roam::gas
