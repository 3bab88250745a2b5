#include "scheduler.hpp"

#include "node_runtime.hpp"

#include <hwloc.h>

#include <cstdio>

namespace roam::detail {
namespace {

thread_local int tl_worker = -1;

// xorshift: victim selection needs speed, not quality.
thread_local std::uint32_t tl_random = 0x9e3779b9u;
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

int current_worker() noexcept { return tl_worker; }

scheduler::scheduler(node_runtime& node, options opt, std::function<bool()> progress)
    : node_(node), opt_(opt), progress_(std::move(progress)) {
  for (unsigned i = 0; i < opt_.workers; ++i) queues_.push_back(std::make_unique<padded_queue>());
}

scheduler::~scheduler() { stop(); }

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

void scheduler::push(work_item* w) noexcept {
  const int self = (current_node() == &node_) ? tl_worker : -1;
  if (self >= 0)
    queues_[self]->queue.push(w);
  else
    inject_.queue.push(w);
  // Pairs with the seq_cst increment of sleepers_ in park_worker(): either the parker sees
  // the item, or we see the parker.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (searching_.load(std::memory_order_seq_cst) == 0 &&
      sleepers_.load(std::memory_order_seq_cst) > 0)
    wake_one_worker();
}

work_item* scheduler::find_work(int self) noexcept {
  if (self >= 0)
    if (work_item* w = queues_[self]->queue.pop()) return w;
  if (work_item* w = inject_.queue.pop()) return w;
  const auto n = static_cast<unsigned>(queues_.size());
  if (n > (self >= 0 ? 1u : 0u)) {
    unsigned start = next_random() % n;
    for (unsigned k = 0; k < n; ++k) {
      unsigned victim = (start + k) % n;
      if (static_cast<int>(victim) == self) continue;
      if (work_item* w = queues_[victim]->queue.pop()) return w;
    }
  }
  return nullptr;
}

bool scheduler::has_queued_work() const noexcept {
  if (!inject_.queue.empty()) return true;
  for (const auto& q : queues_)
    if (!q->queue.empty()) return true;
  return false;
}

bool scheduler::run_one(int self) {
  work_item* w = find_work(self);
  if (!w) return false;
  w->execute(w);
  return true;
}

void scheduler::wake_one_worker() noexcept {
  std::lock_guard guard(park_lock_);
  if (wake_tokens_ < sleepers_.load()) {
    ++wake_tokens_;
    park_cv_.notify_one();
  }
}

void scheduler::park_worker() {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (has_queued_work() || stopping_.load()) {
    sleepers_.fetch_sub(1);
    return;
  }
  {
    std::unique_lock lock(park_lock_);
    if (wake_tokens_ == 0 && !stopping_.load()) {
      if (progress_)  // someone must keep polling the network, slowly
        park_cv_.wait_for(lock, opt_.poll);
      else
        park_cv_.wait(lock, [this] { return wake_tokens_ > 0 || stopping_.load(); });
    }
    if (wake_tokens_ > 0) --wake_tokens_;
  }
  sleepers_.fetch_sub(1);
}

void scheduler::worker_main(unsigned index) {
  tl_worker = static_cast<int>(index);
  tl_random = 0x9e3779b9u * (index + 1) + 0x7f4a7c15u * (id_of(node_) + 1);
  bind_thread_to_node(&node_);
  if (opt_.pin) pin_current_thread(opt_.pin_offset + index);

  bool searching = false;
  unsigned idle_rounds = 0;
  auto idle_since = std::chrono::steady_clock::now();
  auto stop_searching = [&] {
    if (!searching) return;
    searching = false;
    // The last searcher to find work wakes a sleeper if work remains, so load spreads
    // without waking a thread for every message.
    if (searching_.fetch_sub(1) == 1 && sleepers_.load() > 0 && has_queued_work())
      wake_one_worker();
  };

  while (!stopping_.load(std::memory_order_relaxed)) {
    if (work_item* w = find_work(static_cast<int>(index))) {
      stop_searching();
      idle_rounds = 0;
      w->execute(w);
      continue;
    }
    if (progress_ && progress_()) {
      idle_rounds = 0;
      continue;
    }
    if (!searching) {
      searching = true;
      searching_.fetch_add(1);
      idle_since = std::chrono::steady_clock::now();
    }
    // Capped exponential back-off; yield once the spins grow long.
    unsigned spins = 1u << (idle_rounds < 8 ? idle_rounds : 8);
    for (unsigned i = 0; i < spins; ++i) cpu_relax();
    if (idle_rounds >= 8) std::this_thread::yield();
    ++idle_rounds;
    if (std::chrono::steady_clock::now() - idle_since > opt_.spin) {
      stop_searching();
      park_worker();
      idle_rounds = 0;
    }
  }
  stop_searching();
  bind_thread_to_node(nullptr);
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

}  // namespace roam::detail
