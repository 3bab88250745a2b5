// roam — per-node state: one instance of T on every node, reachable from the others.
//
//   roam::node_local<long> received;                       // a global: one per node
//   void deliver(long& mine, long amount) { mine += amount; }
//   ... received.send<deliver>(dest, 5L);                   // runs deliver on dest's instance
//   ... long here = received.local();                       // this node's instance
//
// Two ways to build one (UPC++'s dist_object, YGM's ygm_ptr):
// - Lazily: a global node_local (namespace scope, built before roam::run) holds no T itself;
//   each node's instance is made with T() (or the factory given) the first time that node
//   uses it, locally or through a message, and is destroyed when the run ends. Every run
//   starts with fresh instances. Globals are numbered in the order they are built, which is
//   the same in every process of one binary; a function-local static built inside a run
//   could be numbered differently on different ranks, so building one there is refused.
// - Collectively: `node_local<T> x(roam::collective, args...)` inside roam::run, on every
//   node in the same order (the application body, SPMD), holds its node's T(args...).
//   Messages that reach a node before its instance is built wait for it (their handler
//   suspends). Destroy it only once no message to it can still arrive (after
//   roam::barrier_all_handled(), say); a message that arrives afterwards stops the job
//   naming it.
//
// Threading: local() may be called by any thread of the node concurrently (T's own members
// need their own synchronization if several threads of the node use them; with one worker
// per node they do not). send() and call() follow roam::send and roam::call: messages from
// one thread to one node start in sending order. Handlers run on a worker of the destination
// with a reference to that node's instance.
#pragma once

#include <roam/am/channel.hpp>
#include <roam/am/send.hpp>
#include <roam/core/runtime.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace roam {

namespace detail {

/// How a node's table makes and drops the instances of a lazy node_local (`owner` is the
/// node_local, whose factory makes them).
struct node_local_kind {
  void* (*make)(const void* owner);
  void (*destroy)(void* instance) noexcept;
  const void* owner;
  const char* type_name;  ///< typeid(T).name(), for the binary fingerprint
  /// A checkpointed node_local (roam::checkpointed): its name in checkpoints (owned by the
  /// node_local); null otherwise, and then the functions below are null too.
  const char* checkpoint_name = nullptr;
  /// Appends the serialized instance to `out`.
  void (*save)(const void* instance, std::vector<std::byte>& out) = nullptr;
  /// Builds an instance from saved bytes; throws deserialization_error if they do not make
  /// one.
  void* (*load)(const std::byte* data, std::size_t size) = nullptr;
  /// Merges `from` into `into` with the node_local's merge function; null without one.
  void (*merge)(const void* owner, void* into, void* from) = nullptr;
};

/// A checkpointed global node_local, as checkpoints name it.
struct checkpointed_node_local {
  std::uint32_t id = 0;
  std::string name;
  std::string type;  ///< typeid(T).name()
  bool mergeable = false;
};
/// The checkpointed global node_locals that exist, by id.
std::vector<checkpointed_node_local> checkpointed_node_locals();
/// Appends node `n`'s instance of checkpointed node_local `id`, serialized, to `out`;
/// returns false (appending nothing) if `n` never made one.
bool save_node_local(node_runtime& n, std::uint32_t id, std::vector<std::byte>& out);
/// Gives node `n` the instance of checkpointed node_local `id` that `bytes` hold: as its
/// instance if it has none yet, else merged into it (a usage_error without a merge
/// function). Throws deserialization_error if the bytes do not make one.
void restore_node_local(node_runtime& n, std::uint32_t id, std::span<const std::byte> bytes);

/// Ids of node_local objects: lazy ones from a process-wide counter (globals are made in the
/// same order by every process of one binary), collective ones from a counter of the node.
inline constexpr std::uint32_t collective_node_local = 0x80000000u;
/// Registers a lazy node_local (process-wide, for its whole life); returns its id.
std::uint32_t register_lazy_node_local(const node_local_kind& kind);
void unregister_lazy_node_local(std::uint32_t id) noexcept;

/// The instance of lazy node_local `id` on `n`, made on first use.
void* lazy_node_local(node_runtime& n, std::uint32_t id);
/// Changes whenever a node's table of instances is destroyed (the end of a run), so that a
/// lazy node_local's slots of a past run are never used.
extern std::atomic<std::uint64_t> node_local_generation;
/// A lazy node_local's instances on this process's nodes in one run, indexed by node (local()
/// reads it with two atomic loads and roam::this_node()). Slots of past runs are kept until
/// the node_local dies, so a reader never sees one freed.
struct node_local_slots {
  std::uint64_t generation = 0;
  node_id first = 0;
  node_id count = 0;
  std::unique_ptr<std::atomic<void*>[]> instances;
  std::unique_ptr<node_local_slots> previous;
};
/// local()'s slow path: makes this run's slots if needed, and the calling node's instance.
void* lazy_node_local_slow(std::atomic<node_local_slots*>& slots,
                           std::unique_ptr<node_local_slots>& owned, std::uint32_t id);
/// A collective node_local's instance on `n`: published by its constructor (which gets its
/// id, the next of the node, at once), withdrawn by its destructor. A message for one not
/// built yet waits for it (its handler suspends); one for an instance destroyed stops the job.
std::uint32_t publish_collective_node_local(node_runtime& n, void* instance);
void withdraw_node_local(node_runtime& n, std::uint32_t id) noexcept;
void* collective_node_local_instance(node_runtime& n, std::uint32_t id);

template <class Sig>
struct node_local_signature;
template <class R, class S, class... P>
struct node_local_signature<R(S&, P...)> {
  template <class T, class Invoke>
  struct handler;
  template <class T, class Invoke>
  struct channel_handler;
};

/// The message that runs `Invoke{}(instance, p...)` on the destination's instance of the
/// node_local `id`: a serializable function object carrying the id.
template <class R, class S, class... P>
template <class T, class Invoke>
struct node_local_signature<R(S&, P...)>::handler {
  static_assert(std::is_same_v<std::remove_const_t<S>, T>,
                "roam::node_local<T>: the handler's first parameter must be T& or const T&");
  std::uint32_t id = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(id);
  }
  R operator()(P... p) const;
};

