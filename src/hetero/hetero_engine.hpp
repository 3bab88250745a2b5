#pragma once
// The heterogeneous framework's core runtime (thesis Fig. 48, middle layer, and §5.1.3):
// objects' per-space MSI copies, task dependencies, the engine thread that schedules tasks,
// issues the transfers the protocol requires and launches kernels, and eviction.
//
// Locking: one mutex (`mutex_`) guards all objects, tasks and pools. Device completion callbacks
// post to the inbox (its own mutex) and take `mutex_` only when they drain it. One thread at a
// time drains the inbox
// and dispatches (`draining_`): the thread that posted, when no drain is running and it may
// (a submitting thread, the host pool's threads, the CUDA poller; ADR 31), otherwise the engine
// thread. Work posted while a drain runs is taken by that drain.
// Memory spaces: 0 is the host; each device with memory of its own is one more space. A device
// that computes on host memory (the host backend) works in space 0.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "device_event_state.hpp"
#include "memory_pools.hpp"
#include "request_pool.hpp"
#include "roam/hetero/hetero_runtime.hpp"
#include "roam/hetero/hetero_task.hpp"

namespace roam::detail {

class hetero_engine;

/// Drops the entries of `list` that `finished` accepts, but only once the list has doubled since
/// the last time (`kept` holds the size left then): pruning at every append would make each
/// submission cost the number of unfinished tasks on an object, so a program that queues
/// thousands of tasks on one object would spend quadratic time. This way each entry is looked
/// at an amortized constant number of times, and a list holds at most about twice its
/// unfinished entries.
template <class List, class Finished>
void prune_when_doubled(List& list, std::size_t& kept, Finished finished) {
  if (list.size() < 2 * kept + 8) return;
  std::erase_if(list, finished);
  kept = list.size();
}

/// One object's copy in one memory space.
struct memory_copy {
  coherence state = coherence::invalid;
  device_buffer buffer;               ///< unused in the host space
  device_event ready;                 ///< the last operation that wrote this copy
  std::vector<device_event> readers;  ///< operations that read this copy, maybe in flight
  std::size_t readers_kept = 0;       ///< readers' size after its last pruning (or clearing)
  /// While the copy holds a device buffer: its place in the space's eviction order.
  std::list<hetero_object_state*>::iterator recency;
  int pins = 0;  ///< tasks placed on this space that use the copy
};

struct hetero_object_state {
  hetero_object_state(std::shared_ptr<hetero_engine> e, std::size_t size);
  hetero_object_state(const hetero_object_state&) = delete;
  hetero_object_state& operator=(const hetero_object_state&) = delete;
  ~hetero_object_state();

