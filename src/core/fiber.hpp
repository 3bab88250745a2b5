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

#include <chrono>
#include <cstddef>

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

/// Stack size for fibers created from now on (the runtime sets it from its settings).
void set_fiber_stack_size(std::size_t bytes) noexcept;

}  // namespace roam::detail
