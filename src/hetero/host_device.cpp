// The host backend: kernels run on roam's own pool of CPU threads, one task per work-group
// with the group's items in a loop (thesis Fig. 46-47). Written here rather than on a library
// pool because its operations must chain on device events from any backend without blocking a
// thread, and idle workers must park (2-core machines run several ranks of this at once).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "backends.hpp"
#include "device_event_state.hpp"
#include "roam/hetero/kernel.hpp"

namespace roam::detail {
namespace {

std::atomic<unsigned> copies_to_fail{0};        ///< fail_next_host_copies
std::atomic<std::size_t> device_memory_cap{0};  ///< cap_host_device_memory

/// Throws when a test asked for this copy to fail.
void maybe_fail_copy() {
  unsigned left = copies_to_fail.load(std::memory_order_relaxed);
  while (left > 0 && !copies_to_fail.compare_exchange_weak(left, left - 1)) {
  }
  if (left > 0) throw device_error("a copy failed (injected by fail_next_host_copies)");
}

class host_device final : public device {
 public:
  host_device(device_info info, unsigned threads, unsigned compute_queues)
      : device(std::move(info)), queue_tails_(compute_queues + 2) {
    workers_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  ~host_device() override {
    synchronize();
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  unsigned compute_queue_count() const noexcept override {
    return static_cast<unsigned>(queue_tails_.size() - 2);
  }

  device_buffer allocate(std::size_t bytes) override {
    if (bytes == 0) throw device_error("a device allocation of 0 bytes");
    const std::size_t cap = device_memory_cap.load();
    if (allocated_.fetch_add(bytes) + bytes > cap && cap != 0) {
      allocated_.fetch_sub(bytes);
      throw out_of_device_memory("the host device's memory is full (capped at " +
                                 std::to_string(cap) + " bytes by a test)");
    }
    return {device::allocate_host(bytes), bytes};
  }
  void release(device_buffer buffer) noexcept override {
    if (!buffer) return;
    allocated_.fetch_sub(buffer.bytes);
    device::release_host(buffer.handle, buffer.bytes);
  }

  device_event copy_to_device(device_queue queue, device_buffer destination, std::size_t offset,
                              const void* source, std::size_t bytes,
                              std::span<const device_event> after) override {
    check_range(destination, offset, bytes);
    auto* to = static_cast<char*>(destination.handle) + offset;
    return issue(queue, after, is_small_copy(bytes), [to, source, bytes] {
      maybe_fail_copy();
      std::memcpy(to, source, bytes);
    });
  }

  device_event copy_to_host(device_queue queue, void* destination, device_buffer source,
                            std::size_t offset, std::size_t bytes,
                            std::span<const device_event> after) override {
    check_range(source, offset, bytes);
    const auto* from = static_cast<const char*>(source.handle) + offset;
    return issue(queue, after, is_small_copy(bytes), [destination, from, bytes] {
      maybe_fail_copy();
      std::memcpy(destination, from, bytes);
    });
  }

  device_event copy_on_device(device_queue queue, device_buffer destination,
                              std::size_t destination_offset, device_buffer source,
                              std::size_t source_offset, std::size_t bytes,
                              std::span<const device_event> after) override {
    check_range(destination, destination_offset, bytes);
    check_range(source, source_offset, bytes);
    auto* to = static_cast<char*>(destination.handle) + destination_offset;
    const auto* from = static_cast<const char*>(source.handle) + source_offset;
    return issue(queue, after, is_small_copy(bytes),
                 [to, from, bytes] { std::memmove(to, from, bytes); });
  }

  device_event launch(device_queue queue, const kernel& k, const launch_dims& dims,
                      std::span<const kernel_argument> arguments, std::size_t local_bytes,
                      std::span<const device_event> after) override {
    check_launch(k, dims, arguments);
    if (k.host == nullptr) {
      throw device_error(std::string("kernel '") + (k.name ? k.name : "?") +
                         "' has no host form; the host backend cannot run it");
    }
    auto run = std::make_shared<launch_run>(k.host, dims, arguments, local_bytes);
    const bool small = dims.group_count() * dims.local_count() <= small_launch_items;
    // A small launch runs whole on the thread that starts it: a strip handed to a pool thread
    // could still be running when issue() returns, and a small launch is documented as done
    // by then when its inputs were ready.
    const auto strips = small ? 1U
                              : static_cast<unsigned>(std::min<std::size_t>(
                                    dims.group_count(), std::max<std::size_t>(workers_.size(), 1)));
    // The launch completes when its last group finishes; issue() must not complete it. The
    // thread that starts the launch runs one strip itself: handing it to another thread would
    // cost a wake-up per launch, and a small kernel would pay it alone.
    return issue(queue, after, small,
                 [this, run, strips](const std::shared_ptr<device_event_state>& state) {
                   run->state = state;
                   for (unsigned i = 1; i < strips; ++i) push([run] { run->strip(); });
                   run->strip();
                 });
  }

  void synchronize() override {
    std::vector<device_event> tails;
    {
      std::lock_guard lock(mutex_);
      tails = queue_tails_;
    }
    for (auto& t : tails) wait_until_done(t);
  }

 private:
  struct launch_run {
    launch_run(host_kernel_function f, const launch_dims& d, std::span<const kernel_argument> a,
               std::size_t local)
        : function(f), dims(d), arguments(a.begin(), a.end()), local_bytes(local) {
      slots.reserve(arguments.size());
      for (auto& argument : arguments) slots.push_back(const_cast<void*>(argument.value_address()));
    }

    void strip() {
      kernel_ids ids;
      ids.local_size = dims.local;
      ids.num_groups = dims.groups;
      std::vector<char> local(std::max<std::size_t>(local_bytes, 1));
      const std::size_t total = dims.group_count();
      std::size_t ran = 0;
      for (std::size_t g = next_group.fetch_add(1); g < total; g = next_group.fetch_add(1), ++ran) {
        ids.group_id = {
            static_cast<std::uint32_t>(g % dims.groups[0]),
            static_cast<std::uint32_t>(g / dims.groups[0] % dims.groups[1]),
            static_cast<std::uint32_t>(g / (std::size_t{dims.groups[0]} * dims.groups[1]))};
        try {
          function(slots.data(), &ids, local.data());
        } catch (...) {
          std::lock_guard lock(failure_mutex);
          if (!failure) failure = std::current_exception();
        }
      }
      // The strip that runs the last group completes the launch; a strip that started after
      // every group was taken does nothing, so the launch never waits for its wake-up.
      if (ran > 0 && groups_done.fetch_add(ran, std::memory_order_acq_rel) + ran == total) {
        std::exception_ptr e;
        {
          std::lock_guard lock(failure_mutex);
          e = failure;
        }
        state->complete(e);
      }
    }

    host_kernel_function function;
    launch_dims dims;
    std::vector<kernel_argument> arguments;
    std::vector<void*> slots;
    std::size_t local_bytes;
    std::atomic<std::size_t> next_group{0};
    std::atomic<std::size_t> groups_done{0};
    std::shared_ptr<device_event_state> state;
    std::mutex failure_mutex;
    std::exception_ptr failure;
  };

  static void check_range(device_buffer buffer, std::size_t offset, std::size_t bytes) {
    if (!buffer || offset > buffer.bytes || bytes > buffer.bytes - offset) {
      throw device_error("a copy outside its buffer (offset " + std::to_string(offset) + ", " +
                         std::to_string(bytes) + " bytes, buffer of " +
                         std::to_string(buffer.bytes) + ")");
    }
  }

  /// Copies of up to small_copy_bytes and launches of up to small_launch_items work-items run on
  /// the thread that issues them when nothing they wait for is pending: waking a pool thread
  /// (10-30 microseconds where cores are shared) costs more than they do. The issuing thread
  /// (often one draining the hetero engine, under its lock) is busy for as long as they take:
  /// a copy's time is bounded by its size, but a kernel's is not by its item count, so only
  /// launches small enough to be glue (a halo copy, a one-group reduction) qualify.
  static constexpr std::size_t small_copy_bytes = std::size_t{64} * 1024;
  static constexpr std::size_t small_launch_items = 256;
  [[nodiscard]] static bool is_small_copy(std::size_t bytes) noexcept {
    return bytes <= small_copy_bytes;
  }

  /// Runs `body` once the events of `after` and the queue's previous operation are done, never
  /// blocking the caller: on a pool thread, or right here when `small` and nothing is pending.
  /// A body taking the event state completes it itself. A failure among `after` fails the
  /// operation (its inputs are not there); the previous operation's only orders it: its
  /// failure is its own, or one failed kernel would fail every later operation on its queue.
  template <class Body>
  device_event issue(device_queue queue, std::span<const device_event> after, bool small,
                     Body body) {
    auto state = std::make_shared<device_event_state>();
    state->owner = this;
    std::vector<device_event> waits(after.begin(), after.end());
    const std::size_t carried = waits.size();
    {
      std::lock_guard lock(mutex_);
      auto& tail = queue_tails_[queue_position(queue, queue_tails_.size() - 2)];
      if (tail.state() && !tail.ready()) waits.push_back(tail);
      tail = device_event(state);
    }
    auto run = [state, body = std::move(body)]() mutable {
      if constexpr (std::is_invocable_v<Body&, const std::shared_ptr<device_event_state>&>) {
        try {
          body(state);
        } catch (...) {
          state->complete(std::current_exception());
        }
      } else {
        try {
          body();
          state->complete();
        } catch (...) {
          state->complete(std::current_exception());
        }
      }
    };
    auto start = [this, state, waits, carried, run = std::move(run)](bool here) mutable {
      for (std::size_t i = 0; i < carried; ++i) {
        if (auto failure = waits[i].error()) {
          state->complete(failure);
          return;
        }
      }
      if (here) {
        run();
      } else {
        push(std::move(run));
      }
    };
    if (small &&
        std::all_of(waits.begin(), waits.end(), [](const device_event& w) { return w.ready(); })) {
      start(true);
      return device_event(state);
    }
    auto pending = std::make_shared<std::atomic<std::size_t>>(waits.size() + 1);
    auto shared_start = std::make_shared<decltype(start)>(std::move(start));
    auto arrive = [pending, shared_start] {
      if (pending->fetch_sub(1, std::memory_order_acq_rel) == 1) (*shared_start)(false);
    };
    for (auto& w : waits) w.on_complete(arrive);
    arrive();
    return device_event(state);
  }

  void push(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(work));
    }
    wake_.notify_one();
  }

