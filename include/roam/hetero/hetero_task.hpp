#pragma once
// roam::hetero_task: a kernel, its arguments with access modes, launch dimensions, optional
// dynamic local memory and a target device type; the runtime picks the device (thesis §5.1).
//
//   roam::hetero_task t(axpy, roam::launch_dims::linear(n), roam::in(x), roam::inout(y), 2.0, n);
//   t.submit();          // asynchronous
//   t.wait();            // or roam::hetero_runtime::current().wait_all()
//
// Dependencies: explicit ones (add_dependency, before submit) and implicit ones from the access
// modes, in submission order: tasks on disjoint objects and readers of one object run
// concurrently; a writer waits for every earlier reader and writer of the object, and later
// readers wait for it. implicit_dependencies(false) opts one task out (for kernels that update
// with atomics, say); the runtime's option turns them off for all.
// Threading: a task is built and submitted by one thread; wait(), done() and add_dependency on
// a submitted task (as the dependency of another) are safe from any thread.
// Lifetime: the handle may be dropped after submit(); the task still runs, and the objects it
// names stay alive until it finishes.
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "roam/hetero/device.hpp"
#include "roam/hetero/hetero_object.hpp"
#include "roam/hetero/kernel.hpp"

namespace roam {

namespace detail {
std::shared_ptr<hetero_task_state> make_hetero_task(const kernel& k, const launch_dims& dims);
void add_object_argument(hetero_task_state& task, object_argument argument);
void add_value_argument(hetero_task_state& task, const kernel_argument& value);
void set_local_memory(hetero_task_state& task, std::size_t bytes);
void set_target(hetero_task_state& task, device_type type, std::optional<roam::backend> on_backend,
                int device_index);
void set_implicit_dependencies(hetero_task_state& task, bool enabled);
void add_task_dependency(hetero_task_state& task, const std::shared_ptr<hetero_task_state>& on);
void submit_task(const std::shared_ptr<hetero_task_state>& task);
void wait_task(hetero_task_state& task);
bool task_done(const hetero_task_state& task) noexcept;
int task_device(const hetero_task_state& task) noexcept;
}  // namespace detail

/// A kernel launch on hetero objects, which the runtime places on a device once its dependencies
/// are met (thesis §5.1).
class hetero_task {
 public:
  /// A task of kernel `k` over `dims`; each argument is roam::in/out/inout(object) or a scalar
  /// (int, unsigned, float, double, ...: trivially copyable, at most 16 bytes), in the kernel's
  /// parameter order. Needs a live hetero_runtime.
  template <class... Arguments>
  hetero_task(const kernel& k, const launch_dims& dims, Arguments&&... arguments)
      : state_(detail::make_hetero_task(k, dims)) {
    (add(std::forward<Arguments>(arguments)), ...);
  }

  /// Bytes of dynamic local memory (roam_dynamic_local) per work-group.
  hetero_task& local_memory(std::size_t bytes) {
    detail::set_local_memory(*state_, bytes);
    return *this;
  }
  /// Which devices may run the task (default: any). By type, by backend, or one device.
  ///@{
  hetero_task& on(device_type type) {
    detail::set_target(*state_, type, std::nullopt, -1);
    return *this;
  }
  hetero_task& on(roam::backend b) {
    detail::set_target(*state_, device_type::any, b, -1);
    return *this;
  }
  hetero_task& on_device(int index) {
    detail::set_target(*state_, device_type::any, std::nullopt, index);
    return *this;
  }
  ///@}
  /// Opts this task out of (or back into) the dependencies inferred from access modes.
  hetero_task& implicit_dependencies(bool enabled) {
    detail::set_implicit_dependencies(*state_, enabled);
    return *this;
  }
  /// This task starts only after `other` finished. Before this task's submit() only, and
  /// `other` must have been submitted already (it may be running or finished): throws
  /// device_error otherwise, since a dependency never submitted would leave this task waiting
  /// for ever (and submitting in order rules out two tasks waiting for each other).
  hetero_task& add_dependency(const hetero_task& other) {
    detail::add_task_dependency(*state_, other.state_);
    return *this;
  }

  /// Hands the task to the runtime and returns at once. Once only.
  hetero_task& submit() {
    detail::submit_task(state_);
    return *this;
  }
  /// Blocks the calling thread until the task finished; rethrows its failure (a kernel that
  /// threw on the host backend, a failed transfer, an object too large for every device...).
  void wait() const { detail::wait_task(*state_); }
  /// True once the task finished (successfully or not); never blocks.
  [[nodiscard]] bool done() const noexcept { return detail::task_done(*state_); }
  /// The device the task was placed on, or -1 before it is placed.
  [[nodiscard]] int device() const noexcept { return detail::task_device(*state_); }

 private:
  void add(detail::object_argument argument) {
    detail::add_object_argument(*state_, std::move(argument));
  }
  template <class T>
  void add(const T& value) {
    static_assert(!std::is_pointer_v<T>,
                  "pass device data to kernels as roam::in/out/inout(hetero_object), not pointers");
    detail::add_value_argument(*state_, kernel_argument::of_value(value));
  }

  std::shared_ptr<detail::hetero_task_state> state_;
};

}  // namespace roam
