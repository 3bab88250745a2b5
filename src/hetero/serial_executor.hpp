#pragma once
// The heterogeneous engine's serializing executor (ADR 31): work is posted to an inbox, and one
// thread at a time drains it. Which thread drains is the rule this type holds:
// - a drain already running on any thread takes what is posted meanwhile (work posted from
//   inside a drain joins the inbox instead of nesting a second drain);
// - otherwise the posting thread drains when its post says it may (a submitting thread, or one
//   of roam's own backend threads completing an event), saving a wake-up of the engine thread;
// - otherwise, and always once stopping, the engine thread drains.
// A backend's own thread (the host pool, the CUDA poller) must not block inside its drain, as it
// may be the very thread that completes what the drain would wait for: must_not_block() tells
// the engine's work, which leaves such work to the engine thread (want_engine_thread()).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace roam::detail {

/// Who may drain the work a post() adds, when no drain is running.
enum class drainer : std::uint8_t {
  engine_thread,  ///< only the engine thread (callers may not, or the poster's thread is unknown)
  poster,         ///< the posting thread, which may block there (a submitting thread)
  backend_thread  ///< the posting thread, one of roam's backend threads: it must not block
};

class serial_executor {
 public:
  using work = std::function<void()>;
  /// Runs a batch of posted work (with the inbox's lock released); `engine_thread` says whether
  /// this drain is the engine thread's. It must not throw: the engine's state could not be
  /// trusted afterwards (the runner ends the job itself).
  using batch_runner = std::function<void(std::vector<work>& batch, bool engine_thread)>;

  explicit serial_executor(batch_runner run) : run_(std::move(run)) {}
  serial_executor(const serial_executor&) = delete;
  serial_executor& operator=(const serial_executor&) = delete;
  /// Waits for every callback announced by expect_callback() (wait_for_callbacks()).
  ~serial_executor();

  void start(const char* thread_name);
  /// From here on nothing drains (posts only queue); joins the engine thread, and waits for a
  /// drain still running on another thread (it may hold references that keep the engine's
  /// owner alive).
  void stop();
  /// Blocks until every callback announced by expect_callback() has posted (call after
  /// stop(), once nothing will complete new operations: their callbacks only queue then).
  void wait_for_callbacks();

  void post(work item, drainer who);
  /// A device callback will post once: the executor outlives it (the destructor waits).
  void expect_callback();
  /// The announced callback's post.
  void post_from_callback(work item, drainer who);
  /// Asks the engine thread for a drain (a pass even with an empty inbox): work a backend
  /// thread's drain left because it would have blocked. Set until such a drain begins.
  void want_engine_thread();
  /// Whether the calling thread is draining as a backend thread (see drainer::backend_thread).
  [[nodiscard]] static bool must_not_block() noexcept;

 private:
  void post_locked(std::unique_lock<std::mutex>& lock, work item, drainer who);
  /// Runs the inbox's work until it is empty; `lock` holds mutex_ and draining_ was set (this
  /// clears it).
  void drain(std::unique_lock<std::mutex>& lock, bool backend_thread);
  void engine_loop();

  batch_runner run_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<work> inbox_;
  bool stopping_ = false;
  bool draining_ = false;             ///< some thread is running the inbox's work
  bool wants_engine_thread_ = false;  ///< a drain on the engine thread is needed
  std::size_t callbacks_outstanding_ = 0;
  std::thread thread_;
};

}  // namespace roam::detail
