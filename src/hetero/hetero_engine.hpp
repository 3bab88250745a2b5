#pragma once
// The heterogeneous framework's core runtime (thesis Fig. 48, middle layer, and §5.1.3): it
// places runnable tasks on devices, issues the transfers the MSI protocol requires, launches
// kernels, grants host requests, runs range copies, and finishes tasks. Its parts, each in its
// own file: the objects' copies and their MSI states (hetero_object_state, object_coherence),
// the kinds of task (hetero_task_state), the dependency graph (task_graph), memory and eviction
// (memory_manager), failure records (failure_log) and who runs the engine's work
// (serial_executor).
//
// Locking: one mutex (`mutex_`) guards all objects, tasks and pools. Device completion callbacks
// post to the executor's inbox (its own mutex); the drain that runs the posted work takes
// `mutex_`.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "failure_log.hpp"
#include "hetero_object_state.hpp"
#include "hetero_task_state.hpp"
#include "memory_manager.hpp"
#include "roam/hetero/hetero_runtime.hpp"
#include "roam/hetero/hetero_task.hpp"
#include "serial_executor.hpp"
#include "task_graph.hpp"

namespace roam::detail {

/// What the engine drops only after releasing its lock: objects (their destructors take it) and
/// range writes' spent sources (the application's destructors, which may block or call in).
struct burial {
  std::vector<std::shared_ptr<hetero_object_state>> objects;
  std::vector<std::shared_ptr<void>> sources;
  [[nodiscard]] bool empty() const noexcept { return objects.empty() && sources.empty(); }
};

/// The engine's state cannot be trusted once its own work threw (an allocation, a plugged
/// scheduler): this ends the job loudly, through the one fatal-error path, rather than leave
/// tasks that never finish and waits that never return.
[[noreturn]] void engine_failed(const std::exception_ptr& failure);

class hetero_engine : public std::enable_shared_from_this<hetero_engine> {
 public:
  explicit hetero_engine(const hetero_options& options);
  hetero_engine(const hetero_engine&) = delete;
  hetero_engine& operator=(const hetero_engine&) = delete;
  ~hetero_engine();

  void start();
  void stop();

  [[nodiscard]] const std::vector<std::unique_ptr<device>>& devices() const { return devices_; }
  [[nodiscard]] std::size_t space_count() const { return memory_->space_count(); }
  [[nodiscard]] int space_of(int device_index) const { return memory_->space_of(device_index); }

  void* allocate_host(std::size_t bytes);
  void forget_object(hetero_object_state& object);

  /// A task of `kind`, not yet submitted.
  std::shared_ptr<hetero_task_state> new_task(task_kind kind);
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
    return object.states.state(static_cast<std::size_t>(space));
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

