// The heterogeneous framework's core runtime; see hetero_engine.hpp for its shape.
#include "hetero_engine.hpp"

#include <roam/base/detail/fatal.hpp>
#include <roam/base/detail/thread_name.hpp>
#include "backends.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

namespace roam::detail {
namespace {

bool reads(data_access a) { return a != data_access::write; }
bool writes(data_access a) { return a != data_access::read; }

data_access merge(data_access a, data_access b) {
  if (a == b) return a;
  return data_access::read_write;
}

/// Each object of a task once, with the union of its accesses.
std::vector<std::pair<hetero_object_state*, data_access>> unique_objects(
    const hetero_task_state& task) {
  std::vector<std::pair<hetero_object_state*, data_access>> objects;
  for (const auto& argument : task.arguments) {
    if (!argument.object) continue;
    auto found = std::find_if(objects.begin(), objects.end(),
                              [&](const auto& o) { return o.first == argument.object.get(); });
    if (found == objects.end()) {
      objects.emplace_back(argument.object.get(), argument.access);
    } else {
      found->second = merge(found->second, argument.access);
    }
  }
  return objects;
}

/// The engine's state cannot be trusted once its own work threw (an allocation, a plugged
/// scheduler): end the job loudly, through the one fatal-error path, rather than leave tasks
/// that never finish and waits that never return.
[[noreturn]] void engine_failed(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    fatal(std::string("the heterogeneous engine failed: ") + e.what());
  } catch (...) {
    fatal("the heterogeneous engine failed (unknown exception)");
  }
}

/// Forgets the finished reads of `copy` once their list has doubled (a list of events that
/// finished is harmless: every use skips ready events).
void drop_finished_readers(memory_copy& copy) {
  prune_when_doubled(copy.readers, copy.readers_kept,
                     [](const device_event& e) { return e.ready(); });
}

/// Completes when every one of `events` has: with the first failure among them when
/// `carry_failure`, successfully otherwise. Never earlier, even after a failure: what waits for
/// it may free memory the others still use.
device_event when_all(const std::vector<device_event>& events, bool carry_failure) {
  if (events.size() == 1 && carry_failure) return events.front();
  auto all = std::make_shared<device_event_state>();
  if (events.empty()) {
    all->complete();
    return device_event(std::move(all));
  }
  struct progress {
    std::atomic<std::size_t> left;
    std::mutex mutex;
    std::exception_ptr failure;
  };
  auto shared = std::make_shared<progress>();
  shared->left = events.size();
  for (const auto& event : events) {
    event.on_complete([all, shared, carry_failure, state = std::weak_ptr(event.state())] {
      if (carry_failure) {
        if (auto failure = device_event(state.lock()).error()) {
          std::lock_guard lock(shared->mutex);
          if (!shared->failure) shared->failure = failure;
        }
      }
      if (shared->left.fetch_sub(1) != 1) return;
      std::exception_ptr failure;
      {
        std::lock_guard lock(shared->mutex);
        failure = shared->failure;
      }
      all->complete(failure);
    });
  }
  return device_event(std::move(all));
}

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
std::string limits_note(const hetero_task_state& task,
                        const std::vector<std::unique_ptr<device>>& devices) {
  std::string note;
  for (const auto& d : devices) {
    if (auto beyond = beyond_device_limits(d->info(), *task.function, task.dims, task.local_bytes);
        !beyond.empty()) {
      note += (note.empty() ? "; or it asks for " : "; and ") + beyond;
    }
  }
  return note;
}

}  // namespace

// ---- objects ----------------------------------------------------------------------------

hetero_object_state::hetero_object_state(std::shared_ptr<hetero_engine> e, std::size_t size)
    : engine(std::move(e)), bytes(size), copies(engine->space_count()) {
  host = engine->allocate_host(bytes);
  copies[0].state = coherence::modified;
}

hetero_object_state::~hetero_object_state() { engine->forget_object(*this); }

void* hetero_engine::allocate_host(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  return host_pool_->allocate(bytes);
}

void hetero_engine::forget_object(hetero_object_state& object) {
  std::lock_guard lock(mutex_);
  for (std::size_t space = 0; space < object.copies.size(); ++space) {
    auto& copy = object.copies[space];
    wait_until_done(copy.ready);
    for (auto& r : copy.readers) wait_until_done(r);
    if (space != 0 && copy.buffer) {
      pools_[space - 1]->release(copy.buffer);
      resident_[space].erase(copy.recency);
      memory_may_be_free_ = true;
    }
  }
  host_pool_->release(object.host, object.bytes);
}

// ---- the engine's life --------------------------------------------------------------------

hetero_engine::hetero_engine(const hetero_options& options)
    : scheduler_(options.scheduler ? options.scheduler
                                   : std::make_shared<transfer_aware_scheduler>()),
      implicit_default_(options.implicit_dependencies),
      dispatch_on_callers_(options.dispatch_on_callers) {
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
  device* pinned_allocator = nullptr;
  for (auto& d : devices_) {
    if (d->info().shares_host_memory) {
      spaces_.push_back(0);
    } else {
      pools_.push_back(std::make_unique<device_memory_pool>(*d));
      spaces_.push_back(static_cast<int>(pools_.size()));
    }
    if (d->info().backend == backend::cuda && pinned_allocator == nullptr)
      pinned_allocator = d.get();
  }
  if (space_count() > 64) {  // settle_failed_copies keeps one bit per space
    throw device_error("more than 63 devices with memory of their own (" +
                       std::to_string(pools_.size()) + "); limit the backends in use");
  }
  host_pool_ = std::make_unique<host_memory_pool>(pinned_allocator);
  in_flight_.assign(devices_.size(), 0);
  next_queue_.assign(devices_.size(), 0);
  resident_.resize(space_count());
}

hetero_engine::~hetero_engine() {
  stop();
  for (auto& d : devices_) d->synchronize();
  std::unique_lock lock(inbox_mutex_);
  inbox_ready_.wait(lock, [&] { return callbacks_outstanding_ == 0; });
}

