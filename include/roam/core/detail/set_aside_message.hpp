// roam — a message a layer above the core took out of the normal flow. Not for applications.
#pragma once

#include <roam/transport/message.hpp>

#include <utility>

namespace roam::detail {

class node_runtime;

/// A message set aside to run later (a mobile object's message waiting for its turn, for its
/// predecessor, or for its object to arrive). While it is set aside, quiescence detection
/// counts it as pending, so wait_quiescence cannot return before it has run or been dealt
/// with. It leaves through exactly one exit:
/// - run_later(): it runs through its handler on a worker of the node (counted when it runs);
/// - handled(): its turn is over without running (forwarded elsewhere, failed, dropped with
///   its object): counted as handled, and the message is given back to the caller;
/// - to_scheduler(): handed to a scheduling policy that will run it, or give it back through
///   adopt() (its count goes with it);
/// - transfer(): written into another message (a migrating object's queue), whose receiver
///   adopt()s it: the count travels with it.
/// The type is move-only and each exit consumes it, so the accounting cannot be done twice;
/// a token destroyed while it still holds a message (an exit forgotten) stops the job.
/// Threading: a token is a value; its exits may be taken on any thread of its node.
class set_aside_message {
 public:
  set_aside_message() noexcept = default;
  set_aside_message(set_aside_message&& other) noexcept : m_(std::move(other.m_)) {}
  set_aside_message& operator=(set_aside_message&& other) noexcept {
    if (m_) lost();
    m_ = std::move(other.m_);
    return *this;
  }
  set_aside_message(const set_aside_message&) = delete;
  set_aside_message& operator=(const set_aside_message&) = delete;
  ~set_aside_message() {
    if (m_) lost();
  }

  /// Sets aside `m` on `n`: counts it as pending again (it will run, or be dealt with, later).
  static set_aside_message set_aside(node_runtime& n, message_ptr m) noexcept;
  /// Takes over a message whose pending count was taken elsewhere and came with it (an
  /// arrival an admit function keeps, a message unpacked from a migrated object, one a
  /// scheduling policy gives back).
  static set_aside_message adopt(message_ptr m) noexcept { return set_aside_message(std::move(m)); }

  explicit operator bool() const noexcept { return static_cast<bool>(m_); }
  message& operator*() const noexcept { return *m_; }
  message* operator->() const noexcept { return m_.get(); }

  /// Exit: queues it to run through its handler on a worker of `n` (it does not go through
  /// its handler's admit function again).
  void run_later(node_runtime& n) && noexcept;
  /// Exit: counts it as handled on `n` and gives the message back (to forward, fail or free).
  [[nodiscard]] message_ptr handled(node_runtime& n) && noexcept;
  /// Exit: the message for a scheduling policy that runs it (its count stays pending).
  [[nodiscard]] message_ptr to_scheduler() && noexcept { return std::move(m_); }
  /// Exit: the message to be written into another one, whose receiver adopts it.
  [[nodiscard]] message_ptr transfer() && noexcept { return std::move(m_); }

 private:
  explicit set_aside_message(message_ptr m) noexcept : m_(std::move(m)) {}
  [[noreturn]] static void lost() noexcept;
  message_ptr m_;
};

}  // namespace roam::detail
