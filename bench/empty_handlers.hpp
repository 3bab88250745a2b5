// Streams of empty handlers for the benchmarks that measure per-handler cost.
#pragma once

#include <roam/roam.hpp>

#include <algorithm>

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

}  // namespace roam_bench
