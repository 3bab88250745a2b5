#include <roam/core/detail/fiber.hpp>
#include <roam/core/detail/grace_period.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <roam/core/detail/aggregation.hpp>

#include <roam/base/detail/page_size.hpp>
#include "node_runtime.hpp"

#include <roam/core/detail/node_api.hpp>

#include <sys/mman.h>
#include <boost/context/detail/fcontext.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define ROAM_ASAN_FIBERS 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define ROAM_TSAN_FIBERS 1
#endif

namespace roam::detail {

namespace ctx = boost::context::detail;
constexpr std::uint32_t no_handler = ~0u;

// What a fiber asks of the thread it leaves.
struct switch_request {
  bool done;                    // finished its item: back to the idle pool
  void (*park)(fiber*, void*);  // suspended: register it here
  void* arg;
  fiber* self;  // the fiber that left (a worker loop hands itself over to a new fiber)
};

struct fiber {
  ctx::fcontext_t context = nullptr;  // where it continues when switched to
  // Its context was made for a worker loop, or it ran one and was abandoned with the loop's
  // frames on its stack: its context (and shadow memory) are made afresh before reuse.
  bool needs_fresh_context = false;
  std::byte* stack = nullptr;  // mapping, guard page at the low end
  std::size_t stack_bytes = 0;
  work_item* item = nullptr;  // what to run next (idle fibers)
  work_item resume;           // queued on its node to resume it
  node_runtime* node = nullptr;
  fiber* next = nullptr;
  std::uint32_t handler = no_handler;  // what runs on it, for a stack overflow's report
  const void* note = nullptr;          // exchange_fiber_note()
  std::uint64_t runs = 0;              // items started on it: tells its runs apart
  // The request of a fiber leaving for good (its item done after a loop hand-over, or its
  // loop over): here, not on its stack, whose frames (or the address sanitizer's fake
  // stack) are gone when the context it returns to reads it.
  switch_request farewell{};
#if ROAM_TSAN_FIBERS
  void* tsan = nullptr;
#endif
};

namespace {

std::atomic<std::size_t> stack_size{std::size_t{128} * 1024};

// Suspended fibers: counted on the suspension path only (a handler that never waits costs
// nothing), capped so that a program suspending without bound stops with a message naming
// the setting rather than when the kernel refuses a stack's mapping.
// On a cache line of its own: waiting handlers update it, and stack_size beside it is read
// by every handler.
alignas(64) std::atomic<std::size_t> suspended{0};
std::atomic<std::size_t> suspension_cap{std::numeric_limits<std::size_t>::max()};
bool cap_is_derived = true;

/// The kernel's limit on a process's memory maps (vm.max_map_count), or 65530 (Linux's
/// default) when it cannot be read.
std::size_t kernel_map_limit() {
  std::size_t limit = 65530;
  if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    unsigned long value = 0;
    if (std::fscanf(f, "%lu", &value) == 1 && value > 0) limit = value;
    std::fclose(f);
  }
  return limit;
}

void note_suspension() {
  const std::size_t now = suspended.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::size_t cap = suspension_cap.load(std::memory_order_relaxed);
  if (now <= cap) return;
  fatal(std::to_string(now) + " handlers and tasklets are suspended at once in this process, " +
        "more than --roam-max-suspended (ROAM_MAX_SUSPENDED) allows: " + std::to_string(cap) +
        (cap_is_derived ? " (derived from the kernel's vm.max_map_count of " +
                              std::to_string(kernel_map_limit()) + ": each holds two maps)"
                        : std::string()) +
        ". Each holds a " + std::to_string(stack_size.load(std::memory_order_relaxed) >> 10) +
        " KiB stack: let fewer wait at once, or raise the setting (and vm.max_map_count)");
}

// Where the running fiber returns when it leaves: the context that entered it, with what
// the sanitizers need to switch back to that stack.
struct return_point {
  ctx::fcontext_t context = nullptr;
#if ROAM_ASAN_FIBERS
  const void* bottom = nullptr;
  std::size_t size = 0;
#endif
#if ROAM_TSAN_FIBERS
  void* tsan = nullptr;
#endif
};

// How a worker loop fiber starts: the first one of a thread (`handed_from` null), or one
// taking over from a loop fiber whose item suspended (`park(handed_from, arg)` registers it).
struct loop_start {
  fiber* self;
  fiber* handed_from;
  void (*park)(fiber*, void*);
  void* arg;
};

struct thread_state {
  return_point back;         // where the running fiber returns when it leaves
  fiber* current = nullptr;  // the fiber running an item on this thread, if any
  // A worker thread's loop runs on a fiber of its own (run_worker_loop): its items run on
  // that stack, and only one that suspends costs a fiber switch, handing the loop over.
  fiber* loop = nullptr;
  void (*loop_body)(void*) = nullptr;
  void* loop_context = nullptr;
  std::vector<fiber*> idle;
  ~thread_state();
};
thread_local thread_state tl_state;
// Switches into a fiber to run or resume an item on this thread (fiber_switches_on_this_thread).
thread_local std::uint64_t tl_switches = 0;
// The fiber running on this thread, for the fault handler: a plain thread-local, readable
// from a signal handler without the lazy set-up of tl_state (which has a destructor).
thread_local const fiber* tl_running [[gnu::tls_model("initial-exec")]] = nullptr;

// Fibers migrate between threads, and compilers may keep a thread-local's address in a
// register across a call: every access after a possible switch goes through this call.
[[gnu::noinline]] thread_state& state() noexcept { return tl_state; }

// Idle fibers beyond a thread's cache go here, for threads that run short of them.
struct shared_idle {
  std::mutex lock;
  std::vector<fiber*> fibers;
};
shared_idle& overflow() {
  static shared_idle* s = new shared_idle;  // never destroyed: threads exit late
  return *s;
}
constexpr std::size_t thread_cache = 64, shared_cache = 1024;

// A fiber stack's shadow memory may still say "poisoned" for frames that were live when
// the fiber last ran; a later mapping at the same address would inherit it.
void clear_shadow([[maybe_unused]] void* stack, [[maybe_unused]] std::size_t bytes) noexcept {
#if ROAM_ASAN_FIBERS
  __asan_unpoison_memory_region(stack, bytes);
#endif
}

void destroy(fiber* f) noexcept {
  clear_shadow(f->stack, f->stack_bytes);
#if ROAM_TSAN_FIBERS
  __tsan_destroy_fiber(f->tsan);
#endif
  munmap(f->stack, f->stack_bytes);
  delete f;
}

thread_state::~thread_state() {
  for (fiber* f : idle) destroy(f);
}

void fiber_main(ctx::transfer_t t);

// The mapping of a fiber whose usable stack holds `usable` bytes: whole pages, and the
// guard page below them.
std::size_t mapping_bytes(std::size_t usable) noexcept {
  const std::size_t page = page_bytes();
  return ((usable + page - 1) / page + 1) * page;
}

// Work items that ask for a larger stack than the setting's (roam::spawn with
// roam::stack_size): recognised by their execute function.
std::atomic<void (*)(work_item*)> sized_execute{nullptr};
std::atomic<std::size_t (*)(const work_item*)> sized_bytes{nullptr};

[[noreturn]] void stack_mapping_failed(const char* what, std::size_t bytes, int error) {
  const std::string cause = std::strerror(error);  // before anything else may change errno
  fatal(std::string("cannot ") + what + " a " + std::to_string(bytes) +
        "-byte stack for a handler or tasklet (" + cause + ") with " +
        std::to_string(suspended.load(std::memory_order_relaxed)) +
        " suspended in this process; the kernel's vm.max_map_count is " +
        std::to_string(kernel_map_limit()) + " (two maps a stack); see --roam-max-suspended");
}

fiber* create_fiber(std::size_t usable) {
  const std::size_t page = page_bytes();
  const std::size_t bytes = mapping_bytes(usable);
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) stack_mapping_failed("map", bytes, errno);
  clear_shadow(map, bytes);
  // A stack overflow faults instead of corrupting memory. Splitting off the guard page takes
  // one more map: near the kernel's limit it may fail where the mapping did not.
  if (mprotect(map, page, PROT_NONE) != 0)
    stack_mapping_failed("protect the guard page of", bytes, errno);
  auto* f = new fiber;
  f->stack = static_cast<std::byte*>(map);
  f->stack_bytes = bytes;
  f->context = ctx::make_fcontext(f->stack + bytes, bytes - page, fiber_main);
#if ROAM_TSAN_FIBERS
  f->tsan = __tsan_create_fiber(0);
#endif
  return f;
}

