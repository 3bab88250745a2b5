// roam — operations on the running task (a handler or tasklet).
//
// Inside a handler or tasklet these suspend the task, never the thread: the worker runs
// other work meanwhile, and the task resumes on any worker of the same node. Called from a
// node's application thread they run the node's work until it is time to go on; from any
// other thread they fall back to std::this_thread.
#pragma once

#include <chrono>

namespace roam::this_task {

/// True when called from a handler or tasklet (code that can be suspended).
bool is_suspendable() noexcept;

/// Lets the node's other queued work run first. A yielding task is not picked again while
/// other work waits, but it is not starved by a stream of new work either (it gets at least
/// one in 32 picks of its node's threads).
void yield();

/// Suspends the task until `deadline` has passed (at least that long, possibly longer: a
/// resumed task waits for a free worker like any other work).
void sleep_until(std::chrono::steady_clock::time_point deadline);

/// Suspends the task for at least `duration`.
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& duration) {
  sleep_until(std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration));
}

}  // namespace roam::this_task
