#pragma once
// The kernel tasks that failed since the last wait_all(), with their failures, so that
// wait_all() reports the first one no wait() saw (a task whose handle was dropped, say). A
// record, not the task: the task's handle may be dropped without a wait(), and a kept task
// would keep the engine alive through its reference. Called under the engine's lock.
#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "hetero_object_state.hpp"

namespace roam::detail {

class failure_log {
 public:
  /// Records `failure`; the flag returned is set by the wait() that rethrows it.
  std::shared_ptr<std::atomic<bool>> record(std::exception_ptr failure) {
    // A program that only ever calls wait() never empties the log: the failures wait() saw go
    // when it has doubled.
    prune_when_doubled(records_, kept_, [](const entry& f) { return seen(f); });
    auto flag = std::make_shared<std::atomic<bool>>(false);
    records_.push_back({std::move(failure), flag});
    return flag;
  }
  /// How many recorded failures no wait() saw, and the first of them; forgets them all.
  std::pair<std::size_t, std::exception_ptr> take_unseen() {
    std::size_t unseen = 0;
    std::exception_ptr first;
    for (const auto& f : records_) {
      if (seen(f)) continue;
      if (unseen++ == 0) first = f.failure;
    }
    records_.clear();
    kept_ = 0;
    return {unseen, first};
  }

 private:
  struct entry {
    std::exception_ptr failure;
    std::shared_ptr<std::atomic<bool>> seen;
  };
  static bool seen(const entry& f) { return f.seen->load(std::memory_order_acquire); }

  std::vector<entry> records_;
  std::size_t kept_ = 0;  ///< records_' size after its last pruning
};

}  // namespace roam::detail
