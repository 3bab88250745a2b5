// roam — futures and promises.
//
// roam::future<T> is the result of roam::call and of every asynchronous operation above
// it. A future has one owner (move-only); its value is taken once by get().
//
// Guarantees:
// - Waiting (get, wait) never idles a thread of a node: it runs that node's queued work
//   and network progress until the value is ready, then parks if there is none.
//   Threads that belong to no node simply block.
// - A continuation given to then() runs exactly once: on the thread that fulfils the
//   promise, or immediately on the calling thread if the value is already there.
// - Exceptions travel: a promise set with an exception makes get() rethrow it, and then()
//   forwards it to the returned future without calling the continuation.
// - A promise destroyed unfulfilled (after get_future) fails its future with
//   roam::broken_promise; nothing waits forever on a promise that no longer exists.
#pragma once

#include <roam/core/detail/node_api.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace roam {

template <class T>
class future;
template <class T>
class promise;

namespace detail {

template <class T>
using stored_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

/// State shared by a promise and its future.
template <class T>
class shared_state : public waitable {
 public:
  void set_value(stored_t<T> v) {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard guard(lock_);
      check_unset();
      value_.emplace(std::move(v));
      run.swap(continuations_);
      mark_ready();
    }
    for (auto& f : run) f();
  }
  void set_exception(std::exception_ptr e) {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard guard(lock_);
      check_unset();
      error_ = std::move(e);
      run.swap(continuations_);
      mark_ready();
    }
    for (auto& f : run) f();
  }
  /// Runs `f` once the state is ready (now, if it is).
  void on_ready(std::function<void()> f) {
    {
      std::lock_guard guard(lock_);
      if (!ready()) {
        continuations_.push_back(std::move(f));
        return;
      }
    }
    f();
  }
  stored_t<T> take() {
    if (error_) std::rethrow_exception(error_);
    return std::move(*value_);
  }
  bool has_error() const noexcept { return static_cast<bool>(error_); }
  std::exception_ptr error() const noexcept { return error_; }

 private:
  void check_unset() const {
    if (ready()) throw usage_error("promise already satisfied");
  }
  std::mutex lock_;
  std::optional<stored_t<T>> value_;
  std::exception_ptr error_;
  std::vector<std::function<void()>> continuations_;
};

template <class T>
future<T> make_future(std::shared_ptr<shared_state<T>> s) {
  return future<T>(std::move(s));
}

template <class T>
std::shared_ptr<shared_state<T>> release_state(future<T>&& f);

}  // namespace detail

