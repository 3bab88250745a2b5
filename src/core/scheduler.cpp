#include "scheduler.hpp"

#include <roam/core/detail/grace_period.hpp>

#include <roam/core/detail/tasklet_queues.hpp>

#include <roam/core/detail/aggregation.hpp>

#include <roam/core/detail/fiber.hpp>
#include "node_runtime.hpp"
#include "stack_overflow.hpp"

#include <roam/base/detail/thread_name.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <hwloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace roam::detail {
namespace {

thread_local int tl_worker = -1;
thread_local bool tl_is_application_thread = false;

// xorshift: victim selection needs speed, not quality.
thread_local std::uint32_t tl_random = 0x9e3779b9u;
// A thread's items since its last network poll, and when that was (poll_if_due). They live
// with the thread, not in a loop's frame: a worker loop handed over (an item suspended)
// starts again, and a stream in which every few items wait would otherwise never poll.
thread_local unsigned tl_items_since_poll = 0;
thread_local std::chrono::steady_clock::time_point tl_last_poll{};
// Picks of this thread that take queued arrivals first (scheduler::take_arrivals_first).
thread_local unsigned tl_arrivals_first = 0;
std::uint32_t next_random() noexcept {
  std::uint32_t x = tl_random;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return tl_random = x;
}

struct topology {
  hwloc_topology_t topo{};
  std::mutex lock;
  topology() {
    hwloc_topology_init(&topo);
    hwloc_topology_load(topo);
  }
  ~topology() { hwloc_topology_destroy(topo); }
};

}  // namespace

[[gnu::noinline]] int current_worker() noexcept { return tl_worker; }
void mark_application_thread(bool yes) noexcept { tl_is_application_thread = yes; }
bool is_application_thread() noexcept { return tl_is_application_thread; }

scheduler::scheduler(node_runtime& node, options opt, std::function<bool()> progress)
    : node_(node), opt_(opt), progress_(std::move(progress)) {
  for (unsigned i = 0; i < opt_.workers; ++i) queues_.push_back(std::make_unique<padded_queue>());
  for (unsigned i = 0; i <= opt_.workers; ++i)  // workers', then the application thread's
    resumed_.push_back(std::make_unique<padded_queue>());
  for (unsigned i = 0; i <= opt_.workers; ++i)
    deques_.push_back(std::make_unique<work_stealing_deque>());
}

scheduler::~scheduler() {
  stop();
  discard_queued_messages();
}

void scheduler::discard_queued_messages() noexcept {
  // Once every node of the process has stopped, only uncounted messages can still be queued
  // (the job ended on quiescence of everything counted): a location update or a balancer's
  // report that another node's worker posted here after this node's workers had stopped.
  // Nobody needs them; they are freed, not left to leak with the queue.
  auto discard_all = [](work_queue& q) {
    while (work_item* w = q.pop())
      if (w->execute == &node_runtime::execute) message_deleter{}(static_cast<message*>(w));
  };
  for (auto& q : queues_) discard_all(q->queue);
  for (auto& q : resumed_) discard_all(q->queue);
  discard_all(inject_.queue);
  discard_all(yielded_.queue);
}

void scheduler::start() {
  for (unsigned i = 0; i < queues_.size(); ++i)
    threads_.emplace_back([this, i] { worker_main(i); });
}

