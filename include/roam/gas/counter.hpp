// roam — a counter that a group of operations signals as they complete (PPL's counter).
//
//   roam::gas::counter done;
//   for (...) done.add(roam::gas::put(p + i, &x[i], 1));
//   done.wait();   // every put is in place (or the first error is thrown)
#pragma once

#include <roam/task/future.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>

namespace roam::gas {

/// Counts operations (any futures) until they complete. The operations keep its state
/// alive, so a counter may be destroyed with operations still pending (their completion is
/// then lost, not an error).
///
/// Threading: add(), pending() and wait() may be called from any thread of the node,
/// concurrently; operations may complete on any thread.
class counter {
 public:
  counter();
  counter(const counter&) = delete;
  counter& operator=(const counter&) = delete;

  /// Counts `operation` until it completes; its value is dropped, its error kept for wait().
  template <class T>
  void add(future<T> operation) {
    auto state = roam::detail::release_state(std::move(operation));
    started();
    state->on_ready(
        [s = state_, state] { finished(*s, state->has_error() ? state->error() : nullptr); });
  }

  /// Operations added and not complete yet.
  [[nodiscard]] std::size_t pending() const;

  /// Waits until every operation added so far has completed (running the node's work
  /// meanwhile, as future::wait); then throws the first error any of them had since the last
  /// wait(), if one did. Operations added while it waits are waited for too.
  void wait();

  struct state;

 private:
  void started();
  static void finished(state& s, std::exception_ptr error) noexcept;
  std::shared_ptr<state> state_;
};

}  // namespace roam::gas