void hetero_engine::start() {
  thread_ = std::thread([this] { engine_loop(); });
  name_thread(thread_.native_handle(), "roam-hetero");
}

void hetero_engine::stop() {
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
  }
  {
    std::lock_guard lock(inbox_mutex_);
    stopping_ = true;
  }
  inbox_ready_.notify_all();
  if (thread_.joinable()) thread_.join();
  // A drain running on a backend's thread may still hold task references: the engine must not
  // be destroyed there (it would join that thread), so it is not released before they end.
  std::unique_lock lock(inbox_mutex_);
  inbox_ready_.wait(lock, [&] { return !draining_; });
}

namespace {
/// The engine whose work this thread is doing now (a drain in progress): work posted from
/// inside it joins the inbox instead of starting a second, nested drain.
thread_local const hetero_engine* draining_here = nullptr;
/// True while a backend's own thread (the host pool, the CUDA poller) drains: it must not block
/// on a device operation, which it may be the very thread to complete.
thread_local bool draining_on_backend = false;
}  // namespace

void hetero_engine::post(std::function<void()> item) {
  std::unique_lock lock(inbox_mutex_);
  inbox_.push_back(std::move(item));
  if (draining_ || draining_here == this) return;  // the drain in progress takes it
  if (!dispatch_on_callers_ || stopping_) {
    lock.unlock();
    inbox_ready_.notify_one();
    return;
  }
  draining_ = true;
  drain(lock);
}

void hetero_engine::drain(std::unique_lock<std::mutex>& inbox_lock) {
  const auto* outer = draining_here;
  draining_here = this;
  const bool engine_thread = std::this_thread::get_id() == thread_.get_id();
  try {
    while (!inbox_.empty()) {
      std::vector<std::function<void()>> items;
      items.swap(inbox_);
      inbox_lock.unlock();
      burial dead;  // dropped with the lock released
      {
        std::lock_guard lock(mutex_);
        if (engine_thread) {
          // What a backend thread's drain left because it would have had to block.
          for (auto& task : engine_thread_only_) retry_.push_back(std::move(task));
          engine_thread_only_.clear();
          if (eviction_left_to_engine_thread_) {  // the tasks waiting for it try again here
            eviction_left_to_engine_thread_ = false;
            memory_may_be_free_ = true;
          }
          if (!deferred_.empty()) {
            dead = std::exchange(deferred_, {});
            --burials_;  // counted again below, with this drain's own
          }
        }
        for (auto& item : items) item();
        dispatch();
        // A backend thread leaves to the engine thread what could block it: freeing an object
        // waits for the operations still using its memory (only the last reference frees
        // anything; most are handles of objects still alive), and a spent source's destructor
        // is the application's.
        const bool deferred_before = !deferred_.empty();
        for (auto& object : graveyard_.objects) {
          const bool blocks = draining_on_backend && object.use_count() == 1 && in_use(*object);
          (blocks ? deferred_ : dead).objects.push_back(std::move(object));
        }
        for (auto& source : graveyard_.sources)
          (draining_on_backend ? deferred_ : dead).sources.push_back(std::move(source));
        graveyard_ = {};
        if (!deferred_before && !deferred_.empty()) ++burials_;  // one count for the set
        if (!deferred_.empty() && !engine_thread) request_engine_thread();
        if (!dead.empty()) ++burials_;
      }
      bury(dead);
      inbox_lock.lock();
    }
  } catch (...) {
    // The work this drain took would never finish.
    engine_failed(std::current_exception());
  }
  draining_ = false;
  draining_here = outer;
  // The engine thread takes over what this drain could not do without blocking; stop() waits
  // for the last drain.
  if (wants_engine_thread_ || stopping_) inbox_ready_.notify_all();
}

void hetero_engine::notify_when_done(const device_event& e, std::uint64_t task, when_done then) {
  // The callback runs on a backend's thread and captures no task or engine reference, only this
  // engine's address, kept valid by the count of callbacks still to run. A drain it starts does
  // hold references for a while; stop() waits for it, so the engine's last reference never
  // drops on a thread the engine joins.
  {
    std::lock_guard lock(inbox_mutex_);
    ++callbacks_outstanding_;
  }
  // The thread that completes `e` runs the engine's work itself when it is one of roam's own
  // (the host backend's pool, the CUDA poller), saving a wake-up of the engine thread per
  // completion. Not an OpenCL implementation's callback thread: OpenCL leaves calls made from
  // its callbacks undefined, and the engine would enqueue work from there. Not an event without
  // a device (combined from several): which thread completes it is not known.
  const bool may_drain = dispatch_on_callers_ && e.state()->owner != nullptr &&
                         e.state()->owner->info().backend != backend::opencl;
  e.on_complete([this, task, then, may_drain, state = std::weak_ptr(e.state())] {
    std::unique_lock lock(inbox_mutex_);
    inbox_.push_back([this, task, then, error = device_event(state.lock()).error()] {
      auto found = active_.find(task);
      if (found == active_.end()) return;
      auto state = found->second;
      if (then == when_done::finish) {
        finish(std::move(state), error);
      } else if (then == when_done::retry_unless_failed && error && settle_copies_of(*state)) {
        fail(std::move(state), error);  // a transfer it waited for did not happen
      } else {
        retry_.push_back(std::move(state));
      }
    });
    if (!draining_ && draining_here != this) {
      if (may_drain && !stopping_) {
        draining_ = true;
        draining_on_backend = true;
        drain(lock);
        draining_on_backend = false;
      } else {
        inbox_ready_.notify_all();
      }
    }
    // The destructor waits for the last callback (the engine thread is stopped by then).
    if (--callbacks_outstanding_ == 0 && stopping_) inbox_ready_.notify_all();
  });
}

void hetero_engine::engine_loop() {
  std::unique_lock lock(inbox_mutex_);
  for (;;) {
    inbox_ready_.wait(lock, [&] {
      return stopping_ || (!draining_ && (!inbox_.empty() || wants_engine_thread_));
    });
    if (draining_ || (inbox_.empty() && !wants_engine_thread_)) {
      if (stopping_) return;
      continue;
    }
    if (wants_engine_thread_ && inbox_.empty()) inbox_.push_back([] {});  // one pass
    wants_engine_thread_ = false;
    draining_ = true;
    drain(lock);
  }
}