// Makes `f` start afresh at `entry` when next switched to. Its stack may hold frames that
// will never return (a worker loop's): their shadow memory goes, and so does the thread
// sanitizer's record of its calls.
void restart(fiber* f, void (*entry)(ctx::transfer_t)) {
  clear_shadow(f->stack, f->stack_bytes);
#if ROAM_TSAN_FIBERS
  __tsan_destroy_fiber(f->tsan);
  f->tsan = __tsan_create_fiber(0);
#endif
  f->context = ctx::make_fcontext(f->stack + f->stack_bytes, f->stack_bytes - page_bytes(), entry);
}

// A pooled fiber of the configured stack size, or a new one. Pooled fibers of another size
// (from a run with another setting) are freed as they are met.
fiber* pooled_fiber() {
  const std::size_t wanted = mapping_bytes(stack_size.load(std::memory_order_relaxed));
  thread_state& s = state();
  while (!s.idle.empty()) {
    fiber* f = s.idle.back();
    s.idle.pop_back();
    if (f->stack_bytes == wanted) return f;
    destroy(f);
  }
  {
    auto& o = overflow();
    std::lock_guard guard(o.lock);
    while (!o.fibers.empty()) {
      fiber* f = o.fibers.back();
      o.fibers.pop_back();
      if (f->stack_bytes == wanted) return f;
      destroy(f);
    }
  }
  return create_fiber(stack_size.load(std::memory_order_relaxed));
}