  void work() {
    for (;;) {
      std::function<void()> next;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
        if (ready_.empty()) return;
        next = std::move(ready_.front());
        ready_.pop_front();
      }
      next();
    }
  }

  std::atomic<std::size_t> allocated_{0};  ///< device memory handed out (for the test cap)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> ready_;
  bool stopping_ = false;
  std::vector<device_event> queue_tails_;
  std::vector<std::thread> workers_;
};

}  // namespace

void fail_next_host_copies(unsigned count) noexcept { copies_to_fail.store(count); }
void cap_host_device_memory(std::size_t bytes) noexcept { device_memory_cap.store(bytes); }

std::unique_ptr<device> make_host_device(int index, const device_discovery_options& options) {
  const unsigned threads = options.host_threads != 0
                               ? options.host_threads
                               : std::max(1u, std::thread::hardware_concurrency());
  device_info info;
  info.index = index;
  info.backend = backend::host;
  info.type = device_type::cpu;
  info.name = "host (" + std::to_string(threads) + " threads)";
  // The host's memory is not measured here; the limit (if any) bounds what the runtime keeps.
  info.memory_bytes = capped_memory(std::size_t{1} << 46, options.memory_limit);
  info.compute_units = threads;
  info.shares_host_memory = !options.host_separate_memory;
  return std::make_unique<host_device>(std::move(info), threads,
                                       std::max(1u, options.compute_queues));
}

}  // namespace roam::detail