/// A node_local channel's handler (a bound_channel_handler): `Invoke{}(instance, p...)` with
/// the receiving node's instance of the node_local `id`, bound once per group of records.
template <class R, class S, class... P>
template <class T, class Invoke>
struct node_local_signature<R(S&, P...)>::channel_handler {
  static_assert(std::is_same_v<std::remove_const_t<S>, T>,
                "roam::node_local<T>::channel: the handler's first parameter must be T& or "
                "const T&");
  static_assert(std::is_void_v<R>,
                "roam::node_local<T>::channel: the handler returns nothing (a channel message "
                "has no reply; use call() for one)");
  T* instance = nullptr;
  std::uint32_t id = 0;
  static channel_handler bind(std::uint64_t token);
  [[nodiscard]] std::uint64_t token() const noexcept { return id; }
  void operator()(P... p) const { Invoke{}(*instance, std::forward<P>(p)...); }
};

/// @cond
template <class F>
struct callable_signature : callable_signature<decltype(&F::operator())> {};
/// @endcond
template <class C, class R, class... A>
struct callable_signature<R (C::*)(A...) const> {
  using type = R(A...);
};
template <class C, class R, class... A>
struct callable_signature<R (C::*)(A...) const noexcept> {
  using type = R(A...);
};
template <class R, class... A>
struct callable_signature<R (*)(A...)> {
  using type = R(A...);
};
template <class R, class... A>
struct callable_signature<R (*)(A...) noexcept> {
  using type = R(A...);
};

template <auto Function>
struct calls_function {
  template <class... A>
  decltype(auto) operator()(A&&... a) const {
    return Function(std::forward<A>(a)...);
  }
};

}  // namespace detail

/// Tag of node_local's collective constructor.
struct collective_t {
  explicit collective_t() = default;
};
inline constexpr collective_t collective{};

/// Tag of a checkpointed global node_local: roam::checkpoint saves each node's instance
/// under `name`, and a run restarted from the checkpoint (--roam-restart) starts with them
/// (docs/guide/checkpoint.md). Names are unique in a program.
struct checkpointed {
  std::string name;  ///< the state's name in checkpoints
};

