// The heterogeneous framework's core runtime; see hetero_engine.hpp for its shape. Range copies
// are in hetero_range_copies.cpp, the default scheduler in transfer_aware_scheduler.cpp.
#include "hetero_engine.hpp"

#include <roam/base/detail/fatal.hpp>
#include <roam/base/detail/message_text.hpp>
#include "backends.hpp"
#include "when_all.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

namespace roam::detail {
namespace {

bool has_form(const kernel& k, backend b) {
  switch (b) {
    case backend::host:
      return k.host != nullptr;
    case backend::opencl:
      return k.opencl_body != nullptr;
    case backend::cuda:
      return k.cuda_function != nullptr;
  }
  return false;
}

/// What the devices' limits left out, for the error of a task no device can run.
std::string limits_note(const kernel_launch& launch,
                        const std::vector<std::unique_ptr<device>>& devices) {
  std::string note;
  for (const auto& d : devices) {
    if (auto beyond =
            beyond_device_limits(d->info(), *launch.function, launch.dims, launch.local_bytes);
        !beyond.empty()) {
      note += (note.empty() ? "; or it asks for " : "; and ") + beyond;
    }
  }
  return note;
}

std::string no_device_message(const kernel_launch& launch,
                              const std::vector<std::unique_ptr<device>>& devices) {
  return std::string("no device can run kernel '") + launch.function->name + "' (target " +
         to_string(launch.target) +
         (launch.target_backend ? std::string(", backend ") + to_string(*launch.target_backend)
                                : std::string()) +
         (launch.target_device >= 0 ? ", device " + std::to_string(launch.target_device)
                                    : std::string()) +
         "; the devices in use lack that type or the kernel's form for their backend" +
         limits_note(launch, devices) + ")";
}

}  // namespace

void engine_failed(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    fatal("the heterogeneous engine failed: " + exception_text(e));
  } catch (...) {
    fatal("the heterogeneous engine failed (unknown exception)");
  }
}

// ---- the engine's life --------------------------------------------------------------------

hetero_engine::hetero_engine(const hetero_options& options)
    : scheduler_(options.scheduler ? options.scheduler
                                   : std::make_shared<transfer_aware_scheduler>()),
      implicit_default_(options.implicit_dependencies),
      callers_drain_(options.dispatch_on_callers ? drainer::poster : drainer::engine_thread),
      executor_([this](std::vector<serial_executor::work>& batch, bool engine_thread) {
        run_batch(batch, engine_thread);
      }) {
  device_discovery_options discovery;
  discovery.backends = options.backends;
  discovery.memory_limit = options.memory_limit;
  discovery.host_threads = options.host_threads;
  discovery.host_separate_memory = options.host_separate_memory;
  discovery.compute_queues = options.compute_queues;
  devices_ = discover_devices(discovery);
  if (devices_.empty()) {
    throw device_error("no device found for the backends '" + options.backends + "'");
  }
  memory_.emplace(devices_, statistics_, executor_);
  in_flight_.assign(devices_.size(), 0);
  next_queue_.assign(devices_.size(), 0);
}

hetero_engine::~hetero_engine() {
  stop();
  for (auto& d : devices_) d->synchronize();
  // Before any of the engine's state goes: a late callback (the CUDA poller's) still reaches
  // the executor, and only queues (it was stopped).
  executor_.wait_for_callbacks();
}

void hetero_engine::start() { executor_.start("roam-hetero"); }

void hetero_engine::stop() {
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
  }
  // A drain running on a backend's thread may still hold task references: the engine must not
  // be destroyed there (it would join that thread), so stop() waits for it.
  executor_.stop();
}

void* hetero_engine::allocate_host(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  return memory_->allocate_host(bytes);
}

void hetero_engine::forget_object(hetero_object_state& object) {
  std::lock_guard lock(mutex_);
  memory_->forget(object);
}

void hetero_engine::kick() {
  executor_.post([] {}, callers_drain_);
}