// A fiber that runs one item (fiber_main).
fiber* take_idle() {
  fiber* f = pooled_fiber();
  if (f->needs_fresh_context) {
    restart(f, fiber_main);
    f->needs_fresh_context = false;
  }
  return f;
}

void loop_fiber_main(ctx::transfer_t t);

// A fiber that runs a worker loop (loop_fiber_main).
fiber* take_loop_fiber() {
  fiber* f = pooled_fiber();
  restart(f, loop_fiber_main);
  f->needs_fresh_context = true;
  return f;
}

void give_back(fiber* f) {
  if (f->stack_bytes != mapping_bytes(stack_size.load(std::memory_order_relaxed))) {
    destroy(f);  // a larger stack asked for by one item: not kept for others
    return;
  }
  thread_state& s = state();
  if (s.idle.size() < thread_cache) {
    s.idle.push_back(f);
    return;
  }
  {
    auto& o = overflow();
    std::lock_guard guard(o.lock);
    if (o.fibers.size() < shared_cache) {
      o.fibers.push_back(f);
      return;
    }
  }
  destroy(f);
}

// ---- switching, with the sanitizers told about every stack change --------------------
//
// A fiber returns to the context that entered it (thread_state::back): the thread's own
// stack, or its worker loop's fiber. enter() saves the thread's return point and restores
// it, so a fiber entered from a worker loop that was itself entered from the thread's
// stack returns each to its own.

// The running fiber continues, switched to from `t.fctx`: where it returns when it leaves.
// `fake` is what the address sanitizer saved when this fiber left (nullptr at its start).
void note_entered(ctx::transfer_t t, [[maybe_unused]] void* fake) {
  thread_state& now = state();
  now.back.context = t.fctx;
#if ROAM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake, &now.back.bottom, &now.back.size);
#endif
}

// Switches into `to`, passing `data`, with the sanitizers told. When `comes_back_here`, `to`
// returns to this context when it leaves. Returns when a context switches back here, with
// what it passed; `*fake` is what the address sanitizer saved of this context's fake stack.
ctx::transfer_t jump_into(fiber* to, void* data, [[maybe_unused]] bool comes_back_here,
                          [[maybe_unused]] void** fake) {
#if ROAM_TSAN_FIBERS
  if (comes_back_here) state().back.tsan = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(to->tsan, 0);
#endif
#if ROAM_ASAN_FIBERS
  const std::size_t page = page_bytes();
  __sanitizer_start_switch_fiber(fake, to->stack + page, to->stack_bytes - page);
#endif
  return ctx::jump_fcontext(to->context, data);
}