void scheduler::stop() {
  if (threads_.empty()) return;
  stopping_.store(true);
  {
    std::lock_guard guard(park_lock_);
    park_cv_.notify_all();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void scheduler::push_arrival(work_item* w) noexcept {
  inject_.queue.push(w);
  wake_if_nobody_searches();
}

void scheduler::push(work_item* w) noexcept {
  const int self = (current_node() == &node_) ? tl_worker : -1;
  if (self >= 0)
    queues_[self]->queue.push(w);
  else
    inject_.queue.push(w);
  wake_if_nobody_searches();
}

scheduler::padded_queue* scheduler::own_resumed() noexcept {
  if (current_node() != &node_) return nullptr;
  if (tl_worker >= 0) return resumed_[static_cast<std::size_t>(tl_worker)].get();
  return tl_is_application_thread ? resumed_.back().get() : nullptr;
}

void scheduler::push_resumed(work_item* w) noexcept {
  if (padded_queue* q = own_resumed())
    q->queue.push(w);
  else
    inject_.queue.push(w);
  wake_if_nobody_searches();
}

void scheduler::wake_if_nobody_searches() noexcept {
  // The queue's size was just increased by a seq_cst read-modify-write; park_worker()
  // increases sleepers_ the same way before it re-reads the sizes. In the single total order
  // of seq_cst operations one comes first, so either the parker sees the item or we see the
  // parker: no wake-up is lost.
  if (searching_.load(std::memory_order_seq_cst) == 0 &&
      sleepers_.load(std::memory_order_seq_cst) > 0)
    wake_one_worker();
}

void back_off(unsigned rounds) noexcept {
  // One pause per round: what an idle thread checks between rounds are read-only loads of
  // queue sizes, cheap to repeat, and a short pause keeps its reaction to new work well
  // under a microsecond (a longer exponential back-off measurably added latency to every
  // message). After 256 idle rounds it yields every 8th round, so an oversubscribed machine
  // runs the threads that have work.
  cpu_relax();
  if (rounds >= 256 && rounds % 8 == 0) std::this_thread::yield();
}

work_item* scheduler::find_work(int self) noexcept {
  if (tl_arrivals_first != 0) [[unlikely]] {
    --tl_arrivals_first;
    if (work_item* w = inject_.queue.pop()) return w;
    tl_arrivals_first = 0;
  }
  // Yielded work goes last, except on every 32nd pick (fairness under a stream of work).
  thread_local unsigned picks = 0;
  if ((++picks & 31) == 0) {
    fire_due_timers();  // sleepers are not starved by a stream of work either
    if (work_item* w = yielded_.queue.pop()) return w;
  }
  // Arrivals from other nodes and threads come after a thread's own queue and deque, except
  // on every 8th pick: a handler stream that keeps its own queue full (each sends the next to
  // its node), or a waiting application thread running its deque's tasklets, would otherwise
  // keep them waiting for as long as it runs.
  if ((picks & 7) == 0)
    if (work_item* w = inject_.queue.pop()) return w;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (padded_queue* q = own_resumed())
      if (work_item* w = q->queue.pop()) return w;  // begun work first
    // Fibers the application thread resumed (a promise it set, a mutex it passed on):
    // begun work too, and that thread may run user code for long.
    if (self >= 0)
      if (work_item* w = resumed_.back()->queue.pop()) return w;
    if (work_stealing_deque* d = own_deque())
      if (work_item* w = d->pop()) return w;  // newest own tasklet first (work-first)
    if (self >= 0)
      if (work_item* w = queues_[self]->queue.pop()) return w;
    if (work_item* w = inject_.queue.pop()) return w;
    const auto n = static_cast<unsigned>(queues_.size());
    if (n > (self >= 0 ? 1u : 0u)) {
      unsigned start = next_random() % n;
      for (unsigned k = 0; k < n; ++k) {
        unsigned victim = (start + k) % n;
        if (static_cast<int>(victim) == self) continue;
        if (work_item* w = resumed_[victim]->queue.pop()) return w;
        if (work_item* w = queues_[victim]->queue.pop()) return w;
      }
    }
    if (work_item* w = steal_tasklet()) return w;
    // A scheduling policy's handlers come after the node's own work: that is runtime
    // protocol (objects arriving, replies, resumed tasks) which they may be waiting for.
    if (hooks_.take)
      if (work_item* w = hooks_.take(hooks_.context, self)) return w;
    if (work_item* w = yielded_.queue.pop()) return w;
    if (!fire_due_timers()) break;  // timers queued work: look again
  }
  return nullptr;
}

void scheduler::push_yielded(work_item* w) noexcept {
  yielded_.queue.push(w);
  wake_if_nobody_searches();
}

void scheduler::push_at(std::chrono::steady_clock::time_point deadline, work_item* w) {
  {
    std::lock_guard guard(timer_lock_);
    timers_.push_back({deadline, w});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>{});
    timer_count_.fetch_add(1, std::memory_order_seq_cst);
  }
  // A parked worker may be sleeping past the new deadline: let it recompute.
  wake_one_worker();
}

