// roam — the tracing layer's settings (--roam-trace and --roam-trace-limit).
#pragma once

#include <roam/base/settings.hpp>

#include <cstdint>
#include <string>

namespace roam::trace {

/// Whether and where a job writes its trace (docs/guide/tracing.md). Read and change them
/// through roam::config: `cfg.of<roam::trace::trace_settings>().file = "run.json"`, or
/// `cfg.set("trace", "run.json")`.
struct trace_settings {
  /// The Chrome/Perfetto trace-event JSON file the job writes at its end; empty: no trace
  /// (the default). Under MPI each rank writes `<file>.part<rank>` beside it and rank 0
  /// merges them into `<file>` (--roam-trace). A process's later runs (roam::run called
  /// again) with the same file write `<stem>.run2<extension>`, `<stem>.run3<extension>`
  /// and so on.
  std::string file;
  /// Events each thread records at most; later ones are counted, not kept, and the trace
  /// and standard error say so (--roam-trace-limit). An event takes 88 bytes while the job
  /// runs.
  std::uint32_t event_limit = 1000000;

  /// The layer's settings in the registry (roam/base/settings.hpp).
  static const detail::settings_group& registration();
};

}  // namespace roam::trace