  std::shared_ptr<hetero_engine> engine;
  std::size_t bytes;
  void* host = nullptr;
  std::vector<memory_copy> copies;  ///< per memory space
  // Implicit dependencies: the last writer and the readers since it, in submission order.
  std::shared_ptr<hetero_task_state> last_writer;
  std::vector<std::shared_ptr<hetero_task_state>> readers_since_writer;
  std::size_t readers_since_writer_kept = 0;  ///< its size after its last pruning (or clearing)
  /// Host requests not yet released, oldest first.
  std::deque<std::shared_ptr<hetero_task_state>> host_requests;
  /// Every task and host request naming the object that may not have finished (pruned when
  /// it has doubled, see prune_when_doubled): what tasks_done() waits for, whatever their
  /// dependency settings.
  std::vector<std::weak_ptr<hetero_task_state>> users;
  std::size_t users_kept = 0;  ///< users' size after its last pruning
};

enum class task_phase : std::uint8_t {
  building,
  blocked,
  runnable,
  placed,
  running,
  held,
  complete
};

/// A copy between part of an object and host memory (hetero_object::read_range and
/// write_range): a task with no kernel and no device to place it on, which works on the copies
/// that are valid where they are.
struct range_copy {
  bool write = false;
  std::size_t offset = 0;  ///< bytes into the object
  std::size_t bytes = 0;
  void* user = nullptr;          ///< a read's destination (the caller's memory)
  const void* source = nullptr;  ///< a write's bytes: `staging`, or the memory `owner` holds
  void* staging = nullptr;       ///< from the host pool: a write's copy of its source; a read's
                                 ///< landing place when a device cannot copy into `user` directly
  std::shared_ptr<void> owner;   ///< a write's source taken over, kept until the bytes are written
};

struct task_argument {
  std::shared_ptr<hetero_object_state> object;  ///< null for a value
  data_access access = data_access::read;
  kernel_argument value;
};

struct hetero_task_state {
  std::shared_ptr<hetero_engine> engine;
  const kernel* function = nullptr;  ///< null for a host request
  launch_dims dims;
  std::size_t local_bytes = 0;
  device_type target = device_type::any;
  std::optional<roam::backend> target_backend;
  int target_device = -1;
  bool implicit = true;
  bool evict_when_granted = false;  ///< remove_from_devices: free device copies, then finish
  std::vector<task_argument> arguments;
  /// Each object of the arguments once, with the union of its accesses (set at submit; the
  /// arguments keep the objects alive until the task finishes).
  std::vector<std::pair<hetero_object_state*, data_access>> objects;
  std::vector<std::shared_ptr<hetero_task_state>> dependencies;  ///< explicit, before submit
  std::vector<std::shared_ptr<hetero_task_state>> dependents;    ///< released when this finishes
  /// Released when this kernel is launched: implicit dependents, whose ordering the copies'
  /// events carry from then on (they wait for it on the device, not on the engine thread).
  std::vector<std::shared_ptr<hetero_task_state>> launch_dependents;
  std::size_t unfinished = 0;
  task_phase phase = task_phase::building;
  std::uint64_t id = 0;
  std::atomic<int> device{-1};
  /// Set when the task fails (before `finished` completes); a wait() that rethrew the failure
  /// sets the flag, which the engine's record of the failure shares.
  std::shared_ptr<std::atomic<bool>> failure_seen;
  bool pinned = false;
  std::shared_ptr<device_event_state> finished = make_pooled<device_event_state>();
  std::shared_ptr<device_event_state> granted;  ///< host requests: the view is ready
  std::vector<int> eligible;
  std::optional<range_copy> range;
};

/// What the engine drops only after releasing its lock: objects (their destructors take it) and
/// range writes' spent sources (the application's destructors, which may block or call in).
struct burial {
  std::vector<std::shared_ptr<hetero_object_state>> objects;
  std::vector<std::shared_ptr<void>> sources;
  [[nodiscard]] bool empty() const noexcept { return objects.empty() && sources.empty(); }
};

/// Host requests are the tasks with neither a kernel nor a range copy.
inline bool is_host_request(const hetero_task_state& task) {
  return task.function == nullptr && !task.range;
}

class hetero_engine : public std::enable_shared_from_this<hetero_engine> {
 public:
  explicit hetero_engine(const hetero_options& options);
  hetero_engine(const hetero_engine&) = delete;
  hetero_engine& operator=(const hetero_engine&) = delete;
  ~hetero_engine();

  void start();
  void stop();

  [[nodiscard]] const std::vector<std::unique_ptr<device>>& devices() const { return devices_; }
  [[nodiscard]] std::size_t space_count() const { return pools_.size() + 1; }
  [[nodiscard]] int space_of(int device_index) const { return spaces_[device_index]; }

  void* allocate_host(std::size_t bytes);
  void forget_object(hetero_object_state& object);

  std::shared_ptr<hetero_task_state> new_task();
  void submit(const std::shared_ptr<hetero_task_state>& task);
  hetero_future<void*> request_host(const std::shared_ptr<hetero_object_state>& object,
                                    data_access access, bool evict_when_granted);
  void release_host(hetero_object_state& object);
  /// hetero_object::read_range (write false: `data` receives the bytes, and must stay valid until
  /// the returned event completes) and write_range (write true: `data` is copied before this
  /// returns). `offset` and `bytes` are within the object (the caller checks).
  /// A write with an `owner` (which holds the memory at `data`) keeps it instead of copying when
  /// every device copies from that memory directly; it is dropped after the last transfer.
  device_event copy_range(const std::shared_ptr<hetero_object_state>& object, bool write,
                          std::size_t offset, std::size_t bytes, void* data,
                          std::shared_ptr<void> owner);
  /// Completes once every task and host request submitted on `object` so far has finished.
  [[nodiscard]] device_event tasks_done(const hetero_object_state& object) const;
  /// The MSI state of `object`'s copy in memory space `space`, read under the engine's lock (a
  /// snapshot: the engine may change it as soon as the lock is released).
  [[nodiscard]] coherence state_in(const hetero_object_state& object, int space) const {
    std::lock_guard lock(mutex_);
    return object.copies[static_cast<std::size_t>(space)].state;
  }
  /// Blocks until every task has finished; then rethrows the failure of the first kernel task
  /// that failed since the previous call without a wait() on it seeing the failure.
  void wait_all();
  /// Waits as wait_all() does, for the runtime's end, and reports unseen failures on stderr
  /// instead of throwing: host requests still held (a caller that forgot release(), or threw
  /// before it) are ended rather than waited for forever.
  void shut_down();
  [[nodiscard]] hetero_statistics statistics() const;
  /// Whether `task` was submitted (read under the lock: another thread may be submitting it).
  [[nodiscard]] bool submitted(const hetero_task_state& task) const;
  /// Waits until no task is pending; then how many kernel tasks failed since the last call with
  /// no wait() seeing it, and the first one's failure, forgetting them all.
  std::pair<std::size_t, std::exception_ptr> wait_for_tasks();
  [[nodiscard]] bool default_implicit() const { return implicit_default_; }

