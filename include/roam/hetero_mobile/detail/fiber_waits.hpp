#pragma once
// Waiting for device work inside roam: a handler that waits for a hetero task, a host request or
// a hetero_future suspends its lightweight thread, and its worker runs other work meanwhile.
#include <roam/hetero/device.hpp>

namespace roam::detail {

/// Installs the device_wait_hook that suspends roam fibers (threads of no node still block).
/// Idempotent; returns true.
bool install_fiber_waits() noexcept;

/// Every program that includes roam/hetero_mobile.hpp installs the hook before main: a wait
/// inside a handler never blocks a worker, without any call to remember.
inline const bool fiber_waits_installed = install_fiber_waits();

}  // namespace roam::detail