/// One instance of T per node. See the file comment for the two ways to build one.
/// Lifetime: a lazy node_local must outlive every roam::run that uses it (make it a global
/// or a static); a collective one lives on the application thread of its node.
template <class T>
class node_local {
 public:
  /// A global (built before roam::run): each node's instance is made with T() the first time
  /// that node uses it. Throws roam::usage_error inside roam::run (use the collective form).
  node_local() : node_local(std::function<T()>{}) {}
  /// A global whose instances are made by `factory()` (called on the node, once per run).
  explicit node_local(std::function<T()> factory) : factory_(std::move(factory)) {
    id_ = detail::register_lazy_node_local(
        {[](const void* owner) -> void* {
           const auto* self = static_cast<const node_local*>(owner);
           return self->factory_ ? new T(self->factory_()) : new T();
         },
         [](void* instance) noexcept { delete static_cast<T*>(instance); }, this,
         typeid(T).name()});
  }
  /// A global saved by roam::checkpoint and restored by a restart: each node's instance is
  /// made with T() on first use, or restored from the checkpoint a run restarts from, where
  /// node k gets the instance node k had. A restart on fewer nodes than the checkpoint's
  /// needs `merge` for the instances of the nodes gone: node `k % nodes` gets each, merged
  /// into its own (`merge(mine, std::move(other))`, in node order); without `merge` such a
  /// restart stops at its start, naming the state. `merge` runs on the node's application
  /// thread before the body of roam::run. T must be serializable (as a message
  /// argument) and default constructible. Throws roam::usage_error inside roam::run, or if
  /// another checkpointed node_local has the same name.
  explicit node_local(checkpointed tag, std::function<void(T& mine, T&& other)> merge = {})
      : factory_(), checkpoint_name_(std::move(tag.name)), merge_(std::move(merge)) {
    static_assert(std::is_default_constructible_v<T>,
                  "roam::node_local<T>(roam::checkpointed{...}): T must be default "
                  "constructible (a restart builds it, then loads its saved state)");
    static_assert(detail::is_serializable<T>,
                  "roam::node_local<T>(roam::checkpointed{...}): T must be serializable");
    detail::node_local_kind kind{[](const void*) -> void* { return new T(); },
                                 [](void* instance) noexcept { delete static_cast<T*>(instance); },
                                 this, typeid(T).name()};
    kind.checkpoint_name = checkpoint_name_.c_str();
    kind.save = [](const void* instance, std::vector<std::byte>& out) {
      detail::message_ptr m = detail::message::allocate(0);
      detail::message_writer w(m);
      detail::write_value(w, *static_cast<const T*>(instance));
      w.finish();
      out.insert(out.end(), m->payload(), m->payload() + m->header.payload_size);
    };
    kind.load = [](const std::byte* data, std::size_t size) -> void* {
      auto made = std::make_unique<T>();
      detail::message_reader r(data, size);
      detail::read_value(r, *made);
      r.expect_end();
      return made.release();
    };
    if (merge_)
      kind.merge = [](const void* owner, void* into, void* from) {
        static_cast<const node_local*>(owner)->merge_(*static_cast<T*>(into),
                                                      std::move(*static_cast<T*>(from)));
      };
    id_ = detail::register_lazy_node_local(kind);
  }
  /// Collective: built inside roam::run on every node in the same order (SPMD); this node's
  /// instance is T(args...). Throws roam::usage_error on a thread of no node.
  template <class... Args>
  explicit node_local(collective_t, Args&&... args)
      : node_(&detail::require_node("roam::node_local(roam::collective, ...)")),
        owned_(std::make_unique<T>(std::forward<Args>(args)...)) {
    id_ = detail::publish_collective_node_local(*node_, owned_.get());
  }
  node_local(const node_local&) = delete;
  node_local& operator=(const node_local&) = delete;
  ~node_local() {
    if (node_)
      detail::withdraw_node_local(*node_, id_);
    else
      detail::unregister_lazy_node_local(id_);
  }

  /// This node's instance (the calling thread's node). Throws roam::usage_error on a thread
  /// of no node.
  T& local() { return instance(); }
  /// This node's instance, as local().
  ///@{
  const T& local() const { return instance(); }
  T& operator*() { return local(); }
  T* operator->() { return &local(); }
  ///@}

  /// Runs `fn(instance, args...)` on node `dest`'s instance, fire and forget. `fn` is a
  /// stateless lambda whose first parameter is T& (or const T&); the others are sent as for
  /// roam::send.
  template <class F, class... Args>
  void send(node_id dest, F, Args&&... args) const {
    roam::send(dest, handler_for<F>(), std::forward<Args>(args)...);
  }
  /// The same with a function: `received.send<deliver>(dest, 5L)`.
  template <auto Function, class... Args>
  void send(node_id dest, Args&&... args) const {
    roam::send(dest, handler_for<detail::calls_function<Function>, decltype(Function)>(),
               std::forward<Args>(args)...);
  }
  /// Runs `fn(instance, args...)` on `dest`'s instance; the future holds its result (or its
  /// exception, as roam::call).
  template <class F, class... Args>
  auto call(node_id dest, F, Args&&... args) const {
    return roam::call(dest, handler_for<F>(), std::forward<Args>(args)...);
  }
  /// The same with a function: `received.call<read>(dest)`.
  template <auto Function, class... Args>
  auto call(node_id dest, Args&&... args) const {
    return roam::call(dest, handler_for<detail::calls_function<Function>, decltype(Function)>(),
                      std::forward<Args>(args)...);
  }

