#pragma once
// A unit of the engine's work, in one of three kinds: a kernel launch (hetero_task), a host
// request (hetero_object::request / remove_from_devices), or a range copy (read_range,
// write_range). They share the dependency graph, placement and completion; what differs is the
// kind's own data, a std::variant, so no kind is told apart by null fields.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "device_event_state.hpp"
#include "hetero_object_state.hpp"
#include "request_pool.hpp"
#include "roam/hetero/hetero_task.hpp"
#include "roam/hetero/kernel.hpp"

namespace roam::detail {

[[nodiscard]] inline bool reads(data_access a) noexcept { return a != data_access::write; }
[[nodiscard]] inline bool writes(data_access a) noexcept { return a != data_access::read; }

enum class task_phase : std::uint8_t {
  building,
  blocked,
  runnable,
  placed,
  running,
  held,
  complete
};

/// A kernel to launch on a device the scheduler picks among those the target allows.
struct kernel_launch {
  const kernel* function = nullptr;
  launch_dims dims;
  std::size_t local_bytes = 0;
  device_type target = device_type::any;
  std::optional<roam::backend> target_backend;
  int target_device = -1;
  std::vector<int> eligible;  ///< the devices that can run it (set when it becomes runnable)
};

/// Host access to one object: granted once the host copy is current, held until release().
struct host_request {
  /// remove_from_devices: free the device copies once granted, then finish.
  bool evict_when_granted = false;
  std::shared_ptr<device_event_state> granted = make_pooled<device_event_state>();
};

/// A copy between part of an object and host memory (hetero_object::read_range and
/// write_range): works on the copies that are valid where they are.
struct range_copy {
  bool write = false;
  std::size_t offset = 0;  ///< bytes into the object
  std::size_t bytes = 0;
  void* user = nullptr;          ///< a read's destination (the caller's memory)
  const void* source = nullptr;  ///< a write's bytes: `staging`, or the memory `owner` holds
  void* staging = nullptr;       ///< from the host pool: a write's copy of its source; a read's
                                 ///< landing place when a device cannot copy into `user` directly
  std::shared_ptr<void> owner;   ///< a write's source taken over, kept until the bytes are written
};

using task_kind = std::variant<kernel_launch, host_request, range_copy>;

struct task_argument {
  std::shared_ptr<hetero_object_state> object;  ///< null for a value
  data_access access = data_access::read;
  kernel_argument value;
};

struct hetero_task_state {
  std::shared_ptr<hetero_engine> engine;
  task_kind kind;
  bool implicit = true;
  std::vector<task_argument> arguments;
  /// Each object of the arguments once, with the union of its accesses (set at submit; the
  /// arguments keep the objects alive until the task finishes).
  std::vector<std::pair<hetero_object_state*, data_access>> objects;
  std::vector<std::shared_ptr<hetero_task_state>> dependencies;  ///< explicit, before submit
  std::vector<std::shared_ptr<hetero_task_state>> dependents;    ///< released when this finishes
  /// Released when this kernel is launched: implicit dependents, whose ordering the copies'
  /// events carry from then on (they wait for it on the device, not on the engine thread).
  std::vector<std::shared_ptr<hetero_task_state>> launch_dependents;
  std::size_t unfinished = 0;
  task_phase phase = task_phase::building;
  std::uint64_t id = 0;
  std::atomic<int> device{-1};
  /// Set when the task fails (before `finished` completes); a wait() that rethrew the failure
  /// sets the flag, which the engine's record of the failure shares.
  std::shared_ptr<std::atomic<bool>> failure_seen;
  bool pinned = false;
  std::shared_ptr<device_event_state> finished = make_pooled<device_event_state>();

  [[nodiscard]] kernel_launch* as_kernel() noexcept { return std::get_if<kernel_launch>(&kind); }
  [[nodiscard]] const kernel_launch* as_kernel() const noexcept {
    return std::get_if<kernel_launch>(&kind);
  }
  [[nodiscard]] host_request* as_host_request() noexcept {
    return std::get_if<host_request>(&kind);
  }
  [[nodiscard]] const host_request* as_host_request() const noexcept {
    return std::get_if<host_request>(&kind);
  }
  [[nodiscard]] range_copy* as_range() noexcept { return std::get_if<range_copy>(&kind); }
  /// Host requests and range copies work in the host space, on no device.
  [[nodiscard]] bool on_host() const noexcept { return as_kernel() == nullptr; }
  /// A host request that frees the device copies (remove_from_devices).
  [[nodiscard]] bool evicts_when_granted() const noexcept {
    const auto* request = as_host_request();
    return request != nullptr && request->evict_when_granted;
  }
};

}  // namespace roam::detail