void hetero_engine::run_batch(std::vector<serial_executor::work>& batch, bool engine_thread) {
  try {
    burial dead;  // dropped with the lock released
    {
      std::lock_guard lock(mutex_);
      if (engine_thread) {
        // What a backend thread's drain left because it would have had to block.
        for (auto& task : engine_thread_only_) retry_.push_back(std::move(task));
        engine_thread_only_.clear();
        memory_->engine_thread_takes_evictions();
        if (!deferred_.empty()) {
          dead = std::exchange(deferred_, {});
          --burials_;  // counted again below, with this drain's own
        }
      }
      for (auto& item : batch) item();
      dispatch();
      // A backend thread leaves to the engine thread what could block it: freeing an object
      // waits for the operations still using its memory (only the last reference frees
      // anything; most are handles of objects still alive), and a spent source's destructor
      // is the application's.
      const bool on_backend = serial_executor::must_not_block();
      const bool deferred_before = !deferred_.empty();
      for (auto& object : graveyard_.objects) {
        const bool blocks = on_backend && object.use_count() == 1 && object->in_use();
        (blocks ? deferred_ : dead).objects.push_back(std::move(object));
      }
      for (auto& source : graveyard_.sources)
        (on_backend ? deferred_ : dead).sources.push_back(std::move(source));
      graveyard_ = {};
      if (!deferred_before && !deferred_.empty()) ++burials_;  // one count for the set
      if (!deferred_.empty() && !engine_thread) executor_.want_engine_thread();
      if (!dead.empty()) ++burials_;
    }
    bury(dead);
  } catch (...) {
    // The work this drain took would never finish.
    engine_failed(std::current_exception());
  }
}

void hetero_engine::notify_when_done(const device_event& e, std::uint64_t task, when_done then) {
  // The callback runs on a backend's thread and captures no task or engine reference, only this
  // engine's address, kept valid by the executor's count of callbacks still to run. A drain it
  // starts does hold references for a while; stop() waits for it, so the engine's last reference
  // never drops on a thread the engine joins.
  executor_.expect_callback();
  // The thread that completes `e` runs the engine's work itself when it is one of roam's own
  // (the host backend's pool, the CUDA poller), saving a wake-up of the engine thread per
  // completion. Not an OpenCL implementation's callback thread: OpenCL leaves calls made from
  // its callbacks undefined, and the engine would enqueue work from there. Not an event without
  // a device (combined from several): which thread completes it is not known.
  const bool may_drain = callers_drain_ != drainer::engine_thread && e.state()->owner != nullptr &&
                         e.state()->owner->info().backend != backend::opencl;
  const drainer who = may_drain ? drainer::backend_thread : drainer::engine_thread;
  e.on_complete([this, task, then, who, state = std::weak_ptr(e.state())] {
    executor_.post_from_callback(
        [this, task, then, error = device_event(state.lock()).error()] {
          auto found = active_.find(task);
          if (found == active_.end()) return;
          auto waiting = found->second;
          if (then == when_done::finish) {
            finish(std::move(waiting), error);
          } else if (then == when_done::retry_unless_failed && error &&
                     settle_copies_of(*waiting)) {
            fail(std::move(waiting), error);  // a transfer it waited for did not happen
          } else {
            retry_.push_back(std::move(waiting));
          }
        },
        who);
  });
}

void hetero_engine::bury(burial& dead) {
  if (dead.empty()) return;
  dead = {};  // outside the lock: an object's destructor takes it
  std::lock_guard lock(mutex_);
  if (--burials_ == 0) all_done_.notify_all();
}

// ---- submission ------------------------------------------------------------------------------

std::shared_ptr<hetero_task_state> hetero_engine::new_task(task_kind kind) {
  auto task = make_pooled<hetero_task_state>();
  task->engine = shared_from_this();
  task->kind = std::move(kind);
  task->implicit = implicit_default_;
  return task;
}

