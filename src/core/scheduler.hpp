// The workers of one node: per-worker FIFO queues, a node-wide injection queue, random
// victim stealing, capped exponential back-off and parking.
//
// Written here rather than taken from a library because the node runtime needs
// control that thread pools do not give: waiting threads that run work, communication
// duty taken by idle workers, and parking that never misses a wake-up.
#pragma once

#include "work_queue.hpp"

#include <roam/core/detail/tasklet_queues.hpp>
#include "work_stealing_deque.hpp"

#include <roam/core/config.hpp>
#include <roam/core/detail/node_api.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace roam::detail {

class node_runtime;

class scheduler {
 public:
  struct options {
    unsigned workers = 1;
    std::chrono::microseconds spin{50};
    std::chrono::microseconds poll{100};
    bool pin = false;
    unsigned pin_offset = 0;  ///< first core index for pinning
  };
  /// `progress` moves network traffic; empty when the transport needs none or a dedicated
  /// communication thread does it.
  scheduler(node_runtime& node, options opt, std::function<bool()> progress);
  ~scheduler();

  void start();
  /// Stops and joins the workers. Queued work is not run.
  void stop();

  /// Queues work from any thread: a worker of this node queues on its own FIFO, anything
  /// else on the injection queue. Wakes a parked worker if nobody is searching.
  void push(work_item* w) noexcept;
  /// Queues a suspended fiber to resume. On a worker of this node it goes to that worker's
  /// resume queue, which the worker serves before starting anything new: a resumed fiber
  /// finishes work already begun and frees its stack, while new tasklets would each take a
  /// fiber of their own (oldest-first joins of a tree held one fiber per tree node, issue 25).
  void push_resumed(work_item* w) noexcept;
  /// Queues work that arrived from outside this node (another node, the network): always
  /// on the injection queue, so arrivals from one source keep their order whichever
  /// thread delivers them.
  void push_arrival(work_item* w) noexcept;
  /// Runs one queued item if there is one; the caller is worker `self` or a non-worker
  /// (-1). Returns false when nothing could be found.
  bool run_one(int self);
  /// Takes one queued item (own queue, injection queue, a random victim, then yielded
  /// work), firing due timers when nothing else is found.
  work_item* find_work(int self) noexcept;
  /// The tasklet deque of the calling thread: its worker's, or the application thread's;
  /// nullptr for other threads.
  work_stealing_deque* own_deque() noexcept;
  /// Takes the oldest tasklet of a random other deque of this node.
  work_item* steal_tasklet() noexcept;
  /// Wakes a parked worker if none is looking for work (after queuing work elsewhere).
  void notify_new_work() noexcept { wake_if_nobody_searches(); }
  /// Queues work that yielded: it runs after the other queued work (and at least every
  /// 32nd pick, so a stream of new work cannot starve it).
  void push_yielded(work_item* w) noexcept;
  /// Queues `w` once `deadline` has passed.
  void push_at(std::chrono::steady_clock::time_point deadline, work_item* w);
  /// A waiting thread announces that it spins looking for work (begin) and stops (end).
  /// Workers do not spin while a waiter does.
  void begin_spin() noexcept;
  void end_spin() noexcept;
  /// Tries one unit of network progress (no-op without a progress function).
  bool progress() { return progress_ ? note_traffic(progress_()) : false; }
  bool has_progress() const noexcept { return static_cast<bool>(progress_); }
  /// Called by a thread after each item it ran (a worker's items, tasklets run inline by a
  /// join): true, having polled the network, when the items since this thread's last poll
  /// took long, so that a node busy computing still hears from others.
  bool poll_if_due();
  /// The calling thread's next `n` picks (find_work) take queued arrivals before anything
  /// else: a join running a fork-join tree inline yields to them (serve_arrivals_if_due).
  static void take_arrivals_first(unsigned n) noexcept;
  /// The oldest queued arrival, or nullptr.
  work_item* pop_arrival() noexcept { return inject_.queue.pop(); }

  /// Parks a thread waiting in detail::wait (an application thread, or a worker inside a
  /// handler) until wake_waiters() or the timeout.
  void park_waiter(std::uint64_t seen_epoch, std::chrono::microseconds timeout);
  std::uint64_t waiter_epoch() const noexcept { return waiter_epoch_.load(); }
  void wake_waiters() noexcept;