bool scheduler::fire_due_timers() noexcept {
  if (timer_count_.load(std::memory_order_relaxed) == 0) return false;
  const auto now = std::chrono::steady_clock::now();
  std::vector<work_item*> due;
  {
    std::lock_guard guard(timer_lock_);
    while (!timers_.empty() && timers_.front().deadline <= now) {
      due.push_back(timers_.front().item);
      std::pop_heap(timers_.begin(), timers_.end(), std::greater<>{});
      timers_.pop_back();
      timer_count_.fetch_sub(1);
    }
  }
  for (work_item* w : due) push(w);
  return !due.empty();
}

std::chrono::steady_clock::duration scheduler::until_next_timer() noexcept {
  std::lock_guard guard(timer_lock_);
  if (timers_.empty()) return std::chrono::steady_clock::duration::max();
  return timers_.front().deadline - std::chrono::steady_clock::now();
}

work_stealing_deque* scheduler::own_deque() noexcept {
  if (current_node() != &node_) return nullptr;
  if (tl_worker >= 0) return deques_[static_cast<std::size_t>(tl_worker)].get();
  return tl_is_application_thread ? deques_.back().get() : nullptr;
}

work_item* scheduler::steal_tasklet() noexcept {
  const work_stealing_deque* mine = own_deque();
  const auto n = static_cast<unsigned>(deques_.size());
  const unsigned start = next_random() % n;
  for (unsigned k = 0; k < n; ++k) {
    work_stealing_deque* d = deques_[(start + k) % n].get();
    if (d == mine) continue;
    if (work_item* w = d->steal()) return w;
  }
  return nullptr;
}

bool scheduler::has_queued_work() const noexcept {
  if (!inject_.queue.empty() || !yielded_.queue.empty()) return true;
  for (const auto& d : deques_)
    if (!d->empty()) return true;
  for (const auto& q : queues_)
    if (!q->queue.empty()) return true;
  for (const auto& q : resumed_)
    if (!q->queue.empty()) return true;
  return hooks_.has_work && hooks_.has_work(hooks_.context);
}

bool scheduler::run_one(int self) {
  work_item* w = find_work(self);
  if (!w) return false;
  run_item(w);
  return true;
}

void scheduler::wake_one_worker() noexcept {
  std::lock_guard guard(park_lock_);
  if (wake_tokens_ < sleepers_.load()) {
    ++wake_tokens_;
    park_cv_.notify_one();
  }
}

bool scheduler::park_worker() {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (has_queued_work() || stopping_.load()) {
    sleepers_.fetch_sub(1);
    return true;
  }
  // About to sleep. The node's housekeeping (extensions' idle hooks) may ask to run again
  // later: this worker then sleeps at most a second. A sleeping worker would hold back the
  // freeing of what others retire: it frees what it can, then reads nothing until it comes
  // back online.
  const bool worker = tl_worker >= 0;
  bool housekeeping = false;
  if (worker) {
    housekeeping = node_.idle_extensions();
    grace_collect_now_and_then();
    grace_go_offline();
  }
  bool woken = true;
  {
    std::unique_lock lock(park_lock_);
    if (wake_tokens_ == 0 && !stopping_.load()) {
      // Sleep until woken, or until the next timer is due, or (with communication duty)
      // until the network needs polling again: less often while another thread of the node
      // spins and polls already.
      using clock = std::chrono::steady_clock;
      auto limit = clock::duration::max();
      if (timer_count_.load() > 0) limit = std::max(until_next_timer(), clock::duration::zero());
      bool duty = false;
      if (progress_) limit = std::min<clock::duration>(limit, take_poll_duty(duty));
      if (housekeeping) limit = std::min<clock::duration>(limit, std::chrono::seconds(1));
      auto wake = [this] { return wake_tokens_ > 0 || stopping_.load(); };
      if (limit != clock::duration::max())
        woken = park_cv_.wait_for(lock, limit, wake);
      else
        park_cv_.wait(lock, wake);
      release_poll_duty(duty);
    }
    if (wake_tokens_ > 0) --wake_tokens_;
  }
  if (worker) grace_come_online();
  sleepers_.fetch_sub(1);
  return woken;
}