// Completes a switch for the address sanitizer where the stack switched from is no return
// point to record: back in a context that jump_into() left (`fake` as it saved it), or at
// the start of a loop fiber taking over from another (nullptr).
void landed([[maybe_unused]] void* fake) {
#if ROAM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

// Switches to `f` from the current context, on this thread. Returns what the fiber asked for
// when it left.
switch_request* enter(fiber* f) {
  thread_state& s = state();
  const return_point saved = s.back;
  fiber* const outer = s.current;
  s.current = f;
  tl_running = f;
  ++tl_switches;
  void* fake = nullptr;
  ctx::transfer_t back = jump_into(f, f, true, &fake);
  landed(fake);
  f->context = back.fctx;
  // The same thread: `f` runs where it was entered until it leaves.
  thread_state& now = state();
  now.back = saved;
  now.current = outer;
  tl_running = outer != nullptr ? outer : now.loop;
  return static_cast<switch_request*>(back.data);
}

// From the running fiber back to the context that entered it. Returns when switched to
// again.
void leave(switch_request* request) {
  thread_state& s = state();
#if ROAM_TSAN_FIBERS
  __tsan_switch_to_fiber(s.back.tsan, 0);
#endif
  [[maybe_unused]] void* fake = nullptr;
#if ROAM_ASAN_FIBERS
  __sanitizer_start_switch_fiber(&fake, s.back.bottom, s.back.size);
#endif
  ctx::transfer_t t = ctx::jump_fcontext(s.back.context, request);
  // Resumed, maybe by another thread: its context is the one to return to now.
  note_entered(t, fake);
}

// The same for a fiber finished with for good, its stack about to be reused from the top
// or unmapped. The address sanitizer frees the fiber's fake stack with the switch, so this
// frame keeps nothing there (no local whose address is taken), and `request` must not
// live on that stack either.
[[noreturn]] void leave_for_good(switch_request* request) {
  thread_state& s = state();
#if ROAM_TSAN_FIBERS
  __tsan_switch_to_fiber(s.back.tsan, 0);
#endif
#if ROAM_ASAN_FIBERS
  __sanitizer_start_switch_fiber(nullptr, s.back.bottom, s.back.size);
#endif
  ctx::jump_fcontext(s.back.context, request);
  // No fatal(): its message would be a local of this frame.
  std::fputs("roam: internal error: a fiber that left for good was resumed\n", stderr);
  std::abort();
}

void fiber_main(ctx::transfer_t t) {
  auto* self = static_cast<fiber*>(t.data);
  note_entered(t, nullptr);
  for (;;) {
    work_item* item = self->item;
    item->execute(item);
#if ROAM_ASAN_FIBERS
    // The address sanitizer keeps a fake stack for a fiber that leaves and may come back,
    // and nothing frees it when the fiber is unmapped or started afresh instead: megabytes
    // of address space each. So the fiber leaves for good (its fake stack freed with the
    // switch; the request on the fiber, not on a stack that goes), and starts afresh when
    // taken from the pool.
    self->needs_fresh_context = true;
    self->farewell = {true, nullptr, nullptr, self};
    leave_for_good(&self->farewell);
#else
    switch_request done{true, nullptr, nullptr, self};
    leave(&done);  // back in the idle pool until given a new item
#endif
  }
}

// Runs a worker thread's loop: the first loop fiber of the thread, entered from its own
// stack, or one taking over from a loop fiber whose item suspended.
void loop_fiber_main(ctx::transfer_t t) {
  const loop_start start = *static_cast<loop_start*>(t.data);  // on the other fiber's stack
  thread_state& s = state();
  s.loop = start.self;
  s.current = nullptr;
  tl_running = start.self;
  start.self->handler = fiber_overflow::worker_loop;
  start.self->node = current_node();
  if (start.handed_from != nullptr) {
    // The suspended item's fiber is saved: from here on it is an ordinary suspended fiber,
    // resumed by enter() and left when its item is done.
    start.handed_from->context = t.fctx;
    landed(nullptr);  // a fresh fiber: no fake stack of its own to restore
    note_suspension();
    start.park(start.handed_from, start.arg);
  } else {
    note_entered(t, nullptr);  // the thread's own stack, where the loop returns at the end
  }
  s.loop_body(s.loop_context);
  // The node stops: back to the thread's own stack for good.
  thread_state& now = state();
  now.loop = nullptr;
  start.self->farewell = {true, nullptr, nullptr, start.self};
  leave_for_good(&start.self->farewell);
}

// The item running on the thread's loop fiber suspends: a fresh fiber takes the loop over
// (and registers this one with `park`), and this fiber goes on as an ordinary one.
void hand_over_loop(void (*park)(fiber*, void*), void* arg) {
  thread_state& s = state();
  fiber* next = take_loop_fiber();
  loop_start start{next, s.current, park, arg};
  ++tl_switches;
  void* fake = nullptr;
  ctx::transfer_t t = jump_into(next, &start, false, &fake);  // the loop returns elsewhere
  note_entered(t, fake);  // resumed by enter(), maybe on another thread
}

void resume_entry(work_item* w) {
  // The resume item is a member of its fiber.
  auto* f = reinterpret_cast<fiber*>(reinterpret_cast<std::byte*>(w) - offsetof(fiber, resume));
  suspended.fetch_sub(1, std::memory_order_relaxed);
  switch_request* r = enter(f);
  if (r->done) {
    give_back(f);
  } else {
    note_suspension();
    r->park(f, r->arg);
  }
}

// What a fiber records about the item it starts (its node: the caller's business, since a
// worker loop's fiber keeps the node it was started for).
void begin_item(fiber* f, work_item* w) {
  f->item = w;
  f->note = nullptr;
  ++f->runs;
  f->handler =
      w->execute == &node_runtime::execute ? static_cast<message*>(w)->header.handler : no_handler;
}

}  // namespace