/// The consumer side of an asynchronous value.
template <class T>
class future {
 public:
  using value_type = T;  ///< The type of the value get() returns.
  future() = default;
  /// Move-only: moving transfers the shared state (or the value of a future made ready)
  /// and leaves the source invalid.
  ///@{
  future(future&& other) noexcept(std::is_nothrow_move_constructible_v<detail::stored_t<T>>)
      : state_(std::move(other.state_)), value_(std::move(other.value_)) {
    other.value_.reset();
  }
  future& operator=(future&& other) noexcept(
      std::is_nothrow_move_assignable_v<detail::stored_t<T>>&&
          std::is_nothrow_move_constructible_v<detail::stored_t<T>>) {
    if (this == &other) return *this;
    state_ = std::move(other.state_);
    value_.reset();  // emplaced, not assigned: T need not be move-assignable
    if (other.value_) {
      value_.emplace(std::move(*other.value_));
      other.value_.reset();
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ///@}

  /// True once a value or an exception is available. Never blocks.
  bool ready() const noexcept { return value_ || (state_ && state_->ready()); }
  /// True if this future refers to a state (not default-constructed, not consumed by get).
  bool valid() const noexcept { return value_ || state_; }

  /// Waits until ready (running the node's work meanwhile; see the file comment).
  void wait() const {
    if (value_) return;
    check();
    detail::wait(*state_);
  }

  /// Waits, then returns the value (or rethrows the exception). Consumes the future.
  T get() {
    if (value_) {
      detail::stored_t<T> v = std::move(*value_);
      value_.reset();
      if constexpr (!std::is_void_v<T>)
        return v;
      else
        return;
    }
    wait();
    auto s = std::move(state_);
    if constexpr (std::is_void_v<T>)
      s->take();
    else
      return s->take();
  }

  /// Returns a future of `f(value)` (or `f()` for future<void>). `f` runs where the value
  /// is produced (see the file comment); an exception in `f` goes to the returned future.
  /// Consumes this future.
  template <class F>
  auto then(F&& f) {
    using R =
        std::conditional_t<std::is_void_v<T>, std::invoke_result<F>, std::invoke_result<F, T>>;
    using U = typename R::type;
    if (value_) move_value_into_state();
    check();
    auto next = std::make_shared<detail::shared_state<U>>();
    auto source = std::move(state_);
    source->on_ready([source, next, fn = std::forward<F>(f)]() mutable {
      if (source->has_error()) {
        next->set_exception(source->error());
        return;
      }
      try {
        if constexpr (std::is_void_v<T>) {
          source->take();
          if constexpr (std::is_void_v<U>) {
            fn();
            next->set_value({});
          } else
            next->set_value(fn());
        } else {
          if constexpr (std::is_void_v<U>) {
            fn(source->take());
            next->set_value({});
          } else
            next->set_value(fn(source->take()));
        }
      } catch (...) {
        next->set_exception(std::current_exception());
      }
    });
    return future<U>(std::move(next));
  }

 private:
  template <class>
  friend class promise;
  template <class>
  friend class future;
  friend future detail::make_future<T>(std::shared_ptr<detail::shared_state<T>>);
  friend std::shared_ptr<detail::shared_state<T>> detail::release_state<T>(future<T>&&);
  template <class V>
  friend future<std::decay_t<V>> make_ready_future(V&& value);
  explicit future(std::shared_ptr<detail::shared_state<T>> s) : state_(std::move(s)) {}
  /// A future ready with `v` at once, without a shared state (roam::make_ready_future).
  struct ready_tag {};
  future(ready_tag, detail::stored_t<T> v) : value_(std::move(v)) {}
  void check() const {
    if (!state_) throw usage_error("operation on an empty or already consumed future");
  }
  /// Moves a ready value into a shared state, for the operations that need one (then,
  /// release_state).
  void move_value_into_state() {
    auto s = std::make_shared<detail::shared_state<T>>();
    s->set_value(std::move(*value_));
    value_.reset();
    state_ = std::move(s);
  }
  std::shared_ptr<detail::shared_state<T>> state_;
  // The value of a future made ready (make_ready_future): no state allocated, locked or
  // shared (a cache hit of roam::gas::get returns one per call). Empty otherwise.
  std::optional<detail::stored_t<T>> value_;
};

/// The producer side: set_value or set_exception exactly once. The owner may destroy the
/// promise as soon as its future is ready, even while another thread's set_value is still
/// returning (the handler-sets, application-waits pattern).
template <class T>
class promise {
 public:
  promise() : state_(std::make_shared<detail::shared_state<T>>()) {}
  /// Move-only: moving transfers the state and leaves the source empty; a promise assigned
  /// to first breaks its own future if it was not fulfilled.
  ///@{
  promise(promise&& other) noexcept
      : state_(std::move(other.state_)), retrieved_(std::exchange(other.retrieved_, false)) {}
  promise& operator=(promise&& other) noexcept {
    if (this != &other) {
      abandon();
      state_ = std::move(other.state_);
      retrieved_ = std::exchange(other.retrieved_, false);
    }
    return *this;
  }
  promise(const promise&) = delete;
  promise& operator=(const promise&) = delete;
  ///@}
  /// A promise destroyed without a value breaks its future: get() throws
  /// roam::broken_promise instead of waiting forever.
  ~promise() { abandon(); }

  /// The future of this promise; call once.
  future<T> get_future() {
    if (retrieved_) throw usage_error("promise::get_future called twice");
    retrieved_ = true;
    return future<T>(state_);
  }
  // Each setter holds the state while it runs: once the value is visible, the waiting side may
  // destroy this promise (and its future) before the setter has finished waking waiters.
  /// Fulfils the promise with a value (none when `T` is void) or with an exception that the
  /// future's get() rethrows; a second call throws roam::usage_error.
  ///@{
  template <class U = T>
  requires(!std::is_void_v<U>) void set_value(U value) {
    const auto state = state_;
    state->set_value(std::move(value));
  }
  void set_value() requires std::is_void_v<T> {
    const auto state = state_;
    state->set_value({});
  }
  void set_exception(std::exception_ptr e) {
    const auto state = state_;
    state->set_exception(std::move(e));
  }
  ///@}

 private:
  void abandon() noexcept {
    if (!state_ || !retrieved_ || state_->ready()) return;
    try {
      state_->set_exception(std::make_exception_ptr(
          broken_promise("the promise was destroyed before it was fulfilled")));
    } catch (...) {
      // Fulfilled concurrently by a pointer to this promise: nothing left to break.
    }
  }
  std::shared_ptr<detail::shared_state<T>> state_;
  bool retrieved_ = false;
};

/// A future that is ready with `value`. It holds the value itself: nothing is allocated.
template <class T>
future<std::decay_t<T>> make_ready_future(T&& value) {
  using F = future<std::decay_t<T>>;
  return F(typename F::ready_tag{}, std::forward<T>(value));
}
/// A ready future<void>. Every such future shares one immortal state (no allocation: one-sided
/// operations that complete at once return one per call), which is safe because a void state
/// is never consumed.
inline future<void> make_ready_future() {
  static const std::shared_ptr<detail::shared_state<void>> ready = [] {
    static detail::shared_state<void> state;
    state.set_value({});
    return std::shared_ptr<detail::shared_state<void>>(&state, [](detail::shared_state<void>*) {});
  }();
  return detail::make_future<void>(ready);
}

namespace detail {
template <class T>
std::shared_ptr<shared_state<T>> release_state(future<T>&& f) {
  if (f.value_) f.move_value_into_state();
  f.check();
  return std::move(f.state_);
}
}  // namespace detail

/// A future of every value of `futures`, in their order (future<void> for futures of void),
/// once all are ready. If any fails, the result fails with the first exception to arrive
/// (after all have finished). Consumes the futures.
template <class T>
auto when_all(std::vector<future<T>> futures) {
  using all_values = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;
  struct gathering {
    std::mutex lock;
    std::size_t remaining;
    std::vector<std::optional<detail::stored_t<T>>> values;
    std::exception_ptr error;
    promise<all_values> done;
  };
  auto g = std::make_shared<gathering>();
  g->remaining = futures.size();
  g->values.resize(futures.size());
  auto result = g->done.get_future();
  auto finish = [g] {
    if (g->error) {
      g->done.set_exception(g->error);
    } else if constexpr (std::is_void_v<T>) {
      g->done.set_value();
    } else {
      std::vector<T> out;
      out.reserve(g->values.size());
      for (auto& v : g->values) out.push_back(std::move(*v));
      g->done.set_value(std::move(out));
    }
  };
  if (futures.empty()) finish();
  for (std::size_t i = 0; i < futures.size(); ++i) {
    auto s = detail::release_state(std::move(futures[i]));
    s->on_ready([g, s, i, finish] {
      bool last;
      {
        std::lock_guard guard(g->lock);
        if (s->has_error()) {
          if (!g->error) g->error = s->error();
        } else {
          g->values[i].emplace(s->take());
        }
        last = --g->remaining == 0;
      }
      if (last) finish();
    });
  }
  return result;
}

/// Which future of when_any() became ready first, and its value.
template <class T>
struct when_any_result {
  std::size_t index;  ///< The position of that future in when_any()'s argument.
  T value;            ///< Its value.
};
/// Which future of when_any() became ready first, for futures without a value.
template <>
struct when_any_result<void> {
  std::size_t index;  ///< The position of that future in when_any()'s argument.
};

/// A future of the first of `futures` to become ready (its index and value, or its
/// exception). The others keep running; their results are dropped. Consumes the futures;
/// `futures` must not be empty.
template <class T>
future<when_any_result<T>> when_any(std::vector<future<T>> futures) {
  if (futures.empty()) throw usage_error("roam::when_any of no futures");
  struct race {
    std::atomic<bool> decided{false};
    promise<when_any_result<T>> done;
  };
  auto r = std::make_shared<race>();
  auto result = r->done.get_future();
  for (std::size_t i = 0; i < futures.size(); ++i) {
    auto s = detail::release_state(std::move(futures[i]));
    s->on_ready([r, s, i] {
      if (r->decided.exchange(true)) return;
      if (s->has_error()) {
        r->done.set_exception(s->error());
      } else if constexpr (std::is_void_v<T>) {
        r->done.set_value(when_any_result<void>{i});
      } else {
        r->done.set_value(when_any_result<T>{i, s->take()});
      }
    });
  }
  return result;
}

}  // namespace roam
