// The engine's host requests (hetero_object::request, release, remove_from_devices): a task
// with no kernel that is granted once the object's host copy is current, and held until
// released. See hetero_engine.hpp.
#include <algorithm>

#include "hetero_engine.hpp"

namespace roam::detail {

hetero_future<void*> hetero_engine::request_host(const std::shared_ptr<hetero_object_state>& object,
                                                 data_access access, bool evict_when_granted) {
  host_request request;
  request.evict_when_granted = evict_when_granted;
  auto granted = request.granted;
  auto task = new_task(std::move(request));
  task->implicit = true;  // a host request always orders with the tasks around it
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
  return {device_event(std::move(granted)), [host] { return host; }};
}

hetero_engine::attempt_result hetero_engine::start_host_request(
    const std::shared_ptr<hetero_task_state>& task) {
  auto [object, access] = task->objects.front();
  if (task->evicts_when_granted() && serial_executor::must_not_block()) {
    for (std::size_t s = 1; s < object->copies.size(); ++s) {
      if (memory_manager::evicted_when_granted(object->copies[s]) &&
          memory_manager::eviction_would_wait(*object, static_cast<int>(s))) {
        engine_thread_only_.push_back(task);  // not retry_: this drain would only spin on it
        executor_.want_engine_thread();
        return attempt_result::deferred;
      }
    }
  }
  if (writes(access)) object->states.written(0);
  task->phase = task_phase::running;
  grant(task);
  return attempt_result::started;
}

void hetero_engine::grant(const std::shared_ptr<hetero_task_state>& task) {
  // Called once the host copy is current and, for a write, no longer read.
  auto* object = task->objects.front().first;
  if (task->evicts_when_granted()) {
    for (std::size_t s = 1; s < object->copies.size(); ++s) {
      if (memory_manager::evicted_when_granted(object->copies[s]))
        memory_->evict(*object, static_cast<int>(s));
    }
    std::erase(object->host_requests, task);
    finish(task, nullptr);
    return;
  }
  task->phase = task_phase::held;
  task->as_host_request()->granted->complete();
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

void hetero_engine::release_host(hetero_object_state& object) {
  burial dead;
  {
    std::lock_guard lock(mutex_);
    // The oldest request that is held: of two threads' reads, the younger may be granted
    // first (a copy's completion is seen by the younger's attempt before the older's retry).
    auto found = std::find_if(
        object.host_requests.begin(), object.host_requests.end(),
        [](const auto& t) { return !t->evicts_when_granted() && t->phase == task_phase::held; });
    if (found == object.host_requests.end()) {
      const bool requested = std::any_of(object.host_requests.begin(), object.host_requests.end(),
                                         [](const auto& t) { return !t->evicts_when_granted(); });
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
  kick();
}

}  // namespace roam::detail
