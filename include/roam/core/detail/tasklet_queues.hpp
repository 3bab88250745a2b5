// roam — what the task layer's tasklets use of a node's scheduler. Not for applications.
#pragma once

#include <roam/transport/message.hpp>

namespace roam::detail {

class node_runtime;

/// What push_own_tasklet did.
enum class own_push { queued, deque_full, no_deque };
/// Pushes `w` on the calling thread's own tasklet deque (a worker's, or the application
/// thread's) and wakes a parked worker to steal it. Unless it returns queued (the deque is
/// full, or the thread has none: the communication thread), `w` is not queued.
own_push push_own_tasklet(node_runtime& n, work_item* w) noexcept;
/// Takes the newest item of the calling thread's own deque (LIFO), or nullptr.
work_item* pop_own_tasklet(node_runtime& n) noexcept;
/// Puts back an item just taken with pop_own_tasklet() (its slot is free), without waking
/// anyone.
void return_own_tasklet(node_runtime& n, work_item* w) noexcept;
/// Queues `w` where any thread of `n` takes it (FIFO).
void push_shared_work(node_runtime& n, work_item* w) noexcept;
/// Runs one item the calling thread may take (own queues, the node's queue, a steal); false
/// when there was none.
bool run_one_available(node_runtime& n);
/// Called after each tasklet a join ran inline (a fork-join tree run inline never returns
/// to the worker loop, which polls between items): when the tasklets since the calling
/// thread's last poll took long, polls the network and lets the arrivals queued on `n` run
/// (a fiber suspends for them and resumes first after them; the application thread runs
/// them), so that a node computing a tree answers other nodes meanwhile.
void serve_arrivals_if_due(node_runtime& n);
/// Capped exponential back-off step of an idle thread (`rounds` idle rounds so far).
void back_off(unsigned rounds) noexcept;

}  // namespace roam::detail