void hetero_engine::submit(const std::shared_ptr<hetero_task_state>& task) {
  {
    std::lock_guard lock(mutex_);
    if (task->phase != task_phase::building) {
      throw device_error("a hetero_task was submitted twice");
    }
    if (ended_) {
      throw device_error(
          "the hetero_runtime has ended; no task, host request or range copy may start "
          "after it (objects outliving it may only be dropped)");
    }
    // From here on the task is being registered with its objects and dependencies: a failure
    // part-way would leave it half-registered, never to run, with every later task on those
    // objects waiting behind it.
    try {
      if (graph_.add(task)) make_runnable(task);
    } catch (...) {
      engine_failed(std::current_exception());
    }
  }
  kick();
}

bool hetero_engine::submitted(const hetero_task_state& task) const {
  std::lock_guard lock(mutex_);
  return task.phase != task_phase::building;
}

class hetero_engine::scheduler_view final : public hetero_scheduler_context {
 public:
  explicit scheduler_view(const hetero_engine& engine) : engine_(engine) {}
  std::span<const int> eligible_devices(std::uint64_t task) const override {
    return engine_.runnable_.at(task)->as_kernel()->eligible;
  }
  std::size_t bytes_to_move(std::uint64_t task, int device) const override {
    return engine_.bytes_to_move(*engine_.runnable_.at(task), device);
  }
  std::size_t tasks_in_flight(int device) const override { return engine_.in_flight_.at(device); }
  std::size_t device_depth(int device) const override {
    return 2 * std::size_t{engine_.devices_.at(device)->compute_queue_count()};
  }

 private:
  const hetero_engine& engine_;
};

void hetero_engine::make_runnable(const std::shared_ptr<hetero_task_state>& task) {
  task->phase = task_phase::runnable;
  auto* launch = task->as_kernel();
  if (launch == nullptr) {
    host_runnable_.push_back(task);
    return;
  }
  launch->eligible = eligible_devices(*launch);
  if (launch->eligible.empty()) {
    fail(task, std::make_exception_ptr(device_error(no_device_message(*launch, devices_))));
    return;
  }
  runnable_[task->id] = task;
  scheduler_->push(task->id, scheduler_view(*this));
}

void hetero_engine::release(std::vector<std::shared_ptr<hetero_task_state>>& dependents) {
  task_graph::release(dependents,
                      [this](const std::shared_ptr<hetero_task_state>& t) { make_runnable(t); });
}

std::vector<int> hetero_engine::eligible_devices(const kernel_launch& launch) const {
  std::vector<int> eligible;
  for (const auto& d : devices_) {
    const auto& info = d->info();
    if (launch.target_device >= 0 && info.index != launch.target_device) continue;
    if (launch.target_backend && info.backend != *launch.target_backend) continue;
    if (launch.target != device_type::any && info.type != launch.target) continue;
    if (!has_form(*launch.function, info.backend)) continue;
    if (!beyond_device_limits(info, *launch.function, launch.dims, launch.local_bytes).empty())
      continue;
    eligible.push_back(info.index);
  }
  return eligible;
}

std::size_t hetero_engine::bytes_to_move(const hetero_task_state& task, int device_index) const {
  const auto space = static_cast<std::size_t>(memory_->space_of(device_index));
  std::size_t bytes = 0;
  for (auto [object, access] : task.objects) {
    if (reads(access) && !object->states.valid(space)) bytes += object->bytes;
  }
  return bytes;
}

// ---- placing and starting tasks -------------------------------------------------------------

void hetero_engine::dispatch() {
  // Finishing a task inside a pass (an eviction request, a failure) can make others runnable:
  // pass again while passes still start work.
  while (dispatch_pass()) {
  }
}