  unsigned workers() const noexcept { return static_cast<unsigned>(queues_.size()); }
  /// Items on the injection queue: what other nodes and non-worker threads queued here and
  /// no worker has taken yet (a snapshot; flow control reads it).
  std::size_t queued_arrivals() const noexcept { return inject_.queue.size(); }
  /// Some worker is parked (new work will wake it).
  bool worker_parked() const noexcept { return sleepers_.load(std::memory_order_relaxed) > 0; }
  /// Whether some worker of the node is running work or searching for it (not parked);
  /// such a worker polls the network itself.
  bool worker_awake() const noexcept {
    return sleepers_.load(std::memory_order_relaxed) < static_cast<int>(workers());
  }
  void set_hooks(const scheduling_hooks& hooks) noexcept { hooks_ = hooks; }
  std::chrono::microseconds spin_budget() const noexcept { return opt_.spin; }
  std::chrono::microseconds poll_interval() const noexcept { return opt_.poll; }
  /// How long a thread about to park may sleep before it polls the network again. One
  /// parked thread of the node holds the poll duty and wakes at most the configured interval
  /// apart; the others, and every parked thread while another thread spins (it polls), wake
  /// ten times less often. The duty's interval starts at an eighth of the configured one
  /// after traffic was seen and doubles with each sleep until it reaches it: an iterative
  /// code whose next message comes tens of microseconds after the node ran out of work (a
  /// halo exchange) finds it sooner, while a node that stays idle soon polls at the
  /// configured rate again. One poller is enough, and each wake-up takes a core from the threads
  /// that compute: N parked workers polling every 100 µs were N × 10,000 context switches a
  /// second, which a node whose cores run device kernels or other ranks pays in full.
  /// `holds` tells the caller whether it took the duty; give it back with
  /// release_poll_duty() when it wakes. Any thread; lock-free.
  std::chrono::microseconds take_poll_duty(bool& holds) noexcept;
  void release_poll_duty(bool holds) noexcept;

 private:
  struct alignas(64) padded_queue {
    work_queue queue;
  };
  bool has_queued_work() const noexcept;
  /// The calling thread's resume queue: its worker's, or the application thread's.
  padded_queue* own_resumed() noexcept;
  /// Passes `moved` through; traffic (true) resets the poll duty's interval to its shortest.
  bool note_traffic(bool moved) noexcept {
    if (moved) poll_backoff_.store(0, std::memory_order_relaxed);
    return moved;
  }
  void wake_if_nobody_searches() noexcept;
  /// Frees the messages still queued once the workers have stopped (the destructor).
  void discard_queued_messages() noexcept;
  void worker_main(unsigned index);
  /// The loop of a worker thread, on a fiber (run_worker_loop).
  void worker_loop();
  /// Returns false if it woke only because the poll interval passed.
  bool park_worker();
  void wake_one_worker() noexcept;
  void pin_current_thread(unsigned core);

  node_runtime& node_;
  options opt_;
  std::function<bool()> progress_;
  std::vector<std::unique_ptr<padded_queue>> queues_;
  // Fibers to resume: one queue per worker, then the application thread's.
  std::vector<std::unique_ptr<padded_queue>> resumed_;
  padded_queue inject_;
  padded_queue yielded_;
  std::vector<std::unique_ptr<work_stealing_deque>> deques_;  // workers', then the app thread's
  bool fire_due_timers() noexcept;
  std::chrono::steady_clock::duration until_next_timer() noexcept;
  struct timer {
    std::chrono::steady_clock::time_point deadline;
    work_item* item;
    bool operator>(const timer& o) const noexcept { return deadline > o.deadline; }
  };
  std::mutex timer_lock_;
  std::vector<timer> timers_;  // a min-heap on deadline
  std::atomic<std::size_t> timer_count_{0};
  std::vector<std::thread> threads_;
  scheduling_hooks hooks_;  // set before start(), read-only afterwards

  alignas(64) std::atomic<int> searching_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::mutex park_lock_;
  std::condition_variable park_cv_;
  int wake_tokens_ = 0;  // guarded by park_lock_
  std::atomic<bool> stopping_{false};

  alignas(64) std::atomic<std::uint64_t> waiter_epoch_{0};
  std::atomic<int> parked_waiters_{0};
  std::atomic<bool> poll_duty_{false};     // a parked thread polls at the configured interval
  std::atomic<unsigned> poll_backoff_{0};  // the duty's interval is poll >> (3 - this)
  std::mutex waiter_lock_;
  std::condition_variable waiter_cv_;
};

/// Marks the calling thread as its node's application thread (it gets a tasklet deque).
void mark_application_thread(bool yes) noexcept;
/// Whether the calling thread is its node's application thread.
bool is_application_thread() noexcept;

/// The calling thread's worker index on its node, or -1 when it is not a worker.
int current_worker() noexcept;

}  // namespace roam::detail
