// Stack overflows of handlers and tasklets become a fatal error that names the handler.
//
// Every fiber stack has a guard page below it, so an overflow faults instead of
// corrupting memory. The fault arrives as SIGSEGV (or SIGBUS) on the overflowing stack,
// which has no room left: the handler runs on an alternate signal stack each thread that
// runs fibers installs. It reports an overflow of a fiber's stack and stops the job; any
// other fault goes on to the handler that was installed before (a sanitizer's, or the
// default one that dumps core), as if roam had not been there.
#include "stack_overflow.hpp"

#include <roam/core/detail/fiber.hpp>
#include "node_runtime.hpp"

#include <roam/core/detail/handler_registry.hpp>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace roam::detail {
namespace {

struct sigaction previous_segv {};
struct sigaction previous_bus {};

// Appends to a fixed buffer without allocating (async-signal-safe).
struct line_buffer {
  char text[512];
  std::size_t used = 0;
  void add(const char* s, std::size_t n) noexcept {
    n = std::min(n, sizeof text - used);
    std::memcpy(text + used, s, n);
    used += n;
  }
  void add(const char* s) noexcept { add(s, std::strlen(s)); }
  void add(std::uint64_t v) noexcept {
    char digits[24];
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) add(&digits[--n], 1);
  }
};

void pass_on(int signal, siginfo_t* info, void* context) noexcept {
  const struct sigaction& previous = signal == SIGBUS ? previous_bus : previous_segv;
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  // The default action. Returning re-executes a faulting instruction, which faults again
  // and now ends the process as it would have without roam; a signal sent by kill() or
  // raise() is not repeated, so it is raised again.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  if (info->si_code <= 0) raise(signal);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  fiber_overflow report;
  if (!fiber_overflow_at(info->si_addr, report)) {
    pass_on(signal, info, context);
    return;
  }
  line_buffer line;
  line.add("roam: stack overflow in ");
  const bool loop = report.handler == fiber_overflow::worker_loop;
  const handler_entry* e =
      report.handler == ~0u || loop ? nullptr : handler_registry::find(report.handler);
  if (loop) {
    line.add("a worker's loop (network progress, admitting arrivals, load-balancing messages)");
  } else if (e) {
    line.add("handler '");
    line.add(e->name.data(), e->name.size());
    line.add("'");
  } else {
    line.add("a tasklet");
  }
  line.add(" on node ");
  line.add(report.node);
  line.add(" (stack ");
  line.add(report.stack_bytes / 1024);
  line.add(" KiB; raise with --roam-stack-size or ROAM_STACK_SIZE");
  if (!e && !loop) line.add(", or spawn the tasklet with roam::stack_size");
  line.add(")\n");
  fatal_from_signal(line.text, line.used);
}

// The handler formats one line and calls the job's abort hook (MPI_Abort under mpi):
// 64 KiB holds that with a wide margin, where SIGSTKSZ may not.
constexpr std::size_t alternate_stack_bytes = std::size_t{64} * 1024;

struct alternate_stack {
  void* base = nullptr;
  std::size_t bytes = 0;
  stack_t previous{};
  alternate_stack() {
    // A large enough stack the thread has already (a sanitizer's, the application's) is
    // kept: replacing it would leak it, or break its owner.
    if (sigaltstack(nullptr, &previous) == 0 && !(previous.ss_flags & SS_DISABLE) &&
        previous.ss_size >= alternate_stack_bytes)
      return;
    bytes = std::max<std::size_t>(alternate_stack_bytes, static_cast<std::size_t>(SIGSTKSZ));
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      base = nullptr;
      return;  // no report of overflows on this thread; they still fault
    }
    stack_t s{};
    s.ss_sp = base;
    s.ss_size = bytes;
    sigaltstack(&s, nullptr);
  }
  ~alternate_stack() {
    if (!base) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(previous.ss_sp && !(previous.ss_flags & SS_DISABLE) ? &previous : &off, nullptr);
    munmap(base, bytes);
  }
  alternate_stack(const alternate_stack&) = delete;
  alternate_stack& operator=(const alternate_stack&) = delete;
};

}  // namespace

void report_stack_overflows_on_this_thread() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
  });
  thread_local alternate_stack stack;
  (void)stack;
}

}  // namespace roam::detail