bool hetero_engine::dispatch_pass() {
  bool progressed = !retry_.empty() || !host_runnable_.empty();
  auto again = std::move(retry_);
  retry_.clear();
  for (auto& task : again) {
    if (attempt(task) == attempt_result::no_memory) waiting_for_memory_.push_back(task);
  }
  auto hosts = std::move(host_runnable_);
  host_runnable_.clear();
  for (auto& task : hosts) {
    active_[task->id] = task;
    task->phase = task_phase::placed;
    task->device.store(-1);
    if (attempt(task) == attempt_result::no_memory) waiting_for_memory_.push_back(task);
  }
  if (memory_->take_maybe_free()) {
    auto waiting = std::move(waiting_for_memory_);
    waiting_for_memory_.clear();
    for (auto& task : waiting) {
      if (attempt(task) == attempt_result::no_memory) waiting_for_memory_.push_back(task);
    }
  }
  while (!runnable_.empty()) {
    auto placement = scheduler_->pop(scheduler_view(*this));
    if (!placement) break;
    progressed = true;
    auto found = runnable_.find(placement->task);
    if (found == runnable_.end()) {
      throw device_error("the hetero scheduler popped a task it was not given");
    }
    auto task = found->second;
    runnable_.erase(found);
    const auto& eligible = task->as_kernel()->eligible;
    if (std::find(eligible.begin(), eligible.end(), placement->device) == eligible.end()) {
      fail(task, std::make_exception_ptr(device_error(
                     "the hetero scheduler placed a task on a device that cannot run it")));
      continue;
    }
    place(task, placement->device);
  }
  return progressed;
}

void hetero_engine::place(const std::shared_ptr<hetero_task_state>& task, int device_index) {
  active_[task->id] = task;
  task->phase = task_phase::placed;
  task->device.store(device_index);
  ++in_flight_[device_index];
  if (attempt(task) == attempt_result::no_memory) waiting_for_memory_.push_back(task);
}

int hetero_engine::space_of_task(const hetero_task_state& task) const {
  return task.on_host() ? 0 : memory_->space_of(task.device.load());
}

bool hetero_engine::reserve_copies(hetero_task_state& task, int space) {
  if (task.pinned) return true;
  if (!memory_->reserve_and_pin(task.objects, space)) return false;
  task.pinned = true;
  return true;
}

bool hetero_engine::settle_copies_of(const hetero_task_state& task) {
  bool invalidated = false;
  for (auto [object, access] : task.objects)
    invalidated = object->settle_failed_copies() || invalidated;
  return invalidated;
}

bool hetero_engine::defer_until(const std::shared_ptr<hetero_task_state>& task,
                                const std::vector<device_event>& events, const device* on,
                                bool inputs) {
  for (const auto& e : events) {
    if (e.ready()) {
      if (inputs) {
        if (auto failure = e.error(); failure && settle_copies_of(*task))
          std::rethrow_exception(failure);
      }
      continue;
    }
    if (on != nullptr && e.state()->owner == on && e.state()->native != nullptr) continue;
    notify_when_done(e, task->id, inputs ? when_done::retry_unless_failed : when_done::retry);
    return true;
  }
  return false;
}

device_event hetero_engine::fetch_to_host(hetero_object_state& object) {
  auto& host = object.copies[0];
  if (object.states.valid(0)) return host.ready;
  const auto source = object.states.newest_device_space();
  auto& from = object.copies[source];
  // After the newest data is written, and after what still uses the host's stale contents
  // (attempt() deferred the task unless the source device waits for those natively).
  auto after = host.pending();
  after.push_back(from.ready);
  auto e = memory_->device_of_space(static_cast<int>(source))
               ->copy_to_host(device_queue::device_to_host(), object.host, from.buffer, 0,
                              object.bytes, after);
  ++statistics_.copies_to_host;
  statistics_.bytes_to_host += object.bytes;
  from.read_by(e);
  object.states.copied(source, 0);
  host.ready = e;
  return e;
}

