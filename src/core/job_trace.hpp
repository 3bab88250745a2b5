// The trace of one job (--roam-trace): started when the process's runtime is made, written
// when it stops. The recorder (roam/trace/detail/recorder.hpp) keeps the events; this puts
// them in files, one part per process, and merges the parts on the first process.
#pragma once

#include <roam/core/config.hpp>
#include <roam/transport/transport.hpp>

#include <cstdint>
#include <fstream>
#include <string>

namespace roam::detail {

class message;
class node_runtime;

class job_trace {
 public:
  /// Starts recording when `cfg` names a trace file: opens this process's file (stops the
  /// job naming it when it cannot be written) and aligns the clocks (collective over the
  /// job's processes, before any traffic). Does nothing otherwise.
  job_trace(const config& cfg, transport& net, node_id rank, node_id ranks);
  job_trace(const job_trace&) = delete;
  job_trace& operator=(const job_trace&) = delete;
  ~job_trace();

  /// Stops recording and writes this process's events. Call once the job's threads have
  /// ended, before the processes' last barrier.
  void write_part();
  /// On the first process, after that barrier: appends the other processes' parts to the
  /// trace and removes them.
  void merge();

 private:
  bool active_ = false;
  std::string file_;
  node_id rank_ = 0;
  node_id ranks_ = 1;
  std::int64_t shift_ns_ = 0;
  std::ofstream out_;
};

/// The trace file of a process's `run`th roam::run traced to `file` (from 1): `file` for
/// the first, then "trace.run2.json" for "trace.json", "trace.run3" for "trace".
std::string trace_file_of_run(const std::string& file, unsigned run);

/// The file of process `rank`'s part of the trace `file` (the trace itself for rank 0).
std::string trace_part_file(const std::string& file, node_id rank);

/// How the trace names a handler registered as `registered`: the method a mobile object's
/// handler runs ("block::step" for "method_kind<&block::step, access::exclusive, block>"),
/// "install T" for an arriving object of type T, and the registered name otherwise.
std::string trace_handler_name(std::string registered);

/// Records that `m` leaves `from` (a flow to its handler). Tracing only; a forwarded message
/// keeps the flow of its first send.
void trace_send(node_runtime& from, message& m) noexcept;

/// Records the counters of node `n` (arrivals waiting for a worker, and the bytes its
/// process has not yet sent) at `now_ns` (the steady clock), at most once a millisecond per
/// node. Tracing only.
void trace_counters(node_runtime& n, std::uint64_t now_ns) noexcept;

}  // namespace roam::detail
