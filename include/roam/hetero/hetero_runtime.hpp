#pragma once
// roam::hetero_runtime: the heterogeneous framework's context (thesis Fig. 48, middle layer):
// its devices, its engine thread (dependencies, scheduling, transfers, completions), memory
// pools, and the scheduler. Create one before any hetero_object or hetero_task; it is usable
// on its own, without roam::run.
//
// Configuration: hetero_options, or the settings registered in the settings registry
// (`--roam-help` lists them): ROAM_HETERO_BACKENDS, ROAM_HETERO_MEMORY_LIMIT,
// ROAM_HETERO_HOST_THREADS, ROAM_HETERO_HOST_MEMORY, ROAM_HETERO_QUEUES and
// ROAM_HETERO_DISPATCH. The flags --roam-hetero-* given to roam::run reach a hetero_runtime
// made inside the run's body (through from_environment()); one made before roam::run reads
// the environment only. In a program that links the framework, roam::run also rejects a
// malformed ROAM_HETERO_* value at start-up (a config_error, as for every setting).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "roam/base/settings.hpp"
#include "roam/hetero/device.hpp"
#include "roam/hetero/scheduler.hpp"

namespace roam {

namespace detail {
class hetero_engine;
}

/// How a hetero_runtime is set up; from_environment() gives the configured values.
struct hetero_options {
  std::string backends;               ///< "host,opencl,cuda" (empty: all built)
  std::size_t memory_limit = 0;       ///< per device, bytes (0: the device's memory)
  unsigned host_threads = 0;          ///< 0: hardware threads
  bool host_separate_memory = false;  ///< host backend behaves as a device with memory of its own
  unsigned compute_queues = 2;        ///< per device
  bool implicit_dependencies = true;  ///< infer dependencies from access modes
  /// The engine's work (dependencies, placement, issuing transfers and kernels, completions)
  /// runs on the thread that submits a task or observes a completion, when no other thread is
  /// running it: no wake-up of the engine thread per step. OpenCL completions still go through
  /// the engine thread. false: everything goes through the engine thread.
  bool dispatch_on_callers = true;
  std::shared_ptr<hetero_scheduler> scheduler;  ///< null: transfer_aware_scheduler

  /// Inside roam::run, the options its settings give (flags --roam-hetero-*, else the
  /// environment); elsewhere the defaults overridden by the ROAM_HETERO_* variables. Malformed
  /// values throw roam::device_error with code errc::config.
  [[nodiscard]] static hetero_options from_environment();
  /// The framework's settings in the registry (roam/base/settings.hpp).
  static const detail::settings_group& registration();
};

/// Counters since the runtime started (for tests, tuning and the benchmarks).
struct hetero_statistics {
  std::uint64_t tasks_completed = 0;   ///< tasks, host requests and range copies that ended
  std::uint64_t copies_to_device = 0;  ///< the protocol's whole-object copies to a device
  std::uint64_t copies_to_host = 0;    ///< whole-object copies to the host, write-backs included
  std::uint64_t bytes_to_device = 0;   ///< the bytes of copies_to_device
  std::uint64_t bytes_to_host = 0;     ///< the bytes of copies_to_host
  /// Device copies freed: to make room, least recently used first, or by remove_from_devices().
  std::uint64_t evictions = 0;
  /// Transfers made by hetero_object::read_range and write_range (to or from a device), and
  /// their bytes; counted apart from the protocol's whole-object copies above.
  ///@{
  std::uint64_t range_transfers = 0;
  std::uint64_t range_bytes = 0;
  ///@}
  /// Range copies whose bytes went through the framework's staging memory: a write_range source
  /// copied (a span, or a source the devices cannot copy from directly), a read landing there
  /// before the destination (a CUDA read into pageable memory).
  std::uint64_t staged_range_copies = 0;
  std::uint64_t device_bytes_in_use = 0;  ///< held by object copies on all devices, now
  /// Kernel tasks that failed (each also rethrown by its wait(), or by wait_all() below).
  std::uint64_t tasks_failed = 0;
};

/// The heterogeneous framework's context: its devices, engine thread, memory pools and
/// scheduler. At most one is alive in a process at a time.
class hetero_runtime {
 public:
  /// Finds the devices `options` selects and starts the engine; it becomes current(). Throws
  /// device_error when another hetero_runtime is alive.
  explicit hetero_runtime(const hetero_options& options = hetero_options::from_environment());
  /// Waits for every submitted task, then stops the engine. Host requests still held are ended
  /// (as if released) rather than waited for. Objects may outlive the runtime; they free their
  /// memory when dropped.
  ~hetero_runtime();
  hetero_runtime(const hetero_runtime&) = delete;
  hetero_runtime& operator=(const hetero_runtime&) = delete;

  /// The runtime objects and tasks use; throws if none is alive.
  [[nodiscard]] static hetero_runtime& current();

  /// The devices in use, in discover_devices() order; device_info::index is the position here.
  /// Fixed for the runtime's lifetime.
  [[nodiscard]] std::span<device* const> devices() const noexcept;
  /// Blocks until no task is pending: those submitted so far (by any thread), and any submitted
  /// meanwhile. Then, if a kernel task failed since the previous wait_all() and no wait() on it
  /// saw the failure (its handle was dropped after submit(), say), rethrows the first such
  /// failure; statistics().tasks_failed counts them all. A failure is never lost silently:
  /// those still unseen when the runtime ends are reported on stderr.
  /// Threading: any thread; a thread that holds a host request (request() without release())
  /// must release it first, or its own request keeps wait_all() waiting.
  void wait_all();
  /// A snapshot of the counters, all taken at one moment (so they agree with one another).
  [[nodiscard]] hetero_statistics statistics() const;

 private:
  std::shared_ptr<detail::hetero_engine> engine_;
  std::vector<device*> device_view_;
};

}  // namespace roam
