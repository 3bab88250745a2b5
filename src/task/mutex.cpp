#include <roam/task/mutex.hpp>

#include <roam/base/detail/spin_lock.hpp>
#include <roam/core/detail/fiber.hpp>

#include <thread>

namespace roam {
namespace {

// A waiter list's lock is held for a few pointer updates only.
struct list_guard {
  explicit list_guard(std::atomic_flag& f) noexcept : flag(f) {
    while (flag.test_and_set(std::memory_order_acquire)) detail::cpu_relax();
  }
  ~list_guard() { flag.clear(std::memory_order_release); }
  std::atomic_flag& flag;
};

void append(detail::fiber*& head, detail::fiber*& tail, detail::fiber* f) noexcept {
  detail::next_waiter(f) = nullptr;
  if (tail)
    detail::next_waiter(tail) = f;
  else
    head = f;
  tail = f;
}

detail::fiber* pop_front(detail::fiber*& head, detail::fiber*& tail) noexcept {
  detail::fiber* f = head;
  if (f) {
    head = detail::next_waiter(f);
    if (!head) tail = nullptr;
  }
  return f;
}

// A thread that cannot be suspended keeps its node's work going while it waits.
void help_or_yield() {
  if (!detail::run_one_item_of_my_node()) std::this_thread::yield();
}

}  // namespace

bool mutex::try_lock() noexcept {
  bool expected = false;
  return locked_.compare_exchange_strong(expected, true, std::memory_order_acquire);
}

void mutex::park(detail::fiber* f, void* self) {
  auto& m = *static_cast<mutex*>(self);
  {
    list_guard guard(m.waiters_lock_);
    // Freed while the task was leaving: it takes the mutex now.
    bool expected = false;
    if (!m.locked_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      append(m.head_, m.tail_, f);
      return;
    }
  }
  detail::resume_later(f);
}

void mutex::lock() {
  if (try_lock()) return;
  if (detail::on_fiber()) {
    // Resumed only as the owner: unlock() hands the mutex over without releasing it.
    detail::suspend(&mutex::park, this);
    return;
  }
  while (!try_lock()) help_or_yield();
}

void mutex::unlock() {
  detail::fiber* next = nullptr;
  {
    list_guard guard(waiters_lock_);
    next = pop_front(head_, tail_);
    if (!next) locked_.store(false, std::memory_order_release);
  }
  if (next) detail::resume_later(next);  // it owns the mutex now
}

struct condition_variable::parking {
  condition_variable* cv;
  roam::mutex* mutex;
};

void condition_variable::park(detail::fiber* f, void* arg) {
  auto& p = *static_cast<parking*>(arg);
  {
    list_guard guard(p.cv->lock_);
    append(p.cv->head_, p.cv->tail_, f);
  }
  // Released only now, with the task already listed: a notification cannot slip between.
  p.mutex->unlock();
}

void condition_variable::wait(std::unique_lock<roam::mutex>& lock) {
  if (detail::on_fiber()) {
    parking p{this, lock.mutex()};
    detail::suspend(&condition_variable::park, &p);
    lock.mutex()->lock();
    return;
  }
  const std::uint64_t seen = generation_.load(std::memory_order_acquire);
  lock.unlock();
  while (generation_.load(std::memory_order_acquire) == seen) help_or_yield();
  lock.lock();
}

void condition_variable::notify_one() {
  detail::fiber* f = nullptr;
  {
    list_guard guard(lock_);
    f = pop_front(head_, tail_);
    if (!f) generation_.fetch_add(1, std::memory_order_release);
  }
  if (f) detail::resume_later(f);
}

void condition_variable::notify_all() {
  detail::fiber* list = nullptr;
  {
    list_guard guard(lock_);
    list = head_;
    head_ = tail_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
  }
  while (list) {
    detail::fiber* next = detail::next_waiter(list);
    detail::resume_later(list);
    list = next;
  }
}

}  // namespace roam
