// roam — a mutex and a condition variable that suspend tasks instead of blocking threads.
//
// Inside a handler or tasklet, lock() and wait() suspend the task while the worker runs
// other work; the task resumes on any worker of the same node. Ownership is handed to
// waiting tasks in the order they started waiting (FIFO), so no task starves. From a node's
// application thread, or any other thread, they wait while running the node's work (or by
// yielding the thread). Meets the Lockable requirements (std::lock_guard, std::unique_lock,
// std::scoped_lock work). A roam::mutex protects data shared by the handlers of one node; it
// does not reach across nodes.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace roam {

namespace detail {
struct fiber;
}

/// A mutex for the handlers and tasks of one node that suspends a waiting task instead of
/// blocking its worker, and hands ownership to waiters in FIFO order (see the file comment).
class mutex {
 public:
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  ~mutex() = default;

  /// Acquires the mutex, suspending the calling task while another holds it.
  void lock();
  /// Acquires the mutex if it is free. Never waits.
  bool try_lock() noexcept;
  /// Releases it; the longest-waiting task, if any, becomes the owner and is resumed.
  void unlock();

 private:
  friend class condition_variable;
  static void park(detail::fiber* f, void* self);
  std::atomic<bool> locked_{false};
  std::atomic_flag waiters_lock_ = ATOMIC_FLAG_INIT;  // guards the waiter list
  detail::fiber* head_ = nullptr;
  detail::fiber* tail_ = nullptr;
};

/// A condition variable over a roam::mutex that suspends waiting tasks instead of blocking
/// their workers.
class condition_variable {
 public:
  condition_variable() = default;
  condition_variable(const condition_variable&) = delete;
  condition_variable& operator=(const condition_variable&) = delete;

  /// Releases `lock`, suspends until notified, then re-acquires `lock`. No notification
  /// sent after the call began is lost. Spurious wake-ups do not happen, but use the
  /// predicate form: another task may change the state before this one re-acquires.
  void wait(std::unique_lock<roam::mutex>& lock);
  /// Calls wait(lock) until `ready()` returns true (not at all if it already does).
  template <class Predicate>
  void wait(std::unique_lock<roam::mutex>& lock, Predicate ready) {
    while (!ready()) wait(lock);
  }
  /// Resumes the longest-waiting task, if any.
  void notify_one();
  /// Resumes every waiting task.
  void notify_all();

 private:
  struct parking;
  static void park(detail::fiber* f, void* parking);
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;  // guards the waiter list
  detail::fiber* head_ = nullptr;
  detail::fiber* tail_ = nullptr;
  std::atomic<std::uint64_t> generation_{0};  // for waiters that are not tasks
};

}  // namespace roam
