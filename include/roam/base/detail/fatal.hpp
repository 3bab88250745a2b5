// roam — ending the whole job on an error that cannot be returned to anyone.
#pragma once

#include <cstddef>
#include <string>

namespace roam::detail {

/// Stops the whole job: prints fatal_text(node, what) on stderr (the node of the calling
/// thread, when the node runtime has said how to find it) and makes every process exit with
/// a non-zero status (through the job-abort hook a transport sets). Never returns. A second
/// thread that calls it meanwhile waits for the end without printing; the same thread again
/// (its report failed) exits at once.
[[noreturn]] void fatal(const std::string& what) noexcept;

/// fatal() for signal handlers: writes the prepared `line` (no allocation) and ends the job.
[[noreturn]] void fatal_from_signal(const char* line, std::size_t bytes) noexcept;

/// Called by fatal() before the process exits, to take the other processes down too (the MPI
/// transport sets MPI_Abort). Thread-safe.
void set_job_abort_hook(void (*hook)()) noexcept;

/// Tells fatal() how to find the node of the calling thread (-1: none). Set by the node
/// runtime; layers below it report without a node. Thread-safe.
void set_fatal_node_lookup(long (*lookup)() noexcept) noexcept;

}  // namespace roam::detail