 private:
  class scheduler_view;
  enum class attempt_result : std::uint8_t { started, deferred, no_memory };
  /// What the engine does with a task once an event it waits for completes.
  enum class when_done : std::uint8_t {
    finish,               ///< the task's own operation: finish it, with the event's failure
    retry,                ///< something it is ordered after: try it again
    retry_unless_failed,  ///< an input it reads: try again, or fail if a transfer failed
  };

  void post(std::function<void()> item);
  /// When `e` completes, whichever thread drains next does `then` with the task of this id.
  void notify_when_done(const device_event& e, std::uint64_t task, when_done then);
  void engine_loop();
  /// Runs the inbox's work until it is empty; `inbox_lock` holds inbox_mutex_ and draining_ is
  /// set (this clears it).
  void drain(std::unique_lock<std::mutex>& inbox_lock);
  /// Drops what the engine held (counted in burials_); wait_all() waits for this, so their
  /// memory is freed by then.
  void bury(burial& dead);
  void dispatch();
  /// One pass over the retry, host-request, memory-waiting and runnable tasks; true if it
  /// started anything.
  bool dispatch_pass();
  /// submit()'s registration of a checked task with its objects and dependencies. Under mutex_.
  void register_task(const std::shared_ptr<hetero_task_state>& task);
  void make_runnable(const std::shared_ptr<hetero_task_state>& task);
  /// One fewer unfinished dependency for each of `dependents` (cleared).
  void release(std::vector<std::shared_ptr<hetero_task_state>>& dependents);
  void place(const std::shared_ptr<hetero_task_state>& task, int device_index);
  attempt_result attempt(const std::shared_ptr<hetero_task_state>& task);
  attempt_result attempt_range(const std::shared_ptr<hetero_task_state>& task);
  /// The engine's side of finishing a range copy: a staged read lands in the caller's memory.
  void end_range(hetero_task_state& task, const std::exception_ptr& failure);
  bool reserve_copies(hetero_task_state& task, int space);
  /// Evicts least recently used copies in `space` (not `user`'s, not pinned ones) until `bytes`
  /// fit under the pool's limit or, when the device itself refused, until `bytes` of copies
  /// were freed. Whether it freed anything (the caller allocates again, and calls again while
  /// it does). A copy whose write-back fails stays and joins `unwritable` (skipped from then
  /// on); that failure is thrown only when nothing else could be freed and no running task
  /// will free memory.
  bool make_room(int space, std::size_t bytes, const hetero_task_state& user, bool device_refused,
                 std::vector<const hetero_object_state*>& unwritable);
  /// Whether device memory in `space` may still be freed without the framework evicting more:
  /// a task pins a copy there, or an eviction was left to the engine thread.
  [[nodiscard]] bool memory_may_come_back(int space) const;
  void evict_copy(hetero_object_state& object, int space);
  /// A copy whose last write failed (a transfer, a range write, a kernel) holds undefined
  /// contents. Where another copy is valid and its last write did not fail, the failed copy
  /// becomes Invalid (the next use copies again; the lone valid copy left becomes Modified).
  /// Where no such copy is left (a failed kernel wrote the only valid one), it stays valid with
  /// undefined contents and its order kept, as the failed task's own report says. Whether a
  /// copy was made Invalid (a transfer failed: the task that waited for it fails with it).
  static bool settle_failed_copies(hetero_object_state& object);
  /// settle_failed_copies for each of the task's objects: whether any copy was made Invalid.
  static bool settle_copies_of(const hetero_task_state& task);
  /// Marks `object`'s copy in `space` as the most recently used (a device copy with a buffer:
  /// the last to be evicted).
  void touch(hetero_object_state& object, int space);
  /// Whether remove_from_devices() (a request evicting when granted) frees `copy`: a device copy
  /// no task pins (tasks that opted out of implicit ordering may still use one).
  [[nodiscard]] static bool evicted_when_granted(const memory_copy& copy);
  /// Whether evict_copy would block (a write-back, or operations still using the copy).
  [[nodiscard]] static bool eviction_would_wait(const hetero_object_state& object, int space);
  /// Operations still reading or writing the copy's (any copy's) memory: pending_on() without
  /// building the list.
  [[nodiscard]] static bool in_use(const memory_copy& copy);
  [[nodiscard]] static bool in_use(const hetero_object_state& object);
  /// Asks the engine thread for a drain: work a backend thread's drain left because it would
  /// have blocked (engine_thread_only_, deferred_).
  void request_engine_thread();
  /// Asks for `task` to be tried again when the first of `events` that `on` cannot wait for
  /// natively completes; false when none is pending. With `inputs` (events that produce data
  /// the task reads), a failed transfer fails the task: at once if it has failed already
  /// (throws), or when it completes (a failed kernel's output, left valid, does not).
  bool defer_until(const std::shared_ptr<hetero_task_state>& task,
                   const std::vector<device_event>& events, const device* on, bool inputs = false);
  device_event fetch_to_host(hetero_object_state& object);
  /// The device memory space holding the newest copy of an object whose host copy is Invalid.
  [[nodiscard]] static int valid_device_space(const hetero_object_state& object);
  /// The operations still reading or writing `copy`'s memory.
  [[nodiscard]] static std::vector<device_event> pending_on(const memory_copy& copy);
  void grant(const std::shared_ptr<hetero_task_state>& task);
  void end_held_requests();
  // By value: callers pass elements of containers these functions erase from.
  void finish(std::shared_ptr<hetero_task_state> task, const std::exception_ptr& failure);
  void fail(std::shared_ptr<hetero_task_state> task, const std::exception_ptr& failure);
  [[nodiscard]] std::vector<int> eligible_devices(const hetero_task_state& task) const;
  [[nodiscard]] std::size_t bytes_to_move(const hetero_task_state& task, int device_index) const;
  [[nodiscard]] device* device_of_space(int space) const;
  /// Whether every device with memory of its own copies to and from [memory, memory + bytes)
  /// directly.
  [[nodiscard]] bool direct_everywhere(const void* memory, std::size_t bytes) const noexcept;

