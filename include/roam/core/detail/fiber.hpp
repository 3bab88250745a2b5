// Fibers: the suspendable execution contexts handlers run on.
//
// Every work item (a handler, a tasklet) runs on a fiber, so that waiting inside it can
// suspend the fiber and free the thread for other work, instead of blocking the thread or
// nesting other handlers on its stack (the live-lock of PREMA's pthreads design, thesis
// Fig. 15). A worker thread's loop itself runs on a fiber and runs its items on that stack:
// an item that never waits costs no switch at all. An item that suspends hands the loop
// over to a fresh fiber and goes on as an ordinary suspended fiber; when resumed and done,
// its stack (with the old loop's frames) goes back to the pool. Other threads (the
// application thread) run each item on a pooled fiber. Fibers keep their stacks in the
// pool: nothing is allocated per item in steady state. A suspended fiber may be resumed by
// any thread of its node.
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
/// Call only outside items: from a thread's own stack or a worker loop, never from a
/// handler or tasklet.
void run_item(work_item* w);

/// Runs `body(context)` on a fiber that serves as the calling thread's worker loop, and
/// returns when the body returns (on whichever fiber then holds the loop). The body may be
/// restarted from its beginning on a fresh fiber whenever an item it ran with
/// run_loop_item() suspends, so it keeps its state off the stack or begins again where it
/// left off; locals of a loop left behind are never destroyed (they must be trivially
/// destructible). For worker threads of a node only.
void run_worker_loop(void (*body)(void*), void* context);

/// Runs a work item from the loop body of run_worker_loop() on the loop's own stack (no
/// fiber switch); when the item suspends, the loop goes on on a fresh fiber. Anything else
/// (a resumed fiber, an item that wants a larger stack, a call off a worker loop) goes
/// through run_item().
void run_loop_item(work_item* w);

/// For threads that cannot be suspended (a node's application thread) while they wait:
/// runs one queued item of the calling thread's node, if it has a node and there is one.
bool run_one_item_of_my_node();

/// True while the calling code runs on a fiber (inside a handler or tasklet).
bool on_fiber() noexcept;
/// The fiber the calling code runs on, or nullptr.
const fiber* current_fiber() noexcept;
/// How many times the calling thread has switched to another fiber to run or resume an
/// item (an item that suspends on a worker loop counts one for handing the loop over).
/// Items run by a worker loop that never wait count nothing. For tests.
std::uint64_t fiber_switches_on_this_thread() noexcept;
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
  /// `handler` of a worker's loop between items (polling the network, admitting arrivals).
  static constexpr std::uint32_t worker_loop = ~0u - 1;
  node_id node = 0;
  std::uint32_t handler = ~0u;  ///< handler id, worker_loop, or ~0u: a tasklet or other work
  std::size_t stack_bytes = 0;
};
bool fiber_overflow_at(const void* address, fiber_overflow& report) noexcept;

}  // namespace roam::detail