hetero_engine::attempt_result hetero_engine::attempt(
    const std::shared_ptr<hetero_task_state>& task) {
  try {
    // A copy a failed transfer left stale (for this task or another) is copied again. The task
    // that waited for that transfer has failed already, with the device's error (when_done).
    (void)settle_copies_of(*task);
    if (task->as_range() != nullptr) return attempt_range(task);
    const int device_index = task->device.load();
    const int space = space_of_task(*task);
    device* d = task->on_host() ? nullptr : devices_[device_index].get();
    if (!reserve_copies(*task, space)) return attempt_result::no_memory;
    std::vector<device_event> inputs;  // what wrote the copies the task reads
    std::vector<device_event> after;   // the rest it is ordered after
    if (!prepare_copies(task, space, d, inputs, after)) return attempt_result::deferred;
    // A failed input fails the task (one this device waits for natively fails its operation).
    if (defer_until(task, inputs, d, true) || defer_until(task, after, d))
      return attempt_result::deferred;
    after.insert(after.end(), inputs.begin(), inputs.end());
    // What is done needs no wait; a failed kernel's output left valid is read as it is (the
    // failed task reports the failure), not carried into this launch.
    std::erase_if(after, [](const device_event& e) { return e.ready(); });
    if (task->on_host()) return start_host_request(task);
    return launch(task, device_index, after);
  } catch (...) {
    fail(task, std::current_exception());
    return attempt_result::started;
  }
}

bool hetero_engine::prepare_copies(const std::shared_ptr<hetero_task_state>& task, int space,
                                   device* d, std::vector<device_event>& inputs,
                                   std::vector<device_event>& after) {
  // Bring every copy the task reads up to date; stop at the first that needs an operation this
  // device cannot wait for natively (a copy to the host from another device).
  for (auto [object, access] : task->objects) {
    auto& copy = object->copies[space];
    memory_->touch(*object, space);
    if (reads(access) && !object->states.valid(space)) {
      // A copy overwrites its destination: operations still using the destination's old
      // contents (launched before their dependents were released, see task_graph) end first.
      auto& host = object->copies[0];
      if (!object->states.valid(0) && defer_until(task, host.pending(),
                                                  memory_->device_of_space(static_cast<int>(
                                                      object->states.newest_device_space()))))
        return false;
      auto host_ready = fetch_to_host(*object);
      if (space != 0) {
        if (defer_until(task, {host_ready}, nullptr, true)) return false;
        const auto before = copy.pending();
        if (defer_until(task, before, d)) return false;
        auto e = d->copy_to_device(device_queue::host_to_device(), copy.buffer, 0, object->host,
                                   object->bytes, before);
        ++statistics_.copies_to_device;
        statistics_.bytes_to_device += object->bytes;
        host.read_by(e);
        copy.written_by(e);  // e waited for its readers
        object->states.copied(0, static_cast<std::size_t>(space));
      }
    }
    (reads(access) ? inputs : after).push_back(copy.ready);
    if (writes(access)) after.insert(after.end(), copy.readers.begin(), copy.readers.end());
  }
  return true;
}

hetero_engine::attempt_result hetero_engine::launch(const std::shared_ptr<hetero_task_state>& task,
                                                    int device_index,
                                                    const std::vector<device_event>& after) {
  const auto& work = *task->as_kernel();
  const int space = memory_->space_of(device_index);
  device& d = *devices_[device_index];
  std::vector<kernel_argument> arguments;
  arguments.reserve(task->arguments.size());
  for (const auto& a : task->arguments) {
    if (!a.object) {
      arguments.push_back(a.value);
    } else if (space == 0) {
      arguments.push_back(kernel_argument::of_buffer({a.object->host, a.object->bytes}));
    } else {
      arguments.push_back(kernel_argument::of_buffer(a.object->copies[space].buffer));
    }
  }
  const unsigned queue = next_queue_[device_index]++ % d.compute_queue_count();
  auto e = d.launch(device_queue::compute(queue), *work.function, work.dims, arguments,
                    work.local_bytes, after);
  for (auto [object, access] : task->objects) {
    auto& copy = object->copies[space];
    if (writes(access)) {
      object->states.written(static_cast<std::size_t>(space));
      copy.written_by(e);
    } else {
      copy.read_by(e);
    }
  }
  task->phase = task_phase::running;
  release(task->launch_dependents);
  notify_when_done(e, task->id, when_done::finish);
  return attempt_result::started;
}