void hetero_engine::bury(burial& dead) {
  if (dead.empty()) return;
  dead = {};  // outside the lock: an object's destructor takes it
  std::lock_guard lock(mutex_);
  if (--burials_ == 0) all_done_.notify_all();
}

// ---- submission and dependencies ----------------------------------------------------------

std::shared_ptr<hetero_task_state> hetero_engine::new_task() {
  auto task = make_pooled<hetero_task_state>();
  task->engine = shared_from_this();
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
      register_task(task);
    } catch (...) {
      engine_failed(std::current_exception());
    }
  }
  post([] {});
}

bool hetero_engine::submitted(const hetero_task_state& task) const {
  std::lock_guard lock(mutex_);
  return task.phase != task_phase::building;
}

void hetero_engine::register_task(const std::shared_ptr<hetero_task_state>& task) {
  task->id = next_task_id_++;
  task->objects = unique_objects(*task);
  for (auto [object, access] : task->objects) {
    prune_when_doubled(object->users, object->users_kept,
                       [](const std::weak_ptr<hetero_task_state>& user) {
                         auto alive = user.lock();
                         return !alive || alive->phase == task_phase::complete;
                       });
    object->users.push_back(task);
  }
  task->phase = task_phase::blocked;
  ++open_tasks_;
  // Only this submission adds `task` to other tasks' lists, and nothing else is added to them
  // meanwhile (the lock is held): if `task` is in a list already, it is the last element. So a
  // dependency named twice costs O(1), not a search through everything waiting on `on`.
  auto already_in = [&](const std::vector<std::shared_ptr<hetero_task_state>>& list) {
    return !list.empty() && list.back() == task;
  };
  auto depend_on = [&](const std::shared_ptr<hetero_task_state>& on) {
    if (!on || on == task || on->phase == task_phase::complete) return;
    if (already_in(on->dependents)) return;
    on->dependents.push_back(task);
    ++task->unfinished;
  };
  for (auto& d : task->dependencies) depend_on(d);
  task->dependencies.clear();
  // Implicit dependencies on a kernel end when it is launched, not when it finishes: launching
  // records its event on every copy it uses (copy.ready, copy.readers), and attempt() puts those
  // events in the dependent's `after` list, so a chain of kernels and transfers on one device
  // is queued there at once instead of one engine wake-up per link. A held host request has no
  // such event: its dependents wait for its release. Neither can remove_from_devices() go
  // early: it frees copies only when no task still pins them.
  auto order_after = [&](const std::shared_ptr<hetero_task_state>& on) {
    if (!on || is_host_request(*on) || task->evict_when_granted) {
      depend_on(on);
      return;
    }
    if (on == task || on->phase == task_phase::running || on->phase == task_phase::complete) return;
    if (already_in(on->launch_dependents)) return;
    on->launch_dependents.push_back(task);
    ++task->unfinished;
  };
  if (task->implicit) {
    for (auto [object, access] : task->objects) {
      prune_when_doubled(object->readers_since_writer, object->readers_since_writer_kept,
                         [](const auto& r) { return r->phase == task_phase::complete; });
      if (object->last_writer && object->last_writer->phase == task_phase::complete)
        object->last_writer.reset();
      order_after(object->last_writer);
      if (writes(access)) {
        for (auto& r : object->readers_since_writer) order_after(r);
        object->readers_since_writer.clear();
        object->readers_since_writer_kept = 0;
        object->last_writer = task;
      } else {
        object->readers_since_writer.push_back(task);
      }
    }
  }
  if (task->unfinished == 0) make_runnable(task);
}

