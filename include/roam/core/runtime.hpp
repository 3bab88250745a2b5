// roam — starting and stopping the runtime, and the node the caller is on.
#pragma once

#include <roam/core/config.hpp>
#include <roam/transport/node_id.hpp>

#include <functional>
#include <type_traits>
#include <utility>

namespace roam {

namespace detail {
int run_spmd(const config& cfg, std::function<void()> body);
int run_spmd_config_error(const char* what);
}  // namespace detail

/// Starts the runtime, runs `body` once on every node (SPMD), and returns after every
/// node's `body` has returned and every message sent anywhere has been handled.
///
/// - inproc: `body` runs on one application thread per virtual node (the calling thread is
///   node 0's); under mpi it runs on the calling thread of every rank.
/// - Roam flags (`--roam-*`) are parsed from argv and removed; `body` may take
///   `(int argc, char** argv)` to see the remaining arguments.
/// - While `body` waits (futures, collectives, quiescence) its thread runs the node's work.
/// - An invalid setting prints a message and returns 2; --roam-help prints the settings
///   and returns 0 without running `body`. An exception escaping `body` stops the job.
/// - May be called several times in one process, one run at a time.
template <class Body>
int run(int argc, char** argv, Body&& body) {
  config cfg;
  try {
    cfg = config::from_args(argc, argv);
  } catch (const std::exception& e) {
    return detail::run_spmd_config_error(e.what());
  }
  if constexpr (std::is_invocable_v<Body&, int, char**>)
    return detail::run_spmd(cfg, [&body, argc, argv] { body(argc, argv); });
  else
    return detail::run_spmd(cfg, [&body] { body(); });
}

/// Same, with an explicit configuration (flags and environment are not read).
template <class Body>
int run(const config& cfg, Body&& body) {
  return detail::run_spmd(cfg, [&body] { body(); });
}

/// This thread's node. Throws roam::usage_error outside roam::run or on a foreign thread.
node_id this_node();
/// Number of nodes in the job.
node_id num_nodes();

/// Returns once no message is in flight or being handled anywhere, at some instant after
/// the call began (distributed termination detection: waves of message counters that must
/// agree twice in a row). Messages sent concurrently by other nodes' application threads
/// are not ordered with it. Not collective: any node may call it, any number of times.
void wait_quiescence();

}  // namespace roam
