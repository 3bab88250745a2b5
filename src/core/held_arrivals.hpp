// Arrivals a node's process sent it while the sending thread was admitting another arrival.
//
// In one process a message is delivered on its sender's thread, inside the send. When the
// sender is itself an admission function (a relay passing a bundle on, a node forwarding a
// message after its moving object), delivering inside the send nests the next admission in the
// current one: a message chasing a moving object through a routed job nested one admission
// per hop and overflowed a fiber's stack. Such messages are held here instead, and delivered
// once the outermost admission on that thread has returned (node_runtime::
// accept_from_this_process, ADR 47). They keep the order in which they were handed over: a
// sender outside an admission delivers at once only while nothing is held for the node, and
// otherwise queues behind what is.
//
// Who delivers: a thread that holds a message while no thread delivers the list answers for
// it: at once when it is outside an admission, else once its outermost admission is over.
// The first to claim the list delivers it until it runs dry, messages other threads held
// meanwhile included. (Handing the rest to the node's workers after a bounded turn was
// tried: the balancers' control messages, admitted on arrival, then waited behind busy
// workers, and the 1024-node greedy_refine stress moved no object in most runs.)
#pragma once

#include <roam/base/detail/spin_lock.hpp>
#include <roam/transport/message.hpp>

#include <atomic>
#include <cstddef>
#include <mutex>

namespace roam::detail {

class held_arrivals {
 public:
  held_arrivals() = default;
  held_arrivals(const held_arrivals&) = delete;
  held_arrivals& operator=(const held_arrivals&) = delete;
  /// The number of messages still held (0 unless the job ended abnormally): the owner
  /// reports them, since each was counted as sent and will never be handled.
  std::size_t still_held() const noexcept {
    std::size_t n = 0;
    for (const work_item* w = head_; w; w = w->next) ++n;
    return n;
  }

  /// Nothing is held, and no thread is delivering what was: a message may go straight to
  /// its node. (Any thread; one acquire load.)
  bool idle() const noexcept { return !busy_.load(std::memory_order_acquire); }

  /// Holds `m` behind the messages held before it. Returns true when no thread is
  /// delivering them: the caller must then see to it that one does (claim()).
  bool hold(message_ptr m) noexcept {
    work_item* w = m.release();
    w->next = nullptr;
    std::lock_guard guard(lock_);
    if (tail_)
      tail_->next = w;
    else
      head_ = w;
    tail_ = w;
    busy_.store(true, std::memory_order_release);
    return !delivering_;
  }

  /// Makes the caller the one thread that delivers the held messages, unless another
  /// already is or none are held. Only the claimant calls deliver_all().
  bool claim() noexcept {
    std::lock_guard guard(lock_);
    if (delivering_ || !head_) return false;
    delivering_ = true;
    return true;
  }

  /// The claimant passes the held messages, in order, to `deliver` until none are left,
  /// which ends the claim.
  template <class Deliver>
  void deliver_all(Deliver&& deliver) noexcept {
    while (work_item* w = take()) {
      while (w) {
        work_item* next = w->next;
        deliver(message_ptr(static_cast<message*>(w)));
        w = next;
      }
    }
  }

 private:
  // The held messages, linked by `next`; nullptr when none are left, which ends the claim.
  work_item* take() noexcept {
    std::lock_guard guard(lock_);
    work_item* taken = head_;
    head_ = tail_ = nullptr;
    if (!taken) {
      delivering_ = false;
      busy_.store(false, std::memory_order_release);
    }
    return taken;
  }

  spin_lock lock_;
  work_item* head_ = nullptr;
  work_item* tail_ = nullptr;
  bool delivering_ = false;
  std::atomic<bool> busy_{false};  ///< held messages, or a claimant delivering them
};

}  // namespace roam::detail
