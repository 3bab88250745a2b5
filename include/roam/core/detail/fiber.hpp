// Fibers: the suspendable execution contexts handlers run on.
//
// Every work item (a handler, a tasklet) runs on a fiber taken from the running thread's
// pool of idle fibers, so that waiting inside it can suspend the fiber and free the
// thread for other work, instead of blocking the thread or nesting other handlers on its
// stack (the live-lock of PREMA's pthreads design, thesis Fig. 15). A fiber that
// finishes its item goes back to the pool with its stack: nothing is allocated per item in
// steady state. A suspended fiber may be resumed by any thread of its node.
//
// Written on Boost.Context's fcontext primitives (make_fcontext / jump_fcontext) rather
// than its fiber class because the runtime must act *after* a switch, on the thread's own
// stack (registering the suspended fiber with what it waits for): only then is its context
// saved and safe to resume from another thread.
#pragma once

#include <roam/transport/message.hpp>
#include <roam/transport/node_id.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace roam::detail {

class node_runtime;
struct fiber;

/// Runs a work item: resumes a suspended fiber, or starts the item on a pooled fiber.
/// Call only from a thread's own stack (scheduler loops), never from a fiber.
void run_item(work_item* w);

/// For threads that cannot be suspended (a node's application thread) while they wait:
/// runs one queued item of the calling thread's node, if it has a node and there is one.
bool run_one_item_of_my_node();

/// True while the calling code runs on a fiber (inside a handler or tasklet).
bool on_fiber() noexcept;
/// The fiber the calling code runs on, or nullptr.
const fiber* current_fiber() noexcept;
/// The work item running on the calling fiber: its fiber and which of the fiber's runs
/// (fibers are reused, so the pointer alone names a later item too). {nullptr, 0} off
/// fibers.
struct fiber_run {
  const fiber* on = nullptr;
  std::uint64_t run = 0;
  friend bool operator==(const fiber_run&, const fiber_run&) = default;
};
fiber_run current_fiber_run() noexcept;

/// Suspends the calling fiber. Once its context is saved, `park(f, arg)` runs on the
/// thread's own stack and must arrange for resume_later(f) to be called (possibly at once).
/// Returns when the fiber is resumed, possibly on another thread of the same node.
void suspend(void (*park)(fiber* f, void* arg), void* arg);

/// Queues `f` to be resumed by a thread of its node. Any thread may call it, once per
/// suspension.
void resume_later(fiber* f) noexcept;

/// Queues `f` to resume after the other work queued on its node (yield).
void resume_after_others(fiber* f) noexcept;
/// Queues `f` to resume once `deadline` has passed.
void resume_at(fiber* f, std::chrono::steady_clock::time_point deadline);

/// Intrusive link for lists of suspended fibers (waiters of one thing at a time).
fiber*& next_waiter(fiber* f) noexcept;

/// How many fibers may be suspended at once in this process (config::max_suspended; 0: what
/// the kernel's map limit leaves). Suspending one more stops the job naming the setting.
void set_fiber_suspension_cap(std::size_t cap) noexcept;

/// Stack size for fibers created from now on (the runtime sets it from its settings).
void set_fiber_stack_size(std::size_t bytes) noexcept;
std::size_t fiber_stack_size() noexcept;

/// Items whose execute function is `execute` may ask for a larger stack: run_item gives
/// them a fiber of `bytes(item)` bytes when that exceeds the setting (tasklets spawned with
/// roam::stack_size). One kind of item can register.
void register_sized_items(void (*execute)(work_item*),
                          std::size_t (*bytes)(const work_item*)) noexcept;

/// Names the handler now running on the calling fiber (a channel handler inside a bundle),
/// for the report of a stack overflow. No-op off a fiber.
void set_running_handler(std::uint32_t handler) noexcept;

/// Bytes of stack left below the caller on its fiber (a large number off a fiber): inline
/// runs of other work check it before they nest.
std::size_t stack_left() noexcept;

/// What a fault at `address` says about the calling thread's fiber, if it hit (or jumped
/// past) the fiber's guard page. Async-signal-safe.
struct fiber_overflow {
  node_id node = 0;
  std::uint32_t handler = ~0u;  ///< handler id, or ~0u: a tasklet or other work
  std::size_t stack_bytes = 0;
};
bool fiber_overflow_at(const void* address, fiber_overflow& report) noexcept;

}  // namespace roam::detail
