// roam — tasklets: fine-grained fork-join parallelism inside a node (thesis §4.4).
//
//   roam::task<long> left = roam::spawn([&] { return fib(n - 1); });
//   long right = fib(n - 2);
//   return left.join() + right;
//
// Guarantees:
// - A spawned tasklet goes on the calling thread's deque (a worker's, or the node's
//   application thread's). The owner takes its newest tasklets first; idle threads of the
//   node steal the oldest. Tasklets and handlers share the node's workers: there is no
//   second thread pool.
// - join() never idles. Inside a handler or tasklet it runs the joined tasklet inline when
//   that is the newest on its thread's deque (the common fork-join case, no context
//   switch) and more than half of the joiner's stack is left (so nested inline joins
//   never overflow it: past that depth a join suspends and the tasklet gets a fiber and a
//   whole stack of its own); otherwise the task is suspended and its worker runs other work (never
//   unrelated tasklets on the joiner's stack, which could then wait for a roam::mutex the
//   joiner holds, or nest without bound). The application thread, which cannot be
//   suspended, runs its own tasklets, steals, and runs other work of its node.
// - A thread running tasklets inline still answers other nodes: every 8 tasklets, once 20 µs
//   passed, a join polls the network and lets up to 64 queued arrivals run (a task suspends
//   for them and resumes first after them; the application thread runs them itself).
// - A tasklet may run on any thread of the spawning node, maybe the joining thread itself
//   (inside join). It may capture references to the spawner's locals: join() is the only
//   way to finish with a task, and a task destroyed unjoined joins first.
// - An exception escaping a tasklet is rethrown by join().
// - spawn() must be called from a thread of a node (a handler, a tasklet, or an
//   application thread), else it throws roam::usage_error.
#pragma once

#include <roam/base/error.hpp>
#include <roam/transport/message.hpp>

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

namespace roam {

namespace detail {

struct fiber;

struct tasklet : work_item {
  std::atomic<bool> finished{false};
  std::atomic<fiber*> joiner{nullptr};  // a suspended join waiting for it
  void (*body)(tasklet*) = nullptr;
  std::size_t stack_bytes = 0;  // its own stack size (roam::stack_size); 0: the setting's
};

/// Queues `t` on the calling thread's deque (or runs it at once if the deque is full).
void spawn_tasklet(tasklet* t);
/// Returns once `t` has finished, helping in the meantime (see the file comment).
void join_tasklet(tasklet* t);

template <class R>
struct tasklet_of : tasklet {
  std::optional<std::conditional_t<std::is_void_v<R>, bool, R>> value;
  std::exception_ptr error;
  virtual ~tasklet_of() = default;
};

template <class F, class R>
struct tasklet_impl final : tasklet_of<R> {
  explicit tasklet_impl(F f) : fn(std::move(f)) { this->body = &run; }
  static void run(tasklet* base) {
    auto* self = static_cast<tasklet_impl*>(base);
    try {
      if constexpr (std::is_void_v<R>) {
        self->fn();
        self->value.emplace(true);
      } else {
        self->value.emplace(self->fn());
      }
    } catch (...) {
      self->error = std::current_exception();
    }
  }
  F fn;
};

}  // namespace detail

/// A larger stack for one tasklet: `roam::spawn(roam::stack_size{1 << 20}, f)` runs `f` on
/// a stack of at least that many bytes (a request below the --roam-stack-size setting gets
/// the setting; more than 1 GiB is a roam::usage_error). A tasklet that asks for more
/// than the setting runs on a fiber of its own (never inline on its joiner's stack),
/// created for it and freed after it.
struct stack_size {
  std::size_t bytes = 0;  ///< The requested stack size, in bytes.
};

/// The handle of a spawned tasklet; move-only. join() exactly once (the destructor joins a
/// task that was not joined).
template <class R>
class task {
 public:
  task() = default;
  /// Move-only: moving transfers the tasklet and leaves the source empty; a task assigned to
  /// first joins the tasklet it held.
  ///@{
  task(task&& other) noexcept : t_(std::exchange(other.t_, nullptr)) {}
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      finish_quietly();
      t_ = std::exchange(other.t_, nullptr);
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ///@}
  ~task() { finish_quietly(); }

  /// True once the tasklet has finished. Never waits.
  bool done() const noexcept { return t_ && t_->finished.load(std::memory_order_acquire); }

