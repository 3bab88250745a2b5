// The hetero tasks' dependency graph; see task_graph.hpp.
#include "task_graph.hpp"

#include <algorithm>

namespace roam::detail {
namespace {

data_access merge(data_access a, data_access b) { return a == b ? a : data_access::read_write; }

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

}  // namespace

bool task_graph::add(const std::shared_ptr<hetero_task_state>& task) {
  task->id = next_id_++;
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
  ++open_;
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
  // records its event on every copy it uses (copy.ready, copy.readers), and the engine's
  // attempt() puts those events in the dependent's `after` list, so a chain of kernels and
  // transfers on one device is queued there at once instead of one engine wake-up per link. A
  // held host request has no such event: its dependents wait for its release. Neither can
  // remove_from_devices() go early: it frees copies only when no task still pins them.
  auto order_after = [&](const std::shared_ptr<hetero_task_state>& on) {
    if (!on || on->as_host_request() != nullptr || task->evicts_when_granted()) {
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
  return task->unfinished == 0;
}

}  // namespace roam::detail