class hetero_engine::scheduler_view final : public hetero_scheduler_context {
 public:
  explicit scheduler_view(const hetero_engine& engine) : engine_(engine) {}
  std::span<const int> eligible_devices(std::uint64_t task) const override {
    return engine_.runnable_.at(task)->eligible;
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
  if (task->function == nullptr) {
    host_runnable_.push_back(task);
    return;
  }
  task->eligible = eligible_devices(*task);
  if (task->eligible.empty()) {
    fail(task,
         std::make_exception_ptr(device_error(
             std::string("no device can run kernel '") + task->function->name + "' (target " +
             to_string(task->target) +
             (task->target_backend ? std::string(", backend ") + to_string(*task->target_backend)
                                   : std::string()) +
             (task->target_device >= 0 ? ", device " + std::to_string(task->target_device)
                                       : std::string()) +
             "; the devices in use lack that type or the kernel's form for their backend" +
             limits_note(*task, devices_) + ")")));
    return;
  }
  runnable_[task->id] = task;
  scheduler_->push(task->id, scheduler_view(*this));
}

std::vector<int> hetero_engine::eligible_devices(const hetero_task_state& task) const {
  std::vector<int> eligible;
  for (const auto& d : devices_) {
    const auto& info = d->info();
    if (task.target_device >= 0 && info.index != task.target_device) continue;
    if (task.target_backend && info.backend != *task.target_backend) continue;
    if (task.target != device_type::any && info.type != task.target) continue;
    if (!has_form(*task.function, info.backend)) continue;
    if (!beyond_device_limits(info, *task.function, task.dims, task.local_bytes).empty()) continue;
    eligible.push_back(info.index);
  }
  return eligible;
}

std::size_t hetero_engine::bytes_to_move(const hetero_task_state& task, int device_index) const {
  const int space = spaces_[device_index];
  std::size_t bytes = 0;
  for (auto [object, access] : task.objects) {
    if (reads(access) && object->copies[space].state == coherence::invalid) bytes += object->bytes;
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
  if (memory_may_be_free_) {
    memory_may_be_free_ = false;
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
    if (std::find(task->eligible.begin(), task->eligible.end(), placement->device) ==
        task->eligible.end()) {
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

device* hetero_engine::device_of_space(int space) const {
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (spaces_[i] == space && space != 0) return devices_[i].get();
  return nullptr;
}

bool hetero_engine::reserve_copies(hetero_task_state& task, int space) {
  if (task.pinned) return true;
  if (space != 0) {
    auto& pool = *pools_[space - 1];
    // What can never fit fails the task instead of leaving it waiting for memory forever: an
    // object larger than the device, or objects that together are (each copy takes its size
    // class, and make_room never evicts the task's own).
    std::size_t together = 0;
    for (auto [object, access] : task.objects) {
      if (size_class(object->bytes) > pool.limit()) {
        throw out_of_device_memory("an object of " + std::to_string(object->bytes) +
                                   " bytes does not fit in device " +
                                   device_of_space(space)->info().name + " (" +
                                   std::to_string(pool.limit()) + " bytes usable)");
      }
      together += size_class(object->bytes);
    }
    if (together > pool.limit()) {
      throw out_of_device_memory("a task's " + std::to_string(task.objects.size()) +
                                 " objects need " + std::to_string(together) + " bytes of device " +
                                 device_of_space(space)->info().name + " at once (" +
                                 std::to_string(pool.limit()) + " bytes usable)");
    }
    for (auto [object, access] : task.objects) {
      auto& copy = object->copies[space];
      if (copy.buffer) continue;
      // Until it fits or nothing more can be evicted: the device may refuse after the limit is
      // met, or still refuse once `bytes` were freed (another process took memory meanwhile).
      auto buffer = pool.allocate(object->bytes);
      std::vector<const hetero_object_state*> unwritable;  // copies whose write-back failed
      while (!buffer &&
             make_room(space, size_class(object->bytes), task, pool.device_refused(), unwritable))
        buffer = pool.allocate(object->bytes);
      if (!buffer && pool.device_refused() && !memory_may_come_back(space)) {
        // Nothing of the framework's is left to evict there and no running task will free
        // any: waiting would be forever.
        throw out_of_device_memory(
            "device " + device_of_space(space)->info().name + " refused " +
            std::to_string(size_class(object->bytes)) + " bytes with " +
            std::to_string(pool.in_use()) + " bytes of " + std::to_string(pool.limit()) +
            " in use by the framework and nothing left to evict (another process or rank "
            "holds the rest of its memory?)");
      }
      if (!buffer) return false;
      copy.buffer = *buffer;
      copy.state = coherence::invalid;
      copy.recency = resident_[space].insert(resident_[space].end(), object);
    }
  }
  for (auto [object, access] : task.objects) ++object->copies[space].pins;
  task.pinned = true;
  return true;
}

bool hetero_engine::make_room(int space, std::size_t bytes, const hetero_task_state& user,
                              bool device_refused,
                              std::vector<const hetero_object_state*>& unwritable) {
  auto& pool = *pools_[space - 1];
  // Under the limit, room is what the pool counts; when the device itself refused, at least
  // `bytes` of copies go back to it (the pool frees its cache before it asks the device again).
  std::size_t freed = 0;
  std::exception_ptr write_back_failure;
  auto fits = [&] {
    return device_refused ? freed >= bytes : pool.in_use() + bytes <= pool.limit();
  };
  // Least recently used first. Pinned copies (tasks in flight) were mostly used recently and
  // sit near the back, so the walk passes few of them before it finds what it can evict.
  auto& order = resident_[space];
  for (auto next = order.begin(); next != order.end() && !fits();) {
    auto* object = *next++;  // before evict_copy erases the entry
    if (object->copies[space].pins > 0) continue;
    if (std::any_of(user.objects.begin(), user.objects.end(),
                    [&](const auto& o) { return o.first == object; }))
      continue;
    if (draining_on_backend && eviction_would_wait(*object, space)) {
      eviction_left_to_engine_thread_ = true;
      request_engine_thread();  // it evicts this one, blocking as it may
      continue;
    }
    if (std::find(unwritable.begin(), unwritable.end(), object) != unwritable.end()) continue;
    try {
      evict_copy(*object, space);
      freed += size_class(object->bytes);
    } catch (const device_error&) {
      // Its write-back failed: the copy stays, still the valid one, and is not tried again for
      // this allocation. Another may do; if none does, the task waits while running tasks may
      // free memory, and fails with this error otherwise.
      unwritable.push_back(object);
      if (!write_back_failure) write_back_failure = std::current_exception();
    }
  }
  if (freed == 0 && write_back_failure && !fits() && !memory_may_come_back(space))
    std::rethrow_exception(write_back_failure);
  return freed > 0;
}

bool hetero_engine::memory_may_come_back(int space) const {
  return eviction_left_to_engine_thread_ ||
         std::any_of(resident_[space].begin(), resident_[space].end(),
                     [&](const hetero_object_state* o) { return o->copies[space].pins > 0; });
}

void hetero_engine::touch(hetero_object_state& object, int space) {
  auto& copy = object.copies[static_cast<std::size_t>(space)];
  if (space == 0 || !copy.buffer) return;
  auto& order = resident_[static_cast<std::size_t>(space)];
  order.splice(order.end(), order, copy.recency);
}

bool hetero_engine::evicted_when_granted(const memory_copy& copy) {
  return copy.buffer && copy.pins == 0;
}

bool hetero_engine::in_use(const memory_copy& copy) {
  return !copy.ready.ready() || std::any_of(copy.readers.begin(), copy.readers.end(),
                                            [](const device_event& r) { return !r.ready(); });
}

bool hetero_engine::in_use(const hetero_object_state& object) {
  return std::any_of(object.copies.begin(), object.copies.end(),
                     [](const memory_copy& copy) { return in_use(copy); });
}

bool hetero_engine::eviction_would_wait(const hetero_object_state& object, int space) {
  const auto& copy = object.copies[space];
  return copy.state == coherence::modified || in_use(copy);
}

void hetero_engine::request_engine_thread() {
  // Under mutex_; the flag is read under inbox_mutex_ by the engine thread, and set again here
  // until a drain of the engine thread has taken the work.
  std::lock_guard lock(inbox_mutex_);
  wants_engine_thread_ = true;
}

bool hetero_engine::settle_failed_copies(hetero_object_state& object) {
  // Each event read once: backend threads may complete (or fail) one while this runs, and the
  // decision must rest on one picture (the engine has at most 64 memory spaces).
  std::uint64_t failed = 0;
  bool alternative = false;  // a valid copy whose last write did not fail
  for (std::size_t s = 0; s < object.copies.size(); ++s) {
    const auto& copy = object.copies[s];
    const bool this_failed = copy.ready.error() != nullptr;
    if (this_failed) failed |= std::uint64_t{1} << s;
    alternative = alternative || (!this_failed && copy.state != coherence::invalid);
  }
  if (failed == 0) return false;
  bool invalidated = false;
  for (std::size_t s = 0; s < object.copies.size(); ++s) {
    if ((failed & (std::uint64_t{1} << s)) == 0) continue;
    auto& copy = object.copies[s];
    copy.ready = device_event();  // done: it orders nothing any more
    if (copy.state == coherence::invalid || !alternative) continue;
    copy.state = coherence::invalid;
    invalidated = true;
  }
  if (!invalidated) return false;
  const auto valid =
      std::count_if(object.copies.begin(), object.copies.end(),
                    [](const memory_copy& c) { return c.state != coherence::invalid; });
  if (valid == 1) {
    for (auto& copy : object.copies)
      if (copy.state != coherence::invalid) copy.state = coherence::modified;  // the only one
  }
  return true;
}

bool hetero_engine::settle_copies_of(const hetero_task_state& task) {
  bool invalidated = false;
  for (auto [object, access] : task.objects)
    invalidated = settle_failed_copies(*object) || invalidated;
  return invalidated;
}

void hetero_engine::evict_copy(hetero_object_state& object, int space) {
  (void)settle_failed_copies(object);  // a copy whose transfer failed needs no write-back
  auto& copy = object.copies[space];
  if (copy.state == coherence::modified) {
    // The only valid copy: write it back to the host first. Rare (the device is full), so the
    // engine simply waits for the copy rather than tracking a half-evicted state (and for what
    // still uses the host's stale contents, which the copy overwrites).
    for (const auto& e : pending_on(object.copies[0])) wait_until_done(e);
    auto* d = device_of_space(space);
    auto back = d->copy_to_host(device_queue::device_to_host(), object.host, copy.buffer, 0,
                                object.bytes, std::span(&copy.ready, 1));
    ++statistics_.copies_to_host;
    statistics_.bytes_to_host += object.bytes;
    // Not back.wait(): inside a roam handler that would suspend the fiber with the lock held.
    wait_until_done(back);
    if (auto failure = back.error()) std::rethrow_exception(failure);
    object.copies[0].state = coherence::modified;
    object.copies[0].ready = device_event();
  }
  wait_until_done(copy.ready);
  for (auto& r : copy.readers) wait_until_done(r);
  copy.readers.clear();
  copy.readers_kept = 0;
  pools_[space - 1]->release(copy.buffer);
  copy.buffer = {};
  copy.state = coherence::invalid;
  copy.ready = device_event();
  resident_[space].erase(copy.recency);
  memory_may_be_free_ = true;
  ++statistics_.evictions;
  // Another copy stays valid: a Modified copy was written back above, and a Shared or Invalid
  // one always has a valid copy elsewhere.
}

std::vector<device_event> hetero_engine::pending_on(const memory_copy& copy) {
  std::vector<device_event> pending;
  if (!copy.ready.ready()) pending.push_back(copy.ready);
  for (const auto& r : copy.readers)
    if (!r.ready()) pending.push_back(r);
  return pending;
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

int hetero_engine::valid_device_space(const hetero_object_state& object) {
  int source = -1;
  for (std::size_t s = 1; s < object.copies.size(); ++s) {
    if (object.copies[s].state == coherence::modified) source = static_cast<int>(s);
    if (source < 0 && object.copies[s].state == coherence::shared) source = static_cast<int>(s);
  }
  if (source < 0) throw device_error("a hetero object has no valid copy (internal error)");
  return source;
}

device_event hetero_engine::fetch_to_host(hetero_object_state& object) {
  auto& host = object.copies[0];
  if (host.state != coherence::invalid) return host.ready;
  const int source = valid_device_space(object);
  auto& from = object.copies[source];
  auto* d = device_of_space(source);
  // After the newest data is written, and after what still uses the host's stale contents
  // (attempt() deferred the task unless the source device waits for those natively).
  auto after = pending_on(host);
  after.push_back(from.ready);
  auto e = d->copy_to_host(device_queue::device_to_host(), object.host, from.buffer, 0,
                           object.bytes, after);
  ++statistics_.copies_to_host;
  statistics_.bytes_to_host += object.bytes;
  drop_finished_readers(from);
  from.readers.push_back(e);
  if (from.state == coherence::modified) from.state = coherence::shared;
  host.state = coherence::shared;
  host.ready = e;
  return e;
}

hetero_engine::attempt_result hetero_engine::attempt(
    const std::shared_ptr<hetero_task_state>& task) {
  try {
    // A copy a failed transfer left stale (for this task or another) is copied again. The task
    // that waited for that transfer has failed already, with the device's error (when_done).
    (void)settle_copies_of(*task);
    if (task->range) return attempt_range(task);
    const int device_index = task->device.load();
    const bool host_request = task->function == nullptr;
    const int space = host_request ? 0 : spaces_[device_index];
    device* d = host_request ? nullptr : devices_[device_index].get();
    if (!reserve_copies(*task, space)) return attempt_result::no_memory;
    const auto& objects = task->objects;

    // Bring every copy the task reads up to date; stop at the first that needs an operation
    // this device cannot wait for natively (a copy to the host from another device).
    std::vector<device_event> inputs;  // what wrote the copies the task reads
    std::vector<device_event> after;   // the rest it is ordered after
    for (auto [object, access] : objects) {
      auto& copy = object->copies[space];
      touch(*object, space);
      if (reads(access) && copy.state == coherence::invalid) {
        // A copy overwrites its destination: operations still using the destination's old
        // contents (launched before their dependents were released, see submit()) end first.
        auto& host = object->copies[0];
        if (host.state == coherence::invalid &&
            defer_until(task, pending_on(host), device_of_space(valid_device_space(*object))))
          return attempt_result::deferred;
        auto host_ready = fetch_to_host(*object);
        if (space != 0) {
          if (defer_until(task, {host_ready}, nullptr, true)) return attempt_result::deferred;
          const auto before = pending_on(copy);
          if (defer_until(task, before, d)) return attempt_result::deferred;
          auto e = d->copy_to_device(device_queue::host_to_device(), copy.buffer, 0, object->host,
                                     object->bytes, before);
          copy.readers.clear();  // e waited for them
          copy.readers_kept = 0;
          ++statistics_.copies_to_device;
          statistics_.bytes_to_device += object->bytes;
          drop_finished_readers(host);
          host.readers.push_back(e);
          if (host.state == coherence::modified) host.state = coherence::shared;
          copy.ready = e;
          copy.state = coherence::shared;
        }
      }
      (reads(access) ? inputs : after).push_back(copy.ready);
      if (writes(access)) after.insert(after.end(), copy.readers.begin(), copy.readers.end());
    }
    // A failed input fails the task (one this device waits for natively fails its operation).
    if (defer_until(task, inputs, d, true) || defer_until(task, after, d))
      return attempt_result::deferred;
    after.insert(after.end(), inputs.begin(), inputs.end());
    // What is done needs no wait; a failed kernel's output left valid is read as it is (the
    // failed task reports the failure), not carried into this launch.
    std::erase_if(after, [](const device_event& e) { return e.ready(); });

    if (host_request && task->evict_when_granted && draining_on_backend) {
      auto* object = objects.front().first;
      for (std::size_t s = 1; s < object->copies.size(); ++s) {
        if (evicted_when_granted(object->copies[s]) &&
            eviction_would_wait(*object, static_cast<int>(s))) {
          engine_thread_only_.push_back(task);  // not retry_: this drain would only spin on it
          request_engine_thread();
          return attempt_result::deferred;
        }
      }
    }
    if (host_request) {
      auto [object, access] = objects.front();
      if (writes(access)) {
        for (std::size_t s = 1; s < object->copies.size(); ++s)
          object->copies[s].state = coherence::invalid;
        object->copies[0].state = coherence::modified;
      }
      task->phase = task_phase::running;
      grant(task);
      return attempt_result::started;
    }

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
    const unsigned queue = next_queue_[device_index]++ % d->compute_queue_count();
    auto e = d->launch(device_queue::compute(queue), *task->function, task->dims, arguments,
                       task->local_bytes, after);
    for (auto [object, access] : objects) {
      auto& copy = object->copies[space];
      if (writes(access)) {
        for (std::size_t s = 0; s < object->copies.size(); ++s)
          if (static_cast<int>(s) != space) object->copies[s].state = coherence::invalid;
        copy.state = coherence::modified;
        copy.ready = e;
        copy.readers.clear();
        copy.readers_kept = 0;
      } else {
        drop_finished_readers(copy);
        copy.readers.push_back(e);
      }
    }
    task->phase = task_phase::running;
    release(task->launch_dependents);
    notify_when_done(e, task->id, when_done::finish);
    return attempt_result::started;
  } catch (...) {
    fail(task, std::current_exception());
    return attempt_result::started;
  }
}

// ---- range copies ----------------------------------------------------------------------------

bool hetero_engine::direct_everywhere(const void* memory, std::size_t bytes) const noexcept {
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    if (spaces_[d] != 0 && !devices_[d]->direct_host_transfers(memory, bytes)) return false;
  }
  return true;
}

device_event hetero_engine::copy_range(const std::shared_ptr<hetero_object_state>& object,
                                       bool write, std::size_t offset, std::size_t bytes,
                                       void* data, std::shared_ptr<void> owner) {
  auto task = new_task();
  task->implicit = true;  // ordered like a task of its access, whatever the default
  range_copy range;
  range.write = write;
  range.offset = offset;
  range.bytes = bytes;
  // Staging costs a memcpy of the range: only where a device needs it (CUDA and pageable memory)
  // or, for a write, where the caller keeps its memory (a span).
  const bool staged = (write && !owner) || !direct_everywhere(data, bytes);
  if (staged) {
    std::lock_guard lock(mutex_);
    range.staging = host_pool_->allocate(bytes);  // counted when the copy starts
  }
  if (!write) {
    range.user = data;
  } else if (staged) {
    std::memcpy(range.staging, data, bytes);  // the caller may reuse its memory at once
    range.source = range.staging;
    owner.reset();  // here, not under the engine's lock
  } else {
    range.source = data;
    range.owner = std::move(owner);
  }
  task->range = std::move(range);
  task_argument argument;
  argument.object = object;
  argument.access = write ? data_access::read_write : data_access::read;
  task->arguments.push_back(std::move(argument));
  submit(task);
  return device_event(task->finished);
}

hetero_engine::attempt_result hetero_engine::attempt_range(
    const std::shared_ptr<hetero_task_state>& task) {
  auto& range = *task->range;
  auto* object = task->objects.front().first;
  auto& host = object->copies[0];
  auto* host_bytes = static_cast<std::byte*>(object->host) + range.offset;
  std::vector<device_event> issued;
  auto note_transfer = [&](std::size_t space) {
    touch(*object, static_cast<int>(space));
    ++statistics_.range_transfers;
    statistics_.range_bytes += range.bytes;
  };
  if (!range.write) {
    if (host.state != coherence::invalid) {
      // The host's copy is valid once what writes it (a fetch from a device) is done.
      if (defer_until(task, {host.ready}, nullptr, true)) return attempt_result::deferred;
      std::memcpy(range.user, host_bytes, range.bytes);
      if (range.staging != nullptr) host_pool_->release(range.staging, range.bytes);
      range.staging = nullptr;
    } else {
      // Straight from the device holding the newest copy: only these bytes move, and no copy
      // changes state.
      const int space = valid_device_space(*object);
      auto& copy = object->copies[space];
      auto* d = device_of_space(space);
      if (defer_until(task, {copy.ready}, d, true)) return attempt_result::deferred;
      auto e = d->copy_to_host(device_queue::device_to_host(),
                               range.staging != nullptr ? range.staging : range.user, copy.buffer,
                               range.offset, range.bytes, std::span(&copy.ready, 1));
      drop_finished_readers(copy);
      copy.readers.push_back(e);
      note_transfer(static_cast<std::size_t>(space));
      if (range.staging != nullptr) ++statistics_.staged_range_copies;
      issued.push_back(std::move(e));
    }
  } else {
    // Every valid copy takes the bytes, so no state changes (a device-resident object stays
    // there). What still reads or writes a copy's old contents ends first: on a device by the
    // transfer waiting for it there, on the host before the memcpy. All waits are checked
    // before anything is written, so a deferred attempt has changed nothing.
    if (host.state != coherence::invalid && defer_until(task, pending_on(host), nullptr))
      return attempt_result::deferred;
    for (std::size_t space = 1; space < object->copies.size(); ++space) {
      auto& copy = object->copies[space];
      if (copy.state != coherence::invalid &&
          defer_until(task, pending_on(copy), device_of_space(static_cast<int>(space))))
        return attempt_result::deferred;
    }
    (void)settle_failed_copies(*object);  // a copy a transfer just failed to fill takes no bytes
    if (range.staging != nullptr) ++statistics_.staged_range_copies;
    bool updated = false;  // some copy holds the new bytes
    if (host.state != coherence::invalid) {
      std::memcpy(host_bytes, range.source, range.bytes);
      updated = true;
    }
    std::vector<std::size_t> failed;
    std::exception_ptr failure;
    for (std::size_t space = 1; space < object->copies.size(); ++space) {
      auto& copy = object->copies[space];
      if (copy.state == coherence::invalid) continue;
      auto* d = device_of_space(static_cast<int>(space));
      try {
        auto e = d->copy_to_device(device_queue::host_to_device(), copy.buffer, range.offset,
                                   range.source, range.bytes, pending_on(copy));
        copy.ready = e;
        copy.readers.clear();  // e waited for them
        copy.readers_kept = 0;
        note_transfer(space);
        issued.push_back(std::move(e));
        updated = true;
      } catch (...) {
        failure = std::current_exception();
        failed.push_back(space);
      }
    }
    if (failure) {
      // Nothing written: the write fails and every copy keeps the old contents.
      if (!updated) std::rethrow_exception(failure);
      // A copy that missed the bytes is stale: Invalid; a lone survivor is the newest copy.
      for (auto space : failed) object->copies[space].state = coherence::invalid;
      auto valid =
          std::count_if(object->copies.begin(), object->copies.end(),
                        [](const memory_copy& c) { return c.state != coherence::invalid; });
      if (valid == 1) {
        for (auto& c : object->copies)
          if (c.state != coherence::invalid) c.state = coherence::modified;
      }
      // The task fails once the transfers already issued end (they read the source).
      auto failed_event = std::make_shared<device_event_state>();
      failed_event->complete(failure);
      issued.emplace_back(std::move(failed_event));
    }
  }
  task->phase = task_phase::running;
  release(task->launch_dependents);
  if (issued.empty()) {
    finish(task, nullptr);
  } else {
    notify_when_done(when_all(issued, true), task->id, when_done::finish);
  }
  return attempt_result::started;
}

void hetero_engine::end_range(hetero_task_state& task, const std::exception_ptr& failure) {
  auto& range = *task.range;
  if (range.owner) graveyard_.sources.push_back(std::move(range.owner));
  if (range.staging == nullptr) return;
  if (!range.write && !failure) std::memcpy(range.user, range.staging, range.bytes);
  host_pool_->release(range.staging, range.bytes);
  range.staging = nullptr;
}

// ---- host requests ---------------------------------------------------------------------------

hetero_future<void*> hetero_engine::request_host(const std::shared_ptr<hetero_object_state>& object,
                                                 data_access access, bool evict_when_granted) {
  auto task = new_task();
  task->implicit = true;  // a host request always orders with the tasks around it
  task->evict_when_granted = evict_when_granted;
  task->granted = make_pooled<device_event_state>();
  task_argument argument;
  argument.object = object;
  argument.access = access;
  task->arguments.push_back(std::move(argument));
  {
    std::lock_guard lock(mutex_);
    object->host_requests.push_back(task);
  }
  try {
    submit(task);
  } catch (...) {
    // Not submitted (the runtime has ended): a request left in the list would never end, and
    // it and the object would hold each other for ever.
    std::lock_guard lock(mutex_);
    std::erase(object->host_requests, task);
    throw;
  }
  auto* host = object->host;
  return {device_event(task->granted), [host] { return host; }};
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

void hetero_engine::grant(const std::shared_ptr<hetero_task_state>& task) {
  // attempt() calls this once the host copy is current and, for a write, no longer read.
  auto* object = task->objects.front().first;
  if (task->evict_when_granted) {
    for (std::size_t s = 1; s < object->copies.size(); ++s) {
      if (evicted_when_granted(object->copies[s])) evict_copy(*object, static_cast<int>(s));
    }
    std::erase(object->host_requests, task);
    finish(task, nullptr);
    return;
  }
  task->phase = task_phase::held;
  task->granted->complete();
  if (shutting_down_) end_held_requests();
}

void hetero_engine::end_held_requests() {
  std::vector<std::shared_ptr<hetero_task_state>> held;
  for (const auto& [id, task] : active_)
    if (task->phase == task_phase::held) held.push_back(task);
  for (auto& task : held) {
    std::erase(task->arguments.front().object->host_requests, task);
    finish(task, nullptr);
  }
}

void hetero_engine::shut_down() {
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
    end_held_requests();
  }
  post([] {});
  if (auto [unseen, first] = wait_for_tasks(); unseen > 0) {
    std::string what = "?";
    try {
      std::rethrow_exception(first);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr,
                 "roam: %zu hetero task(s) failed and no wait() or wait_all() saw it; the "
                 "first: %s\n",
                 unseen, what.c_str());
  }
}

void hetero_engine::release_host(hetero_object_state& object) {
  burial dead;
  {
    std::lock_guard lock(mutex_);
    // The oldest request that is held: of two threads' reads, the younger may be granted
    // first (a copy's completion is seen by the younger's attempt before the older's retry).
    auto found = std::find_if(
        object.host_requests.begin(), object.host_requests.end(),
        [](const auto& t) { return !t->evict_when_granted && t->phase == task_phase::held; });
    if (found == object.host_requests.end()) {
      const bool requested = std::any_of(object.host_requests.begin(), object.host_requests.end(),
                                         [](const auto& t) { return !t->evict_when_granted; });
      throw device_error(requested ? "hetero_object::release() before its request was "
                                     "granted (wait for the future)"
                                   : "hetero_object::release() without a request");
    }
    auto task = *found;
    object.host_requests.erase(found);
    try {
      finish(task, nullptr);  // makes its dependents runnable: the scheduler's push may throw
    } catch (...) {
      engine_failed(std::current_exception());
    }
    dead = std::exchange(graveyard_, {});
    if (!dead.empty()) ++burials_;
  }
  bury(dead);
  post([] {});
}

// ---- completion -------------------------------------------------------------------------------

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose, see the header.
void hetero_engine::finish(std::shared_ptr<hetero_task_state> task,
                           const std::exception_ptr& failure) {
  if (task->phase == task_phase::complete) return;
  const int device_index = task->device.load();
  if (task->pinned) {
    const int space = task->function == nullptr ? 0 : spaces_[device_index];
    for (auto [object, access] : task->objects) {
      // A device copy no task pins any more may be evicted for a task waiting for memory.
      if (--object->copies[space].pins == 0 && space != 0) memory_may_be_free_ = true;
    }
    task->pinned = false;
  }
  if (task->function != nullptr && device_index >= 0 && task->phase != task_phase::runnable)
    --in_flight_[device_index];
  if (failure) {
    // The failed operation's event must not poison later work on these copies (a backend fails
    // operations that wait for a failed one). A copy a failed transfer left stale becomes
    // Invalid; one a failed kernel wrote keeps undefined contents, its order kept.
    for (auto [object, access] : task->objects) {
      (void)settle_failed_copies(*object);
      for (auto& copy : object->copies)
        std::erase_if(copy.readers, [](const device_event& e) { return e.error() != nullptr; });
    }
  }
  if (task->range) end_range(*task, failure);
  if (failure && task->function != nullptr) {
    ++statistics_.tasks_failed;
    // A program that only ever calls wait() never empties the list: the failures wait() saw
    // go when it has doubled.
    prune_when_doubled(failed_, failed_kept_, [](const failure_record& f) {
      return f.seen->load(std::memory_order_acquire);
    });
    task->failure_seen = std::make_shared<std::atomic<bool>>(false);
    failed_.push_back({failure, task->failure_seen});
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
  if (task->granted) task->granted->complete(failure);
  task->finished->complete(failure);
  --open_tasks_;
  all_done_.notify_all();
}

void hetero_engine::release(std::vector<std::shared_ptr<hetero_task_state>>& dependents) {
  for (auto& dependent : dependents) {
    if (--dependent->unfinished == 0 && dependent->phase == task_phase::blocked)
      make_runnable(dependent);
  }
  dependents.clear();
}

void hetero_engine::fail(std::shared_ptr<hetero_task_state> task,
                         const std::exception_ptr& failure) {
  runnable_.erase(task->id);
  if (is_host_request(*task) && !task->arguments.empty())
    std::erase(task->arguments.front().object->host_requests, task);
  finish(std::move(task), failure);
}

void hetero_engine::wait_all() {
  if (auto [unseen, first] = wait_for_tasks(); unseen > 0) std::rethrow_exception(first);
}

std::pair<std::size_t, std::exception_ptr> hetero_engine::wait_for_tasks() {
  std::unique_lock lock(mutex_);
  all_done_.wait(lock, [&] { return open_tasks_ == 0 && burials_ == 0; });
  std::size_t unseen = 0;
  std::exception_ptr first;
  for (const auto& f : failed_) {
    if (f.seen->load(std::memory_order_acquire)) continue;
    if (unseen++ == 0) first = f.failure;
  }
  failed_.clear();
  failed_kept_ = 0;
  return {unseen, first};
}

hetero_statistics hetero_engine::statistics() const {
  std::lock_guard lock(mutex_);
  auto s = statistics_;
  for (const auto& pool : pools_) s.device_bytes_in_use += pool->in_use();
  return s;
}

// ---- the default scheduler ------------------------------------------------------------------

}  // namespace roam::detail

namespace roam {

void transfer_aware_scheduler::push(std::uint64_t task, const hetero_scheduler_context&) {
  runnable_.push_back(task);
}

std::optional<hetero_placement> transfer_aware_scheduler::pop(
    const hetero_scheduler_context& context) {
  if (runnable_.empty()) return std::nullopt;
  const std::uint64_t task = runnable_.front();
  int best = -1;
  std::size_t best_bytes = 0;
  std::size_t best_load = 0;
  for (int d : context.eligible_devices(task)) {
    const std::size_t load = context.tasks_in_flight(d);
    if (load >= context.device_depth(d)) continue;
    const std::size_t bytes = context.bytes_to_move(task, d);
    if (best < 0 || bytes < best_bytes || (bytes == best_bytes && load < best_load)) {
      best = d;
      best_bytes = bytes;
      best_load = load;
    }
  }
  if (best < 0) return std::nullopt;
  runnable_.pop_front();
  return hetero_placement{task, best};
}

}  // namespace roam
