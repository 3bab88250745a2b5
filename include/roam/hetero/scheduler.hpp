#pragma once
// The pluggable device scheduler (thesis §5.1.3): the runtime pushes each task once its
// dependencies are met, and pops (task, device) pairs when devices can take work.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>

namespace roam {

/// What a scheduler may ask the runtime. Valid only during the push/pop call it is given to.
class hetero_scheduler_context {
 public:
  virtual ~hetero_scheduler_context() = default;
  /// Devices (indices into hetero_runtime::devices()) that can run the task: they match its
  /// target and have the kernel form their backend needs.
  [[nodiscard]] virtual std::span<const int> eligible_devices(std::uint64_t task) const = 0;
  /// Bytes that would have to move onto `device` before the task can run there.
  [[nodiscard]] virtual std::size_t bytes_to_move(std::uint64_t task, int device) const = 0;
  /// Tasks issued to `device` and not yet finished.
  [[nodiscard]] virtual std::size_t tasks_in_flight(int device) const = 0;
  /// How many tasks a device may have in flight before more would only queue behind them.
  [[nodiscard]] virtual std::size_t device_depth(int device) const = 0;
};

/// Where a popped task runs.
struct hetero_placement {
  std::uint64_t task = 0;  ///< the task, as pushed
  int device = 0;          ///< where it runs: an index into hetero_runtime::devices()
};

/// The scheduler interface. Calls come one at a time, under the engine's lock, from whichever
/// thread runs the engine's work (hetero_options::dispatch_on_callers): keep them short, and
/// never submit or wait from inside them.
/// `pop` returns nothing when no task should be issued now (the runtime calls again after the
/// next completion or push); a popped task must be one pushed and not yet popped, placed on one
/// of its eligible devices.
class hetero_scheduler {
 public:
  virtual ~hetero_scheduler() = default;
  /// Hands over `task` (the runtime's id for it), whose dependencies are now met.
  virtual void push(std::uint64_t task, const hetero_scheduler_context& context) = 0;
  /// The next task to issue and its device, or nothing when no task should be issued now.
  [[nodiscard]] virtual std::optional<hetero_placement> pop(
      const hetero_scheduler_context& context) = 0;
};

/// The default: tasks in the order they became runnable; each goes to the eligible device that
/// needs the fewest bytes moved, ties to the one with the fewest tasks in flight. A device whose
/// queues are full is skipped when another can take the task; when every eligible device of
/// the oldest task is full, nothing is issued until one completes (later tasks wait too, so
/// submission order holds per device type).
class transfer_aware_scheduler final : public hetero_scheduler {
 public:
  void push(std::uint64_t task, const hetero_scheduler_context& context) override;
  std::optional<hetero_placement> pop(const hetero_scheduler_context& context) override;

 private:
  std::deque<std::uint64_t> runnable_;
};

}  // namespace roam