  /// Wakes the engine's work after a change a drain must see (a submission, a release).
  void kick();
  /// When `e` completes, whichever thread drains next does `then` with the task of this id.
  void notify_when_done(const device_event& e, std::uint64_t task, when_done then);
  /// The executor's batch: under mutex_, the posted work, then dispatch(), then what the drain
  /// found to drop (dropped after unlocking).
  void run_batch(std::vector<serial_executor::work>& batch, bool engine_thread);
  /// Drops what the engine held (counted in burials_); wait_all() waits for this, so their
  /// memory is freed by then.
  void bury(burial& dead);
  void dispatch();
  /// One pass over the retry, host-request, memory-waiting and runnable tasks; true if it
  /// started anything.
  bool dispatch_pass();
  void make_runnable(const std::shared_ptr<hetero_task_state>& task);
  /// One fewer unfinished dependency for each of `dependents` (cleared).
  void release(std::vector<std::shared_ptr<hetero_task_state>>& dependents);
  void place(const std::shared_ptr<hetero_task_state>& task, int device_index);
  attempt_result attempt(const std::shared_ptr<hetero_task_state>& task);
  /// Brings the copies a task reads up to date in `space` and collects what it must follow
  /// (the writes of what it reads in `inputs`, the rest in `after`). False when it was
  /// deferred until something it cannot wait for on `d` completes.
  bool prepare_copies(const std::shared_ptr<hetero_task_state>& task, int space, device* d,
                      std::vector<device_event>& inputs, std::vector<device_event>& after);
  attempt_result launch(const std::shared_ptr<hetero_task_state>& task, int device_index,
                        const std::vector<device_event>& after);
  attempt_result attempt_range(const std::shared_ptr<hetero_task_state>& task);
  attempt_result read_range(const std::shared_ptr<hetero_task_state>& task,
                            std::vector<device_event>& issued);
  attempt_result write_range(const std::shared_ptr<hetero_task_state>& task,
                             std::vector<device_event>& issued);
  /// The engine's side of finishing a range copy: a staged read lands in the caller's memory.
  void end_range(range_copy& range, const std::exception_ptr& failure);
  bool reserve_copies(hetero_task_state& task, int space);
  /// settle_failed_copies for each of the task's objects: whether any copy was made Invalid.
  static bool settle_copies_of(const hetero_task_state& task);
  /// Asks for `task` to be tried again when the first of `events` that `on` cannot wait for
  /// natively completes; false when none is pending. With `inputs` (events that produce data
  /// the task reads), a failed transfer fails the task: at once if it has failed already
  /// (throws), or when it completes (a failed kernel's output, left valid, does not).
  bool defer_until(const std::shared_ptr<hetero_task_state>& task,
                   const std::vector<device_event>& events, const device* on, bool inputs = false);
  /// Copies the newest device copy to the host unless the host's is valid; its event.
  device_event fetch_to_host(hetero_object_state& object);
  /// A host request whose copy is current: granted (or, for remove_from_devices(), evicting).
  attempt_result start_host_request(const std::shared_ptr<hetero_task_state>& task);
  void grant(const std::shared_ptr<hetero_task_state>& task);
  void end_held_requests();
  // By value: callers pass elements of containers these functions erase from.
  void finish(std::shared_ptr<hetero_task_state> task, const std::exception_ptr& failure);
  void fail(std::shared_ptr<hetero_task_state> task, const std::exception_ptr& failure);
  [[nodiscard]] std::vector<int> eligible_devices(const kernel_launch& launch) const;
  [[nodiscard]] std::size_t bytes_to_move(const hetero_task_state& task, int device_index) const;
  /// The memory space a placed task works in.
  [[nodiscard]] int space_of_task(const hetero_task_state& task) const;

  std::vector<std::unique_ptr<device>> devices_;
  std::shared_ptr<hetero_scheduler> scheduler_;
  bool implicit_default_;
  drainer callers_drain_;  ///< hetero_options::dispatch_on_callers: poster, else engine_thread

  mutable std::mutex mutex_;
  std::condition_variable all_done_;
  hetero_statistics statistics_;
  serial_executor executor_;  ///< after devices_: destroyed first, waiting for their callbacks
  std::optional<memory_manager> memory_;
  task_graph graph_;
  std::unordered_map<std::uint64_t, std::shared_ptr<hetero_task_state>> runnable_;
  /// Placed and not finished: what device callbacks name by id.
  std::unordered_map<std::uint64_t, std::shared_ptr<hetero_task_state>> active_;
  std::vector<std::shared_ptr<hetero_task_state>> host_runnable_;
  std::vector<std::shared_ptr<hetero_task_state>> retry_;
  std::vector<std::shared_ptr<hetero_task_state>> waiting_for_memory_;
  std::vector<std::size_t> in_flight_;
  std::vector<unsigned> next_queue_;
  burial graveyard_;  ///< dropped after unlocking by the drain (or release_host) that found it
  /// Left by backend threads' drains for the engine thread, which may block: tasks whose
  /// eviction would wait; objects whose memory is still in use and every spent source (counted
  /// as one burial while non-empty).
  std::vector<std::shared_ptr<hetero_task_state>> engine_thread_only_;
  burial deferred_;
  std::size_t burials_ = 0;
  bool shutting_down_ = false;  ///< graveyards being dropped
  bool ended_ = false;          ///< stop() was called: nothing may be submitted any more
  failure_log failures_;
};

}  // namespace roam::detail
