// The heterogeneous engine's serializing executor; see serial_executor.hpp.
#include "serial_executor.hpp"

#include <roam/base/detail/thread_name.hpp>

#include <utility>

namespace roam::detail {
namespace {
/// The drain the calling thread is running now, if any: which executor (work posted to it from
/// inside joins the inbox), and whether this thread is a backend's (it must not block).
struct drain_frame {
  const serial_executor* executor = nullptr;
  bool backend_thread = false;
};
thread_local drain_frame current_drain;
}  // namespace

serial_executor::~serial_executor() { wait_for_callbacks(); }

void serial_executor::wait_for_callbacks() {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [&] { return callbacks_outstanding_ == 0; });
}

void serial_executor::start(const char* thread_name) {
  thread_ = std::thread([this] { engine_loop(); });
  name_thread(thread_.native_handle(), thread_name);
}

void serial_executor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [&] { return !draining_; });
}

bool serial_executor::must_not_block() noexcept { return current_drain.backend_thread; }

void serial_executor::post(work item, drainer who) {
  std::unique_lock lock(mutex_);
  post_locked(lock, std::move(item), who);
}

void serial_executor::expect_callback() {
  std::lock_guard lock(mutex_);
  ++callbacks_outstanding_;
}

void serial_executor::post_from_callback(work item, drainer who) {
  std::unique_lock lock(mutex_);
  post_locked(lock, std::move(item), who);
  // Counted down after its drain: stop() and the destructor wait for both.
  if (--callbacks_outstanding_ == 0 && stopping_) wake_.notify_all();
}

void serial_executor::post_locked(std::unique_lock<std::mutex>& lock, work item, drainer who) {
  inbox_.push_back(std::move(item));
  if (draining_ || current_drain.executor == this) return;  // the drain in progress takes it
  if (who == drainer::engine_thread || stopping_) {
    wake_.notify_all();
    return;
  }
  draining_ = true;
  drain(lock, who == drainer::backend_thread);
}

void serial_executor::want_engine_thread() {
  std::lock_guard lock(mutex_);
  wants_engine_thread_ = true;
}

void serial_executor::drain(std::unique_lock<std::mutex>& lock, bool backend_thread) {
  const drain_frame outer = current_drain;
  current_drain = {this, backend_thread};
  const bool engine_thread = std::this_thread::get_id() == thread_.get_id();
  while (!inbox_.empty()) {
    std::vector<work> batch;
    batch.swap(inbox_);
    lock.unlock();
    run_(batch, engine_thread);
    batch.clear();  // the work's captures go before the lock is taken again
    lock.lock();
  }
  draining_ = false;
  current_drain = outer;
  // The engine thread takes over what this drain could not do without blocking; stop() waits
  // for the last drain.
  if (wants_engine_thread_ || stopping_) wake_.notify_all();
}

void serial_executor::engine_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] {
      return stopping_ || (!draining_ && (!inbox_.empty() || wants_engine_thread_));
    });
    if (draining_ || (inbox_.empty() && !wants_engine_thread_)) {
      if (stopping_) return;
      continue;
    }
    if (wants_engine_thread_ && inbox_.empty()) inbox_.push_back([] {});  // one pass
    wants_engine_thread_ = false;
    draining_ = true;
    drain(lock, false);
  }
}

}  // namespace roam::detail