std::chrono::microseconds scheduler::take_poll_duty(bool& holds) noexcept {
  holds = false;
  if (searching_.load(std::memory_order_relaxed) == 0) {
    bool free = false;
    holds = poll_duty_.compare_exchange_strong(free, true, std::memory_order_relaxed);
  }
  if (!holds) return 10 * opt_.poll;
  constexpr unsigned longest = 3;  // the configured interval, 2^3 times the shortest
  unsigned step = poll_backoff_.load(std::memory_order_relaxed);
  if (step < longest) poll_backoff_.store(step + 1, std::memory_order_relaxed);
  const auto shift = longest - std::min(step, longest);
  return std::chrono::microseconds(std::max<std::int64_t>(opt_.poll.count() >> shift, 1));
}

void scheduler::release_poll_duty(bool holds) noexcept {
  if (holds) poll_duty_.store(false, std::memory_order_relaxed);
}

void scheduler::begin_spin() noexcept { searching_.fetch_add(1, std::memory_order_seq_cst); }

void scheduler::end_spin() noexcept {
  // The last spinner to stop (because it found work) wakes a sleeper if work remains, so
  // load spreads over the workers without waking a thread for every message.
  if (searching_.fetch_sub(1, std::memory_order_seq_cst) == 1 && sleepers_.load() > 0 &&
      has_queued_work())
    wake_one_worker();
}

void scheduler::worker_main(unsigned index) {
  tl_worker = static_cast<int>(index);
  tl_random = 0x9e3779b9u * (index + 1) + 0x7f4a7c15u * (id_of(node_) + 1);
  report_stack_overflows_on_this_thread();
  bind_thread_to_node(&node_);
  name_thread(pthread_self(), "roam-w", static_cast<int>(id_of(node_)), static_cast<int>(index));
  // A worker is a track of its node in the trace even when it runs nothing.
  if (trace::on()) trace::attach_thread(id_of(node_));
  if (opt_.pin) pin_current_thread(opt_.pin_offset + index);
  grace_register_worker();
  // The loop runs on a fiber and its items on the loop's stack: a handler that never
  // waits costs no switch. One that suspends hands the loop to a fresh fiber, which starts
  // worker_loop() over (its locals are trivially destructible, and none of them matters
  // once an item runs).
  run_worker_loop([](void* self) { static_cast<scheduler*>(self)->worker_loop(); }, this);
  bind_thread_to_node(nullptr);
}

bool scheduler::poll_if_due() {
  // A thread that always finds work (a worker with a queue that never empties, a join that
  // runs a whole fork-join tree inline) would never poll the network, and messages from
  // other nodes (requests for memory this node owns, a busy sender's own transfers) would
  // wait until it ran out of work. Poll when the items since the last poll took long;
  // looking at the clock every 8th item keeps short ones (a message stream) from paying a
  // poll each.
  constexpr auto busy_poll_interval = std::chrono::microseconds(20);
  if ((++tl_items_since_poll & 7) != 0) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - tl_last_poll <= busy_poll_interval) return false;
  tl_last_poll = now;
  progress();
  return true;
}

void scheduler::take_arrivals_first(unsigned n) noexcept { tl_arrivals_first = n; }

void scheduler::worker_loop() {
  const int self = tl_worker;
  // Idle policy: at most one worker of the node spins (searching for work, polling the
  // network); the others park. A thread waiting on a future also spins and has priority:
  // it is the one that wants low latency, so a spinning worker yields to it and parks.
  // A worker woken only by the poll timer looks once and sleeps again, so an idle node
  // costs a poll per interval, not a spin.
  bool searching = false;
  bool glance = false;
  bool woken = false;  // back from parking, not yet through a search
  unsigned rounds = 0;
  auto since = std::chrono::steady_clock::now();
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Between two items this thread holds nothing that others may retire.
    grace_announce_quiescent_state();
    if (work_item* w = find_work(self)) {
      if (searching) {
        end_spin();
      } else if (woken && sleepers_.load(std::memory_order_relaxed) > 0 && has_queued_work()) {
        // Woken for work and more is queued: pass the wake-up on, or the others stay
        // parked while the handlers taken so far run long (or block).
        wake_one_worker();
      }
      searching = glance = woken = false;
      rounds = 0;
      run_loop_item(w);
      if (progress_) poll_if_due();
      continue;
    }
    flush_thread_lanes();  // an idle sender ships what it aggregated
    if (hooks_.idle) hooks_.idle(hooks_.context);
    if (progress()) {
      glance = false;
      rounds = 0;
      continue;
    }
    if (glance) {
      glance = !park_worker();
      woken = !glance;
      continue;
    }
    if (!searching) {
      int none = 0;
      if (!searching_.compare_exchange_strong(none, 1, std::memory_order_seq_cst)) {
        glance = !park_worker();
        woken = !glance;
        continue;
      }
      searching = true;
      rounds = 0;
      since = std::chrono::steady_clock::now();
    } else if (searching_.load(std::memory_order_relaxed) > 1 ||
               ((rounds & 31) == 31 && std::chrono::steady_clock::now() - since > opt_.spin)) {
      end_spin();
      searching = false;
      glance = !park_worker();
      woken = !glance;
      continue;
    }
    back_off(rounds++);
  }
  if (searching) end_spin();
}

