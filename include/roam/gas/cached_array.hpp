// roam — a node's copy of a remote array, filled a block at a time on first read.
//
//   roam::gas::cached_array<cell> tree(tree_ptr, cells);   // one per node, shared by its tasks
//   const cell& c = tree[i];                               // fetched with its block once
//
// The software cache (cache.hpp) keys entries by pointer and size, so each read of an element
// costs a hash lookup under a shard's lock. An array read element by element many times by
// many tasks of a node (a remote tree walked once per body, PPL's gvec) is better served by a
// copy indexed like the array: after its block arrived, an element costs an array access.
#pragma once

#include <roam/gas/allocate.hpp>
#include <roam/gas/one_sided.hpp>
#include <roam/task/future.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace roam::gas {

/// This node's copy of `count` elements of T at `base`, fetched in blocks of `block` elements
/// the first time one of their elements is read. Memory the calling node reads directly (its
/// process's nodes) is not copied: reads go to it.
///
/// The copy is a snapshot: it is never refreshed and never written back. Build one for a
/// phase in which the array does not change (a tree built before the walks), and drop it
/// before the array is written or freed.
///
/// Threading: operator[] may be called by any thread or task of the node, concurrently; a
/// read of a block another task is fetching waits for it (a task suspends meanwhile, and
/// its worker runs other work). A fetch that fails throws its roam::memory_error to the
/// reader, and the block is fetched again by the next read. Lifetime: the references it returns
/// live as long as it does.
template <class T>
class cached_array {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::gas::cached_array holds trivially copyable values");

 public:
  /// A copy of the `count` elements at `base`, fetched `block` elements at a time; nothing
  /// is fetched yet.
  cached_array(const global_ptr<T>& base, std::size_t count, std::size_t block = 64)
      : base_(detail::ptr_access::make<T>(
            base.where(), detail::ptr_access::slot(base), detail::ptr_access::generation(base),
            detail::ptr_access::offset(base))),  // not through the cache
        count_(count),
        block_(block == 0 ? 1 : block),
        direct_(count == 0 ? nullptr : gas::local(base_, count)) {
    if (direct_) return;
    copy_ = std::make_unique<T[]>(count);
    blocks_ = std::make_unique<std::atomic<std::uint8_t>[]>((count + block_ - 1) / block_);
  }
  cached_array(const cached_array&) = delete;
  cached_array& operator=(const cached_array&) = delete;

  /// Element `i` (< size(); not checked), fetching its block on first use.
  const T& operator[](std::size_t i) {
    if (direct_) return direct_[i];
    std::atomic<std::uint8_t>& state = blocks_[i / block_];
    if (state.load(std::memory_order_acquire) != ready) fill(i / block_);
    return copy_[i];
  }
  /// Elements in the array.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// Blocks fetched so far (each one get of up to `block` elements), and their bytes.
  ///@{
  [[nodiscard]] std::uint64_t fetches() const noexcept {
    return fetches_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t fetched_bytes() const noexcept {
    return fetched_bytes_.load(std::memory_order_relaxed);
  }
  ///@}

 private:
  static constexpr std::uint8_t empty = 0, fetching = 1, ready = 2;

  void fill(std::size_t b) {
    std::atomic<std::uint8_t>& state = blocks_[b];
    for (;;) {
      std::uint8_t seen = empty;
      if (state.compare_exchange_strong(seen, fetching, std::memory_order_acq_rel)) break;
      if (seen == ready) return;
      // Another reader fetches it: wait to be told (a task suspends, its worker runs other
      // work), then look again. Yielding in a loop instead kept every waiting task runnable:
      // with more threads than cores they took the CPU from the processes whose progress
      // the fetch needed (seconds per pass with 4 ranks on 2 cores).
      future<void> told;
      {
        std::lock_guard guard(waiting_lock_);
        if (state.load(std::memory_order_acquire) != fetching) continue;
        told = waiting_[b].emplace_back().get_future();
      }
      told.get();
    }
    const std::size_t first = b * block_, n = std::min(block_, count_ - first);
    try {
      gas::get(base_ + static_cast<std::ptrdiff_t>(first), copy_.get() + first, n).get();
    } catch (...) {
      state.store(empty, std::memory_order_release);
      wake(b);  // they try the fetch themselves
      throw;
    }
    fetches_.fetch_add(1, std::memory_order_relaxed);
    fetched_bytes_.fetch_add(n * sizeof(T), std::memory_order_relaxed);
    state.store(ready, std::memory_order_release);
    wake(b);
  }

  /// Wakes the readers waiting for block `b`, after its state left `fetching`.
  void wake(std::size_t b) {
    std::vector<promise<void>> readers;
    {
      std::lock_guard guard(waiting_lock_);
      const auto at = waiting_.find(b);
      if (at == waiting_.end()) return;
      readers = std::move(at->second);
      waiting_.erase(at);
    }
    for (promise<void>& r : readers) r.set_value();
  }

  global_ptr<T> base_;
  std::size_t count_, block_;
  T* direct_;
  std::unique_ptr<T[]> copy_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> blocks_;
  std::atomic<std::uint64_t> fetches_{0}, fetched_bytes_{0};
  std::mutex waiting_lock_;  // held only to register or take waiters, never while waiting
  std::unordered_map<std::size_t, std::vector<promise<void>>> waiting_;  // by block
};

}  // namespace roam::gas