void run_item(work_item* w) {
  // Off a worker (an application thread that runs its node's work while it waits), the
  // thread follows grace_period.hpp's rule while the item runs; a suspension ends the
  // section here, on this thread.
  const grace_read_section reading;
  if (w->execute == &resume_entry) {
    w->execute(w);
    return;
  }
  fiber* f = nullptr;
  if (w->execute == sized_execute.load(std::memory_order_relaxed)) {
    const std::size_t bytes = sized_bytes.load(std::memory_order_relaxed)(w);
    f = bytes > stack_size.load(std::memory_order_relaxed) ? create_fiber(bytes) : take_idle();
  } else {
    f = take_idle();
  }
  begin_item(f, w);
  f->node = current_node();
  switch_request* r = enter(f);
  if (r->done) {
    give_back(f);
  } else {
    note_suspension();
    r->park(f, r->arg);  // the fiber's context is saved: it may be resumed from now on
  }
}

void run_worker_loop(void (*body)(void*), void* context) {
  thread_state& s = state();
  s.loop_body = body;
  s.loop_context = context;
  fiber* first = take_loop_fiber();
  loop_start start{first, nullptr, nullptr, nullptr};
  void* fake = nullptr;
  ctx::transfer_t t = jump_into(first, &start, true, &fake);
  landed(fake);
  // The thread's last loop fiber left: the loop is over.
  auto* last = static_cast<switch_request*>(t.data)->self;
  thread_state& now = state();
  now.current = nullptr;
  now.back = return_point{};
  tl_running = nullptr;
  give_back(last);
}

void run_loop_item(work_item* w) {
  thread_state& s = state();
  fiber* f = s.loop;
  if (f == nullptr || s.current != nullptr || w->execute == &resume_entry ||
      w->execute == sized_execute.load(std::memory_order_relaxed)) {
    run_item(w);
    return;
  }
  begin_item(f, w);
  s.current = f;
  w->execute(w);
  thread_state& now = state();
  if (now.loop == f) {  // it never suspended: still this thread's loop
    now.current = nullptr;
    f->handler = fiber_overflow::worker_loop;
    return;
  }
  // It suspended, a new fiber runs the loop, and this one was resumed to finish the item:
  // it returns to whoever resumed it, never to the old loop's frames below.
  f->farewell = {true, nullptr, nullptr, f};
  leave_for_good(&f->farewell);
}

bool on_fiber() noexcept { return state().current != nullptr; }

bool run_one_item_of_my_node() {
  node_runtime* n = current_node();
  if (!n) return false;
  const bool ran = n->sched().run_one(current_worker());
  // The caller is a thread that cannot suspend (the application thread), lending itself
  // for one item between its own steps: it is no worker that flushes when idle, so what
  // the item aggregated leaves now, or it could wait in a buffer while the job waits for it.
  flush_thread_lanes();
  return ran;
}

