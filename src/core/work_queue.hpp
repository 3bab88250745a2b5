// A FIFO of intrusive work items behind a small spin lock.
//
// Why not a lock-free queue: every queue here must be FIFO for the per-sender ordering
// guarantee, support push from any thread and pop from owner and thieves alike; a short
// critical section around two pointer updates is faster than the lock-free alternatives at
// the contention a node sees, and its emptiness test is one relaxed load.
#pragma once

#include <roam/base/detail/spin_lock.hpp>
#include <roam/transport/message.hpp>

#include <atomic>
#include <cstddef>
#include <thread>

namespace roam::detail {

class work_queue {
 public:
  void push(work_item* w) noexcept {
    w->next = nullptr;
    lock_.lock();
    if (tail_)
      tail_->next = w;
    else
      head_ = w;
    tail_ = w;
    size_.fetch_add(1, std::memory_order_seq_cst);
    lock_.unlock();
  }
  work_item* pop() noexcept {
    if (size_.load(std::memory_order_relaxed) == 0) return nullptr;
    lock_.lock();
    work_item* w = head_;
    if (w) {
      head_ = w->next;
      if (!head_) tail_ = nullptr;
      size_.fetch_sub(1, std::memory_order_relaxed);
    }
    lock_.unlock();
    return w;
  }
  bool empty() const noexcept { return size_.load(std::memory_order_seq_cst) == 0; }
  /// Items queued now (a snapshot; any thread).
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }

 private:
  alignas(64) spin_lock lock_;
  work_item* head_ = nullptr;
  work_item* tail_ = nullptr;
  std::atomic<std::size_t> size_{0};
};

}  // namespace roam::detail
