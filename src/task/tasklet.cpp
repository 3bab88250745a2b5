#include <roam/task/tasklet.hpp>

#include <roam/core/config.hpp>
#include <roam/core/detail/aggregation.hpp>
#include <roam/core/detail/fiber.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/core/detail/tasklet_queues.hpp>

#include <thread>

namespace roam::detail {
namespace {

// Marks a tasklet whose completion has been announced (no joiner may park after it).
fiber* const finished_mark = reinterpret_cast<fiber*>(alignof(fiber*));

void complete(tasklet* t) noexcept {
  // Publishing `finished` must be the last access to the tasklet: a joiner that sees it
  // may destroy the tasklet at once. A joiner parking in between finds the mark and
  // resumes itself (and retries until `finished` is visible).
  fiber* joiner = t->joiner.exchange(finished_mark, std::memory_order_acq_rel);
  t->finished.store(true, std::memory_order_release);
  if (joiner) resume_later(joiner);
}

void run_tasklet(work_item* w) {
  auto* t = static_cast<tasklet*>(w);
  t->body(t);
  complete(t);
}

// The same for a tasklet that asked for a larger stack: run_item gives it a fiber of its
// size, recognising it by this function.
void run_sized_tasklet(work_item* w) { run_tasklet(w); }
const bool sized_registered =
    (register_sized_items(
         &run_sized_tasklet,
         [](const work_item* w) { return static_cast<const tasklet*>(w)->stack_bytes; }),
     true);

// Whether the calling thread may run `t` on its own stack now: not a tasklet that needs a
// larger stack, and only while more than half of the caller's stack is left, so that
// nested inline runs cannot overflow it (a tasklet run inline gets at least that half).
bool may_run_inline(const tasklet* t) noexcept {
  return t->execute == &run_tasklet && stack_left() > fiber_stack_size() / 2;
}

// On the thread's own stack once the joining fiber is saved.
void park_join(fiber* f, void* arg) {
  auto* t = static_cast<tasklet*>(arg);
  fiber* none = nullptr;
  if (!t->joiner.compare_exchange_strong(none, f, std::memory_order_acq_rel))
    resume_later(f);  // done already
}

}  // namespace

void spawn_tasklet(tasklet* t) {
  (void)sized_registered;
  if (t->stack_bytes > max_stack_bytes)
    throw usage_error("roam::spawn: roam::stack_size{" + std::to_string(t->stack_bytes) +
                      "} exceeds the largest stack, 1 GiB");
  t->execute = t->stack_bytes > fiber_stack_size() ? &run_sized_tasklet : &run_tasklet;
  node_runtime* n = current_node();
  if (!n) throw usage_error("roam::spawn called from a thread that belongs to no node");
  const own_push pushed = push_own_tasklet(*n, t);
  if (pushed == own_push::queued) return;
  // The deque is full: run it now, which is always correct, if the stack allows; else (or
  // from a thread without a deque: the communication thread) any thread of the node runs it
  // on a fiber of its own.
  if (pushed == own_push::deque_full && may_run_inline(t))
    run_tasklet(t);
  else
    push_shared_work(*n, t);
}

void join_tasklet(tasklet* t) {
  if (t->finished.load(std::memory_order_acquire)) return;
  node_runtime* n = current_node();
  if (!n) {  // a thread of no node (a task handle moved there): nothing to help with
    while (!t->finished.load(std::memory_order_acquire)) std::this_thread::yield();
    return;
  }
  unsigned rounds = 0;
  while (!t->finished.load(std::memory_order_acquire)) {
    if (on_fiber()) {
      // A task runs inline only the tasklet it joins, when that is the newest on its
      // thread's deque (the common fork-join case). Anything else would run on the
      // joiner's stack: unrelated work could then wait for something the joiner holds (a
      // roam::mutex) or nest without bound. It goes back, and the joiner suspends; the
      // worker runs that work on fibers of its own.
      if (work_item* w = pop_own_tasklet(*n)) {
        if (w == t && may_run_inline(t)) {
          w->execute(w);
          serve_arrivals_if_due(*n);
          continue;
        }
        return_own_tasklet(*n, w);
      }
      suspend(park_join, t);
      continue;
    }
    // The application thread cannot be suspended: it helps with its own tasklets, steals,
    // then runs other work of its node. Its tasklets run on its own (large) stack, except
    // those that asked for a stack of their own.
    if (work_item* w = pop_own_tasklet(*n)) {
      if (w->execute == &run_tasklet)
        w->execute(w);
      else
        run_item(w);
      serve_arrivals_if_due(*n);
      rounds = 0;
      continue;
    }
    if (run_one_available(*n)) {
      rounds = 0;
      continue;
    }
    flush_thread_lanes();  // idle: what the items run here aggregated may be awaited
    back_off(rounds++);
  }
  if (!on_fiber()) flush_thread_lanes();  // back to the application thread's own code
}

std::size_t default_grain(std::size_t iterations) noexcept {
  node_runtime* n = current_node();
  const std::size_t workers = n ? workers_of(*n) : 1;
  return std::max<std::size_t>(1, iterations / (8 * workers));
}

}  // namespace roam::detail