  /// A channel (roam/am/channel.hpp) whose messages run `fn(instance, args...)` on the
  /// destination's instance: aggregated and combined like roam::channel's, and the receiver
  /// looks the instance up once per group of messages (a per-element handler on a table, as
  /// in bale's histogram, costs what it would on a plain array). `fn` is a lambda without
  /// captures whose first parameter is T& (or const T&) and which returns nothing; a leading
  /// roam::source_node may follow it. Ordering, threading and failures as roam::channel. On a
  /// collective node_local, a group that reaches a node before it built its instance waits
  /// for it, and so do the messages behind it (those later in the bundle, and the sending
  /// thread's later bundles on an ordered channel). On a
  /// collective node_local, a group that reaches a node before it built its instance waits
  /// for it, and so do the messages behind it (those later in the bundle, and the sending
  /// thread's later bundles on an ordered channel).
  template <class F>
  auto channel(F, channel_order order = channel_order::ordered) const {
    static_assert(std::is_empty_v<F>,
                  "roam::node_local::channel: the handler must be a lambda "
                  "without captures (pass values as arguments)");
    return channel_of<bound_handler<F>>(bound_handler<F>{nullptr, id_}, order);
  }
  /// The same with a look-ahead hint (roam::look_ahead) that also takes T& first.
  template <class F, class Hint>
  auto channel(F, look_ahead_hint<Hint>, channel_order order = channel_order::ordered) const {
    static_assert(std::is_empty_v<F>,
                  "roam::node_local::channel: the handler must be a lambda "
                  "without captures (pass values as arguments)");
    return channel_of<bound_handler<F>, bound_handler<Hint>>(bound_handler<F>{nullptr, id_}, order);
  }

  /// Internal: the instance a message for node_local `id` reaches on the calling node.
  static T& instance_for_message(std::uint32_t id) {
    detail::node_runtime& n = detail::require_node("roam::node_local");
    if (id & detail::collective_node_local)
      return *static_cast<T*>(detail::collective_node_local_instance(n, id));
    return *static_cast<T*>(detail::lazy_node_local(n, id));
  }

 private:
  T& instance() const {
    if (owned_) return *owned_;
    // No thread-local cache: fibers move between a node's threads, and a compiler may reuse a
    // thread-local's address computed before a suspension. Per-element hot paths use a
    // channel(), which looks the instance up once per group of messages.
    if (const auto* s = slots_.load(std::memory_order_acquire);
        s && s->generation == detail::node_local_generation.load(std::memory_order_acquire)) {
      const node_id index = roam::this_node() - s->first;
      if (index < s->count)
        if (void* found = s->instances[index].load(std::memory_order_acquire))
          return *static_cast<T*>(found);
    }
    return *static_cast<T*>(detail::lazy_node_local_slow(slots_, slots_owned_, id_));
  }

  template <class Invoke>
  using bound_handler = typename detail::node_local_signature<
      typename detail::callable_signature<Invoke>::type>::template channel_handler<T, Invoke>;

  template <class Invoke, class Signature = Invoke>
  auto handler_for() const {
    static_assert(std::is_empty_v<Invoke> && std::is_default_constructible_v<Invoke>,
                  "roam::node_local: the handler must be a lambda without captures (or use "
                  "send<function>)");
    using sig = detail::node_local_signature<typename detail::callable_signature<Signature>::type>;
    typename sig::template handler<T, Invoke> h;
    h.id = id_;
    return h;
  }

  std::uint32_t id_ = 0;
  detail::node_runtime* node_ = nullptr;  // collective: the node that built it
  std::unique_ptr<T> owned_;              // collective: this node's instance
  std::function<T()> factory_;            // lazy: how each node's instance is made
  std::string checkpoint_name_;           // checkpointed: its name in checkpoints
  std::function<void(T&, T&&)> merge_;    // checkpointed: how a restart merges instances
  // Lazy: this run's instances, and every run's slots; local() const fills them too.
  mutable std::atomic<detail::node_local_slots*> slots_{nullptr};
  mutable std::unique_ptr<detail::node_local_slots> slots_owned_;
};

template <class R, class S, class... P>
template <class T, class Invoke>
auto detail::node_local_signature<R(S&, P...)>::channel_handler<T, Invoke>::bind(
    std::uint64_t token) -> channel_handler {
  const auto id = static_cast<std::uint32_t>(token);
  return {&node_local<T>::instance_for_message(id), id};
}

template <class R, class S, class... P>
template <class T, class Invoke>
R detail::node_local_signature<R(S&, P...)>::handler<T, Invoke>::operator()(P... p) const {
  return Invoke{}(node_local<T>::instance_for_message(id), std::move(p)...);
}

}  // namespace roam
