// The per-thread deque of tasklets: the owner pushes and pops at the bottom (newest
// first, cache-hot), thieves take from the top (the oldest, largest pieces of a recursion).
//
// Chase and Lev's lock-free circular deque (SPAA 2005), in the C11 formulation of Lê et al.
// (PPoPP 2013), with sequentially consistent operations where that paper uses fences
// (ThreadSanitizer does not model standalone fences). Written here because the runtime's
// scheduler needs it intrusive (work_item pointers) and bounded; a full deque makes the
// spawner run the tasklet itself, which keeps the program correct.
#pragma once

#include <roam/transport/message.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

namespace roam::detail {

class work_stealing_deque {
 public:
  explicit work_stealing_deque(std::size_t capacity_log2 = 14)
      : mask_((std::int64_t{1} << capacity_log2) - 1),
        slots_(new std::atomic<work_item*>[std::size_t{1} << capacity_log2]) {}

  /// Owner only. False when full.
  bool push(work_item* w) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t > mask_) return false;
    slots_[b & mask_].store(w, std::memory_order_relaxed);
    // seq_cst, not just release: the spawner next reads the scheduler's sleepers count, and
    // a parked worker re-reads the deques after raising it. Both sides must be in the one
    // seq_cst order, or the push and the park can miss each other (a lost wake-up).
    bottom_.store(b + 1, std::memory_order_seq_cst);
    return true;
  }

  /// Owner only: the newest item, or nullptr.
  work_item* pop() noexcept {
    // Cheap test first: only the owner moves bottom_ and thieves only raise top_, so an
    // empty deque seen here is empty (idle loops call this constantly).
    if (bottom_.load(std::memory_order_relaxed) <= top_.load(std::memory_order_relaxed))
      return nullptr;
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    work_item* w = slots_[b & mask_].load(std::memory_order_relaxed);
    if (t == b) {  // the last item: race the thieves for it
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed))
        w = nullptr;
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return w;
  }

  /// Any thread: the oldest item, or nullptr (empty, or lost a race).
  work_item* steal() noexcept {
    // A stale "empty" only delays a thief to its next look; parking re-checks with empty().
    if (top_.load(std::memory_order_relaxed) >= bottom_.load(std::memory_order_relaxed))
      return nullptr;
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return nullptr;
    work_item* w = slots_[t & mask_].load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return nullptr;
    return w;
  }

  bool empty() const noexcept {
    return bottom_.load(std::memory_order_seq_cst) <= top_.load(std::memory_order_seq_cst);
  }

 private:
  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  const std::int64_t mask_;
  std::unique_ptr<std::atomic<work_item*>[]> slots_;
};

}  // namespace roam::detail