  /// Waits for the tasklet (helping meanwhile) and returns its result, or rethrows its
  /// exception.
  R join() {
    if (!t_) throw usage_error("roam::task::join on an empty or already joined task");
    detail::join_tasklet(t_);
    detail::tasklet_of<R>* t = std::exchange(t_, nullptr);
    std::exception_ptr error = t->error;
    if constexpr (std::is_void_v<R>) {
      delete t;
      if (error) std::rethrow_exception(error);
    } else {
      if (error) {
        delete t;
        std::rethrow_exception(error);
      }
      R value = std::move(*t->value);
      delete t;
      return value;
    }
  }

 private:
  template <class F>
  friend auto spawn(stack_size stack, F&& f);
  explicit task(detail::tasklet_of<R>* t) noexcept : t_(t) {}
  void finish_quietly() noexcept {
    if (!t_) return;
    detail::join_tasklet(t_);
    delete std::exchange(t_, nullptr);
  }
  detail::tasklet_of<R>* t_ = nullptr;
};

/// Runs `f()` as a tasklet of the calling thread's node, on a stack of at least
/// `stack.bytes` bytes; returns its task.
template <class F>
auto spawn(stack_size stack, F&& f) {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  auto* t = new detail::tasklet_impl<std::decay_t<F>, R>(std::forward<F>(f));
  t->stack_bytes = stack.bytes;
  try {
    detail::spawn_tasklet(t);
  } catch (...) {
    delete t;
    throw;
  }
  return task<R>(t);
}

/// Runs `f()` as a tasklet of the calling thread's node; returns its task.
template <class F>
auto spawn(F&& f) {
  return spawn(stack_size{}, std::forward<F>(f));
}

/// Calls `body(i)` for every i in [begin, end) in parallel on the node's workers, splitting
/// the range recursively down to `grain` iterations (0: about 8 pieces per worker).
/// Returns when every call has returned; rethrows the first exception of a piece.
template <class Index, class Body>
void parallel_for(Index begin, Index end, Body body, std::size_t grain = 0);

/// Reduces `map(i)` for i in [begin, end) with `combine`, starting from `identity`, in
/// parallel like parallel_for. `combine` must be associative.
template <class Index, class T, class Map, class Combine>
T parallel_reduce(Index begin, Index end, T identity, Map map, Combine combine,
                  std::size_t grain = 0);

namespace detail {
std::size_t default_grain(std::size_t iterations) noexcept;

template <class Index, class Body>
void parallel_for_range(Index begin, Index end, const Body& body, std::size_t grain) {
  if (static_cast<std::size_t>(end - begin) <= grain) {
    for (Index i = begin; i < end; ++i) body(i);
    return;
  }
  const Index middle = begin + (end - begin) / 2;
  auto left = spawn([&] { parallel_for_range(begin, middle, body, grain); });
  parallel_for_range(middle, end, body, grain);
  left.join();
}

template <class Index, class T, class Map, class Combine>
T parallel_reduce_range(Index begin, Index end, const T& identity, const Map& map,
                        const Combine& combine, std::size_t grain) {
  if (static_cast<std::size_t>(end - begin) <= grain) {
    T acc = identity;
    for (Index i = begin; i < end; ++i) acc = combine(std::move(acc), map(i));
    return acc;
  }
  const Index middle = begin + (end - begin) / 2;
  auto left =
      spawn([&] { return parallel_reduce_range(begin, middle, identity, map, combine, grain); });
  T right = parallel_reduce_range(middle, end, identity, map, combine, grain);
  return combine(left.join(), std::move(right));
}
}  // namespace detail

template <class Index, class Body>
void parallel_for(Index begin, Index end, Body body, std::size_t grain) {
  if (end <= begin) return;
  if (grain == 0) grain = detail::default_grain(static_cast<std::size_t>(end - begin));
  detail::parallel_for_range(begin, end, body, grain);
}

template <class Index, class T, class Map, class Combine>
T parallel_reduce(Index begin, Index end, T identity, Map map, Combine combine, std::size_t grain) {
  if (end <= begin) return identity;
  if (grain == 0) grain = detail::default_grain(static_cast<std::size_t>(end - begin));
  return detail::parallel_reduce_range(begin, end, identity, map, combine, grain);
}

}  // namespace roam
