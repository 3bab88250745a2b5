// The device_wait_hook for roam's nodes: a device event becomes a roam waitable, so a handler's
// wait suspends its fiber (and a node's application thread runs the node's work while waiting)
// exactly as a wait on a roam::future does.
#include <roam/core/detail/node_api.hpp>
#include <roam/hetero_mobile/detail/fiber_waits.hpp>

#include <memory>

namespace roam::detail {
namespace {

bool wait_on_node(const device_event& event) {
  // Threads of no node (the hetero engine, backend threads, the application's own) block as
  // the hetero framework does by default.
  if (current_node() == nullptr) return false;
  auto done = std::make_shared<ready_flag>();
  // The callback runs on a backend or engine thread; ready_flag::set hands the suspended
  // fiber back to its node's scheduler from there.
  event.on_complete([done] { done->set(); });
  wait(*done);
  return true;
}

}  // namespace

bool install_fiber_waits() noexcept {
  set_device_wait_hook(&wait_on_node);
  return true;
}

}  // namespace roam::detail
