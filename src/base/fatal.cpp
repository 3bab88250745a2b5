#include <roam/base/detail/fatal.hpp>
#include <roam/base/detail/message_text.hpp>

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace roam::detail {
namespace {

std::atomic<void (*)()> abort_hook{nullptr};
std::atomic<long (*)() noexcept> node_lookup{nullptr};
std::atomic<bool> dying{false};
std::atomic<pthread_t> dying_thread{};

// Another thread is already taking the job down; do not interleave messages. The same
// thread again (its report overflowed the stack, or faulted) ends the process at once.
[[noreturn]] void wait_for_the_end() noexcept {
  if (pthread_equal(dying_thread.load(), pthread_self())) std::_Exit(EXIT_FAILURE);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

bool start_dying() noexcept {
  if (dying.exchange(true)) return false;
  dying_thread.store(pthread_self());
  return true;
}

[[noreturn]] void end_the_job() noexcept {
  if (auto hook = abort_hook.load()) hook();
  std::_Exit(EXIT_FAILURE);
}

}  // namespace

void set_job_abort_hook(void (*hook)()) noexcept { abort_hook.store(hook); }

void set_fatal_node_lookup(long (*lookup)() noexcept) noexcept { node_lookup.store(lookup); }

void fatal_from_signal(const char* line, std::size_t bytes) noexcept {
  if (!start_dying()) wait_for_the_end();
  while (bytes > 0) {
    const ssize_t written = ::write(STDERR_FILENO, line, bytes);
    if (written <= 0) break;
    line += written;
    bytes -= static_cast<std::size_t>(written);
  }
  end_the_job();
}

void fatal(const std::string& what) noexcept {
  if (!start_dying()) wait_for_the_end();
  const auto lookup = node_lookup.load();
  try {
    const std::string line = fatal_text(lookup ? lookup() : -1, what);
    std::fprintf(stderr, "%s\n", line.c_str());
  } catch (...) {  // no memory for the line: the message alone
    std::fprintf(stderr, "roam: fatal error: %s\n", what.c_str());
  }
  std::fflush(stderr);
  end_the_job();
}

}  // namespace roam::detail
