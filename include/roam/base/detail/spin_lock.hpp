// roam — a small spin lock for critical sections of a few pointer updates.
//
// Why our own: roam's queues and directories hold their locks for a few instructions, where
// a std::mutex's futex path costs more than the wait; on an oversubscribed machine the
// holder may be descheduled, so a waiter yields its core after a short spin.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace roam::detail {

/// Tells the processor the caller spins (saves power, frees the core's other hyperthread).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// A BasicLockable spin lock. Threading: any thread; not recursive.
class spin_lock {
 public:
  void lock() noexcept {
    for (unsigned spins = 0;; ++spins) {
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
      while (flag_.load(std::memory_order_relaxed)) {
        // On an oversubscribed machine the holder may be descheduled: give it the core.
        if (++spins > 64)
          std::this_thread::yield();
        else
          cpu_relax();
      }
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace roam::detail