  std::vector<std::unique_ptr<device>> devices_;
  std::vector<int> spaces_;                                 ///< memory space of each device
  std::vector<std::unique_ptr<device_memory_pool>> pools_;  ///< space s >= 1 is pools_[s - 1]
  std::unique_ptr<host_memory_pool> host_pool_;
  std::shared_ptr<hetero_scheduler> scheduler_;
  bool implicit_default_;
  bool dispatch_on_callers_;  ///< hetero_options::dispatch_on_callers

  mutable std::mutex mutex_;
  std::condition_variable all_done_;
  std::uint64_t next_task_id_ = 1;
  std::size_t open_tasks_ = 0;
  std::unordered_map<std::uint64_t, std::shared_ptr<hetero_task_state>> runnable_;
  /// Placed and not finished: what device callbacks name by id.
  std::unordered_map<std::uint64_t, std::shared_ptr<hetero_task_state>> active_;
  std::vector<std::shared_ptr<hetero_task_state>> host_runnable_;
  std::vector<std::shared_ptr<hetero_task_state>> retry_;
  std::vector<std::shared_ptr<hetero_task_state>> waiting_for_memory_;
  /// Device memory may have become available since waiting_for_memory_ was last tried (a copy
  /// freed or no longer pinned, or an eviction left to the engine thread's drain): they are
  /// retried only then, not at every pass.
  bool memory_may_be_free_ = false;
  bool eviction_left_to_engine_thread_ = false;
  std::vector<std::size_t> in_flight_;
  std::vector<unsigned> next_queue_;
  /// Per space, the objects with a buffer there, least recently used first: make_room evicts
  /// from the front. A list, not a scan and sort of every resident copy per allocation miss,
  /// which cost O(n log n) each once thousands of copies are resident (bench hetero_eviction).
  std::vector<std::list<hetero_object_state*>> resident_;
  burial graveyard_;  ///< dropped after unlocking by the drain (or release_host) that found it
  /// Left by backend threads' drains for the engine thread, which may block: tasks whose
  /// eviction would wait; objects whose memory is still in use and every spent source (counted
  /// as one burial while non-empty).
  std::vector<std::shared_ptr<hetero_task_state>> engine_thread_only_;
  burial deferred_;
  std::size_t burials_ = 0;
  bool shutting_down_ = false;  ///< graveyards being dropped
  bool ended_ = false;          ///< stop() was called: nothing may be submitted any more
  hetero_statistics statistics_;
  /// Kernel tasks that failed since the last wait_all(), with their failure, for wait_all() to
  /// report the first one no wait() saw (a task whose handle was dropped, say).
  /// (A record, not the task: the task's handle may be dropped without a wait(), and a kept task
  /// would keep the engine alive through its reference.)
  struct failure_record {
    std::exception_ptr failure;
    std::shared_ptr<std::atomic<bool>> seen;
  };
  std::vector<failure_record> failed_;
  std::size_t failed_kept_ = 0;  ///< failed_'s size after its last pruning

  std::mutex inbox_mutex_;
  std::condition_variable inbox_ready_;
  std::vector<std::function<void()>> inbox_;
  bool stopping_ = false;
  bool draining_ = false;             ///< some thread is running the inbox's work
  bool wants_engine_thread_ = false;  ///< a drain on the engine thread is needed
  std::size_t callbacks_outstanding_ = 0;
  std::thread thread_;
};

}  // namespace roam::detail
