#pragma once
// The hetero tasks' dependency graph: explicit dependencies (hetero_task::add_dependency) and
// the implicit ones that order tasks by their accesses to shared objects (a writer after every
// earlier reader and writer, a reader after the last writer). Called under the engine's lock.
#include <cstdint>
#include <memory>
#include <vector>

#include "hetero_task_state.hpp"

namespace roam::detail {

class task_graph {
 public:
  /// Gives a submitted `task` its id and its objects, and links it after what it must follow.
  /// Whether it can run now (no unfinished dependency).
  bool add(const std::shared_ptr<hetero_task_state>& task);
  /// `task` ended: one fewer open task.
  void completed() noexcept { --open_; }
  /// Tasks submitted and not yet complete.
  [[nodiscard]] std::size_t open() const noexcept { return open_; }

  /// One fewer unfinished dependency for each of `dependents` (cleared); `ready(dependent)` for
  /// each that has none left and was waiting for them.
  template <class Ready>
  static void release(std::vector<std::shared_ptr<hetero_task_state>>& dependents, Ready ready) {
    for (auto& dependent : dependents) {
      if (--dependent->unfinished == 0 && dependent->phase == task_phase::blocked) ready(dependent);
    }
    dependents.clear();
  }

 private:
  std::uint64_t next_id_ = 1;
  std::size_t open_ = 0;
};

}  // namespace roam::detail
