// Reporting stack overflows of handlers and tasklets (see stack_overflow.cpp).
#pragma once

namespace roam::detail {

/// Gives the calling thread an alternate signal stack and makes sure the process's fault
/// handler is installed: an overflow of a fiber stack on this thread then stops the job
/// with "roam: stack overflow in handler '<name>' on node N ...". Call it on every thread
/// that runs fibers (workers, application threads), before the first one runs.
void report_stack_overflows_on_this_thread();

}  // namespace roam::detail