void scheduler::park_waiter(std::uint64_t seen_epoch, std::chrono::microseconds timeout) {
  parked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lock(waiter_lock_);
    waiter_cv_.wait_for(lock, timeout, [&] { return waiter_epoch_.load() != seen_epoch; });
  }
  parked_waiters_.fetch_sub(1);
}

void scheduler::wake_waiters() noexcept {
  waiter_epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (parked_waiters_.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard guard(waiter_lock_);
  waiter_cv_.notify_all();
}

void scheduler::pin_current_thread(unsigned core) {
  static topology topo;
  std::lock_guard guard(topo.lock);
  int pus = hwloc_get_nbobjs_by_type(topo.topo, HWLOC_OBJ_PU);
  if (pus <= 0) return;
  hwloc_obj_t pu =
      hwloc_get_obj_by_type(topo.topo, HWLOC_OBJ_PU, static_cast<unsigned>(core % pus));
  if (pu && hwloc_set_cpubind(topo.topo, pu->cpuset, HWLOC_CPUBIND_THREAD) != 0)
    std::fprintf(stderr, "roam: warning: could not pin a worker to PU %u\n", pu->os_index);
}

// ---- tasklet_queues.hpp: the task layer's view of the scheduler ----------------------------

own_push push_own_tasklet(node_runtime& n, work_item* w) noexcept {
  work_stealing_deque* d = n.sched().own_deque();
  if (!d) return own_push::no_deque;
  if (!d->push(w)) return own_push::deque_full;
  n.sched().notify_new_work();
  return own_push::queued;
}

work_item* pop_own_tasklet(node_runtime& n) noexcept {
  work_stealing_deque* d = n.sched().own_deque();
  return d ? d->pop() : nullptr;
}

void return_own_tasklet(node_runtime& n, work_item* w) noexcept {
  work_stealing_deque* d = n.sched().own_deque();
  if (!d || !d->push(w)) n.sched().push(w);  // cannot happen: its slot was just freed
}

void push_shared_work(node_runtime& n, work_item* w) noexcept { n.sched().push(w); }

bool run_one_available(node_runtime& n) { return n.sched().run_one(current_worker()); }

void serve_arrivals_if_due(node_runtime& n) {
  scheduler& s = n.sched();
  if (!s.poll_if_due()) [[likely]]
    return;
  // What waited meanwhile runs now, up to a bound: a burst does not stall the tree for
  // long, and what comes later waits at most another poll interval.
  constexpr std::size_t most = 64;
  const auto take = static_cast<unsigned>(std::min(s.queued_arrivals(), most));
  if (take == 0) return;
  if (on_fiber()) {
    // The joiner cannot run them on its own stack (they may wait for what it holds, or
    // nest without bound): it steps aside for them, and is the first work resumed after.
    scheduler::take_arrivals_first(take);
    suspend([](fiber* f, void*) { resume_later(f); }, nullptr);
    return;
  }
  // An application thread cannot step aside; it runs them as it runs its node's work when
  // it has none of its own (each on a fiber of its own).
  for (unsigned k = 0; k < take; ++k) {
    work_item* w = s.pop_arrival();
    if (!w) break;
    run_item(w);
  }
}

}  // namespace roam::detail
