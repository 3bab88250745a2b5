// Streams of empty handlers for the benchmarks that measure per-handler cost.
#pragma once

#include "one_node.hpp"

#include <roam/roam.hpp>

#include <algorithm>
#include <chrono>

namespace roam_bench {

inline void empty_handler() {}

/// A handler that sends `remaining` empty handlers to its own node: a batch, then itself for
/// the rest, so at most two batches are queued however many handlers run (memory stays
/// bounded and the measurement is not one of page faults).
inline void send_empty_handlers(long remaining) {
  constexpr long batch = 1024;
  for (long i = 0; i < std::min(batch, remaining); ++i)
    roam::send(roam::this_node(), empty_handler);
  if (remaining > batch) roam::send(roam::this_node(), send_empty_handlers, remaining - batch);
}

/// Seconds one node (inproc, `workers` workers; the application thread only waits) takes
/// to run what `start(worker)` queues for each worker, until quiescence: the second of two
/// rounds (the first warms pools and caches). `setup()` runs once, inside the run, first.
template <class Setup, class Start>
double seconds_to_quiescence(unsigned workers, Setup setup, Start start) {
  double seconds = 0;
  roam::run(one_node_config(workers, false), [&] {
    setup();
    for (int round = 0; round < 2; ++round) {
      const auto begin = std::chrono::steady_clock::now();
      for (unsigned w = 0; w < workers; ++w) start(w);
      roam::wait_quiescence();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    }
  });
  return seconds;
}

}  // namespace roam_bench
