// roam — deferred freeing for structures that threads read without a lock (the mobile-object
// directory's entries and bucket tables).
//
// Written here rather than taken from a library because it must ride on the scheduler's own
// loop: a worker announces a quiescent state once per work item (two plain stores), which is
// what makes lock-free lookups on the hot path free; general epoch or hazard-pointer
// libraries ask every read to fence, and Debian packages none of them.
//
// The rule (quiescent-state-based reclamation, with epochs): a worker thread of a node is
// online from its start; between two work items, where it holds no pointer into a retired
// structure, it announces the current epoch, and it goes offline while parked. Every other
// thread (an application thread, a node's service or communication thread) is online only
// inside a `grace_read_section`. A retired object is freed once the epoch has advanced twice
// since its retirement, and the epoch advances only when every online thread has announced
// the current one: no thread can still hold what it read before the retirement.
//
// What the rule asks of code that reads retired-able structures: take and use such a pointer
// within one work item (or one read section), and never across a suspension. The mobile
// layer keeps an entry across a handler's suspension only while that handler holds access
// to the object, which keeps the entry from being retired at all.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace roam::detail {

/// One thread's announcement slot: 0 while offline, else the epoch it last saw.
struct alignas(64) grace_record {
  std::atomic<std::uint64_t> epoch{0};
  bool worker = false;  ///< announces at its loop's top; read sections cost it nothing
  unsigned depth = 0;   ///< nesting of read sections (non-workers)
  std::atomic<bool> in_use{false};
  grace_record* next = nullptr;  ///< the process's list (records are reused, never freed)
};

/// The calling thread's record, or nullptr before it first took part.
extern thread_local grace_record* tl_grace_record [[gnu::tls_model("initial-exec")]];
/// The process's epoch (advanced under the domain's lock in grace_period.cpp).
extern std::atomic<std::uint64_t> grace_epoch;

/// Makes the calling thread a worker for the rule above: online until it parks or ends.
void grace_register_worker() noexcept;
/// The calling worker holds no pointer into retired-able structures (its loop's top).
/// Inline: it runs once per work item.
inline void grace_announce_quiescent_state() noexcept {
  tl_grace_record->epoch.store(grace_epoch.load(std::memory_order_acquire),
                               std::memory_order_release);
}
/// The calling worker parks: it reads nothing until grace_come_online().
void grace_go_offline() noexcept;
void grace_come_online() noexcept;

/// Keeps what the calling thread reads from being freed until the section ends. Nests. A
/// no-op on a worker thread (its loop announces); on other threads one fence to enter.
/// Never keep a section across a suspension: the fiber may resume on another thread.
class grace_read_section {
 public:
  grace_read_section() noexcept {
    grace_record* r = tl_grace_record;
    if (!(r && r->worker)) entered_ = enter();
  }
  ~grace_read_section() {
    if (entered_) leave(*entered_);
  }
  grace_read_section(const grace_read_section&) = delete;
  grace_read_section& operator=(const grace_read_section&) = delete;

 private:
  static grace_record* enter() noexcept;
  static void leave(grace_record& r) noexcept;
  grace_record* entered_ = nullptr;
};

/// Frees `p` with `free(p)` once no thread can still read it (see above). `owner` names
/// the structure it came from (free_retired_of). Any thread; takes a mutex.
void grace_retire(const void* owner, void* p, void (*free)(void*));
/// Frees now what `owner` retired: call when no thread can read `owner` any more (its node
/// stopped).
void grace_free_retired_of(const void* owner) noexcept;
/// Frees what the epoch allows, trying to advance it first. Any thread.
void grace_collect() noexcept;
/// grace_collect(), at most once a millisecond in the process and only with something
/// retired: for idle threads (a worker about to park).
void grace_collect_now_and_then() noexcept;
/// Objects retired and not yet freed, all owners together (tests, statistics).
std::size_t grace_pending() noexcept;

}  // namespace roam::detail
