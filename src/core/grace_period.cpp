#include <roam/core/detail/grace_period.hpp>

#include <roam/base/detail/fatal.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <vector>

namespace roam::detail {

thread_local grace_record* tl_grace_record [[gnu::tls_model("initial-exec")]] = nullptr;
constinit std::atomic<std::uint64_t> grace_epoch{1};

namespace {

/// A store-load fence. ThreadSanitizer does not model fences (GCC rejects them under it): a
/// sequentially consistent read-modify-write of one shared word stands in for it there.
void store_load_fence() noexcept {
#if defined(__SANITIZE_THREAD__)
  static std::atomic<int> word{0};
  word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

struct retired {
  std::uint64_t epoch;  // the epoch when it was retired
  const void* owner;
  void* object;
  void (*free)(void*);
};

/// Retirements between two attempts to advance: an attempt reads every thread's record (a
/// process with 1024 virtual nodes has over a thousand), so it is not made for each.
constexpr std::size_t retirements_per_attempt = 32;

struct grace_domain {
  std::atomic<std::uint64_t>& epoch = grace_epoch;
  std::atomic<grace_record*> records{nullptr};     // pushed at the front, never removed
  std::mutex lock;                                 // retirement and advancing
  std::deque<retired> waiting;                     // by increasing epoch
  std::atomic<std::size_t> pending{0};             // waiting.size(), read without the lock
  std::atomic<std::int64_t> last_idle_attempt{0};  // steady_clock ticks
  std::size_t since_attempt = 0;

  grace_record& acquire_record(bool worker) {
    grace_record* r = nullptr;
    for (grace_record* c = records.load(std::memory_order_acquire); c; c = c->next) {
      bool free = false;
      if (c->in_use.compare_exchange_strong(free, true, std::memory_order_acq_rel)) {
        r = c;
        break;
      }
    }
    if (!r) {
      r = new grace_record;  // lives as long as the process: lock-free readers walk the list
      r->in_use.store(true, std::memory_order_relaxed);
      r->next = records.load(std::memory_order_relaxed);
      while (!records.compare_exchange_weak(r->next, r, std::memory_order_acq_rel)) {
      }
    }
    r->worker = worker;
    r->depth = 0;
    r->epoch.store(0, std::memory_order_relaxed);
    return *r;
  }

  /// Under `lock`. The epoch moves on when every online thread has seen it.
  void try_advance() noexcept {
    // Pairs with the fence of a thread coming online: either this scan sees it online, or
    // its reads after the fence see every unlink made before this scan.
    store_load_fence();
    const std::uint64_t now = epoch.load(std::memory_order_relaxed);
    for (grace_record* c = records.load(std::memory_order_acquire); c; c = c->next) {
      if (!c->in_use.load(std::memory_order_acquire)) continue;
      const std::uint64_t seen = c->epoch.load(std::memory_order_acquire);
      if (seen != 0 && seen != now) return;
    }
    epoch.store(now + 1, std::memory_order_release);
  }

  /// Under `lock`: advances the epoch if it can, and moves what may be freed into `out`.
  void advance_and_take(std::vector<retired>& out) {
    since_attempt = 0;
    try_advance();
    take_freeable(out);
  }

  /// Under `lock`: moves what may be freed into `out`.
  void take_freeable(std::vector<retired>& out) {
    const std::uint64_t now = epoch.load(std::memory_order_relaxed);
    while (!waiting.empty() && waiting.front().epoch + 2 <= now) {
      out.push_back(waiting.front());
      waiting.pop_front();
    }
    pending.store(waiting.size(), std::memory_order_relaxed);
  }
};

grace_domain& domain() {
  static grace_domain* d = new grace_domain;  // outlives every thread (no exit-time order)
  return *d;
}

/// Gives the thread's record back when the thread ends.
struct record_release {
  ~record_release() {
    if (grace_record* r = tl_grace_record) {
      r->epoch.store(0, std::memory_order_release);
      r->in_use.store(false, std::memory_order_release);
      tl_grace_record = nullptr;
    }
  }
};
thread_local record_release tl_record_release;

grace_record& own_record(bool worker) {
  if (!tl_grace_record) {
    (void)&tl_record_release;  // constructs it, so its destructor runs at thread exit
    tl_grace_record = &domain().acquire_record(worker);
  }
  return *tl_grace_record;
}

void come_online(grace_record& r) noexcept {
  r.epoch.store(domain().epoch.load(std::memory_order_acquire), std::memory_order_relaxed);
  store_load_fence();
}

void free_all(std::vector<retired>& list) noexcept {
  for (const retired& x : list) x.free(x.object);
  list.clear();
}

}  // namespace

void grace_register_worker() noexcept {
  grace_record& r = own_record(true);
  r.worker = true;
  come_online(r);
}

void grace_go_offline() noexcept { tl_grace_record->epoch.store(0, std::memory_order_release); }

void grace_come_online() noexcept { come_online(*tl_grace_record); }

grace_record* grace_read_section::enter() noexcept {
  grace_record& r = own_record(false);
  if (r.depth++ == 0) come_online(r);
  return &r;
}

void grace_read_section::leave(grace_record& r) noexcept {
  // A bug in roam, caught here rather than as memory freed under a reader.
  if (&r != tl_grace_record)
    fatal(
        "a grace-period read section ended on another thread than it began on (it was kept "
        "across a suspension)");
  if (--r.depth == 0) r.epoch.store(0, std::memory_order_release);
}

void grace_retire(const void* owner, void* p, void (*free)(void*)) {
  grace_domain& d = domain();
  std::vector<retired> ready;
  {
    std::lock_guard guard(d.lock);
    d.waiting.push_back({d.epoch.load(std::memory_order_relaxed), owner, p, free});
    d.pending.store(d.waiting.size(), std::memory_order_relaxed);
    if (++d.since_attempt >= retirements_per_attempt) d.advance_and_take(ready);
  }
  free_all(ready);
}

void grace_collect() noexcept {
  grace_domain& d = domain();
  if (d.pending.load(std::memory_order_relaxed) == 0) return;
  std::vector<retired> ready;
  {
    std::lock_guard guard(d.lock);
    if (d.waiting.empty()) return;
    d.advance_and_take(ready);
  }
  free_all(ready);
}

void grace_collect_now_and_then() noexcept {
  grace_domain& d = domain();
  if (d.pending.load(std::memory_order_relaxed) == 0) return;
  // An attempt reads every thread's record: with a thousand virtual nodes' workers parking
  // and waking, one attempt a millisecond for the whole process is plenty.
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::int64_t last = d.last_idle_attempt.load(std::memory_order_relaxed);
  if (now - last < std::chrono::nanoseconds(std::chrono::milliseconds(1)).count()) return;
  if (!d.last_idle_attempt.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  grace_collect();
}

void grace_free_retired_of(const void* owner) noexcept {
  grace_domain& d = domain();
  std::vector<retired> mine;
  {
    std::lock_guard guard(d.lock);
    const auto keep = std::stable_partition(d.waiting.begin(), d.waiting.end(),
                                            [owner](const retired& x) { return x.owner != owner; });
    mine.assign(keep, d.waiting.end());
    d.waiting.erase(keep, d.waiting.end());
    d.pending.store(d.waiting.size(), std::memory_order_relaxed);
  }
  free_all(mine);
}

std::size_t grace_pending() noexcept { return domain().pending.load(std::memory_order_relaxed); }

}  // namespace roam::detail