void suspend(void (*park)(fiber*, void*), void* arg) {
  // The fiber may resume on another thread: what it aggregated here leaves first, so its
  // messages to one node stay in order.
  flush_thread_lanes();
  thread_state& s = state();
  if (s.current == nullptr) fatal("internal error: suspend() called off a fiber");
  // The handlers open on this fiber end a run here and start another where it resumes
  // (the chain lives on this fiber's stack).
  trace::open_handler* const traced = trace::on() ? trace::suspend_handlers() : nullptr;
  if (s.current == s.loop) {
    hand_over_loop(park, arg);
  } else {
    switch_request request{false, park, arg, s.current};
    leave(&request);
  }
  if (traced != nullptr) trace::resume_handlers(traced);
}

void resume_later(fiber* f) noexcept {
  f->resume.execute = &resume_entry;
  f->node->sched().push_resumed(&f->resume);
}

void resume_after_others(fiber* f) noexcept {
  f->resume.execute = &resume_entry;
  f->node->sched().push_yielded(&f->resume);
}

void resume_at(fiber* f, std::chrono::steady_clock::time_point deadline) {
  f->resume.execute = &resume_entry;
  f->node->sched().push_at(deadline, &f->resume);
}

fiber*& next_waiter(fiber* f) noexcept { return f->next; }

void set_fiber_stack_size(std::size_t bytes) noexcept { stack_size.store(bytes); }

void set_fiber_suspension_cap(std::size_t cap) noexcept {
  cap_is_derived = cap == 0;
  // Two maps a stack (the stack and its guard page), and room for the rest of the process.
  constexpr std::size_t spare_maps = 4096;
  const std::size_t limit = kernel_map_limit();
  const std::size_t derived = limit > 2 * spare_maps ? (limit - spare_maps) / 2 : limit / 4;
  suspension_cap.store(cap == 0 ? derived : cap);
  suspended.store(0);  // a new run: no fiber of an earlier one resumes
}
std::size_t fiber_stack_size() noexcept { return stack_size.load(std::memory_order_relaxed); }

void register_sized_items(void (*execute)(work_item*),
                          std::size_t (*bytes)(const work_item*)) noexcept {
  sized_bytes.store(bytes);
  sized_execute.store(execute);
}

const void* exchange_fiber_note(const void* note) noexcept {
  fiber* f = state().current;
  if (!f) return nullptr;
  const void* previous = f->note;
  f->note = note;
  return previous;
}

const void* fiber_note() noexcept {
  const fiber* f = state().current;
  return f ? f->note : nullptr;
}

const fiber* current_fiber() noexcept { return state().current; }

std::uint64_t fiber_switches_on_this_thread() noexcept { return tl_switches; }

fiber_run current_fiber_run() noexcept {
  const fiber* f = state().current;
  return {f, f ? f->runs : 0};
}

void set_running_handler(std::uint32_t handler) noexcept {
  if (fiber* f = state().current) f->handler = handler;
}

std::size_t stack_left() noexcept {
  const thread_state& s = state();
  const fiber* f = s.current != nullptr ? s.current : s.loop;
  if (!f) return std::numeric_limits<std::size_t>::max();
  const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const auto floor = reinterpret_cast<std::uintptr_t>(f->stack) + page_bytes();
  return here > floor ? here - floor : 0;
}

bool fiber_overflow_at(const void* address, fiber_overflow& report) noexcept {
  // This runs in a signal handler on the faulting thread, which cannot have switched
  // fibers since the fault.
  const fiber* f = tl_running;
  if (!f) return false;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  const auto guard = reinterpret_cast<std::uintptr_t>(f->stack);
  const std::size_t page = page_bytes();
  // The guard page, or just below it: a frame larger than a page can jump over it.
  constexpr std::uintptr_t jump = std::uintptr_t{256} * 1024;
  if (at >= guard + page || at + jump < guard) return false;
  report.node = f->node ? f->node->id() : ~node_id{0};
  report.handler = f->handler;
  report.stack_bytes = f->stack_bytes - page;
  return true;
}

}  // namespace roam::detail
