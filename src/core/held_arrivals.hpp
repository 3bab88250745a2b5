// Arrivals a node's process sent it while the sending thread was admitting another arrival.
//
// In one process a message is delivered on its sender's thread, inside the send. When the
// sender is itself an admission function (a relay passing a bundle on, a node forwarding a
// message after its object), delivering inside the send nests the next admission in the
// current one: a message chasing a moving object through a routed job nested one
// admission per hop and overflowed a fiber's stack. Such messages are held here instead,
// and delivered once the outermost admission on that thread has returned (node_runtime::
// accept_from_this_process). They keep the order in which they were sent: a sender outside
// an admission delivers at once only while nothing is held for the node, and otherwise
// queues behind what is, so a later message never overtakes one held before it.
#pragma once

#include <roam/base/detail/spin_lock.hpp>
#include <roam/transport/message.hpp>

#include <atomic>
#include <mutex>

namespace roam::detail {

class held_arrivals {
 public:
  held_arrivals() = default;
  held_arrivals(const held_arrivals&) = delete;
  held_arrivals& operator=(const held_arrivals&) = delete;
  ~held_arrivals() {
    for (work_item* w = head_; w;) {
      work_item* next = w->next;
      message_ptr(static_cast<message*>(w));  // freed: the job ended before it was delivered
      w = next;
    }
  }

  /// Nothing is held, and no thread is delivering what was: a message may go straight to
  /// its node. (Any thread; one acquire load.)
  bool idle() const noexcept { return !busy_.load(std::memory_order_acquire); }

  /// Holds `m` behind the messages held before it. Returns true when no thread is
  /// delivering them: the caller must see to it that one does (deliver_held).
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
  /// already is or none are held. Only the claimant calls take().
  bool claim() noexcept {
    std::lock_guard guard(lock_);
    if (delivering_ || !head_) return false;
    delivering_ = true;
    return true;
  }

  /// The claimant's next messages, in the order they were held, linked by `next`; nullptr
  /// when none are left, which ends the claim.
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

 private:
  spin_lock lock_;
  work_item* head_ = nullptr;
  work_item* tail_ = nullptr;
  bool delivering_ = false;
  std::atomic<bool> busy_{false};  ///< held messages, or a claimant delivering them
};

}  // namespace roam::detail