device_event hetero_engine::tasks_done(const hetero_object_state& object) const {
  std::vector<device_event> pending;
  {
    std::lock_guard lock(mutex_);
    for (const auto& user : object.users) {
      auto task = user.lock();
      if (task && task->phase != task_phase::complete) pending.emplace_back(task->finished);
    }
  }
  if (pending.empty()) return device_event::completed();
  // Their failures are theirs to report, not this wait's.
  return when_all(pending, false);
}

// ---- completion -------------------------------------------------------------------------------

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose, see the header.
void hetero_engine::finish(std::shared_ptr<hetero_task_state> task,
                           const std::exception_ptr& failure) {
  if (task->phase == task_phase::complete) return;
  const int device_index = task->device.load();
  if (task->pinned) {
    memory_->unpin(task->objects, space_of_task(*task));
    task->pinned = false;
  }
  const bool kernel_task = task->as_kernel() != nullptr;
  if (kernel_task && device_index >= 0 && task->phase != task_phase::runnable)
    --in_flight_[device_index];
  if (failure) {
    // The failed operation's event must not poison later work on these copies (a backend fails
    // operations that wait for a failed one). A copy a failed transfer left stale becomes
    // Invalid; one a failed kernel wrote keeps undefined contents, its order kept.
    for (auto [object, access] : task->objects) {
      (void)object->settle_failed_copies();
      for (auto& copy : object->copies)
        std::erase_if(copy.readers, [](const device_event& e) { return e.error() != nullptr; });
    }
  }
  if (auto* range = task->as_range()) end_range(*range, failure);
  if (failure && kernel_task) {
    ++statistics_.tasks_failed;
    task->failure_seen = failures_.record(failure);
  }
  task->phase = task_phase::complete;
  active_.erase(task->id);
  ++statistics_.tasks_completed;
  release(task->launch_dependents);  // a kernel that failed before its launch
  release(task->dependents);
  for (auto& a : task->arguments) {
    if (a.object) graveyard_.objects.push_back(std::move(a.object));
  }
  task->arguments.clear();
  task->objects.clear();
  if (auto* request = task->as_host_request()) request->granted->complete(failure);
  task->finished->complete(failure);
  graph_.completed();
  all_done_.notify_all();
}

void hetero_engine::fail(std::shared_ptr<hetero_task_state> task,
                         const std::exception_ptr& failure) {
  runnable_.erase(task->id);
  if (task->as_host_request() != nullptr && !task->arguments.empty())
    std::erase(task->arguments.front().object->host_requests, task);
  finish(std::move(task), failure);
}

void hetero_engine::wait_all() {
  if (auto [unseen, first] = wait_for_tasks(); unseen > 0) std::rethrow_exception(first);
}

std::pair<std::size_t, std::exception_ptr> hetero_engine::wait_for_tasks() {
  std::unique_lock lock(mutex_);
  all_done_.wait(lock, [&] { return graph_.open() == 0 && burials_ == 0; });
  return failures_.take_unseen();
}

void hetero_engine::shut_down() {
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
    end_held_requests();
  }
  kick();
  if (auto [unseen, first] = wait_for_tasks(); unseen > 0) {
    std::string what = "?";
    try {
      std::rethrow_exception(first);
    } catch (const std::exception& e) {
      what = exception_text(e);
    } catch (...) {
    }
    std::fprintf(stderr, "%s\n",
                 error_text(std::to_string(unseen) +
                            " hetero task(s) failed and no wait() or wait_all() saw it; the "
                            "first: " +
                            what)
                     .c_str());
  }
}

hetero_statistics hetero_engine::statistics() const {
  std::lock_guard lock(mutex_);
  auto s = statistics_;
  s.device_bytes_in_use += memory_->device_bytes_in_use();
  return s;
}

}  // namespace roam::detail
