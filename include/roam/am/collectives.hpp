// roam — collectives among the nodes, for the application threads.
//
// Every node must call the same collectives in the same order, from its application
// thread (the thread running roam::run's body), like MPI collectives on a communicator.
// They run the generalized algorithms of the collectives layer (roam/coll,
// docs/guide/collectives.md) over the job's nodes: the algorithm and radix the rules choose
// (--roam-coll-tuning; --roam-coll-algorithm forces one). Their messages are runtime
// messages, not counted by wait_quiescence, and the waiting thread runs its node's work
// meanwhile. Each call returns when this node's part is done: its result complete, its
// arguments reusable; another node may still be working on its own part.
//
// Values that go by memcpy (roam::detail::is_bitwise_serializable: trivially copyable
// types without a serialize function) travel as their bytes; others (vectors, strings,
// types with `serialize`) are serialized as handler arguments are, and their sizes travel
// first. Operators take two values and return one, and must be associative; reductions
// combine in node order (x0 op x1 op ... op xP-1) unless the operator is known to commute
// (std::plus and the like on arithmetic types, or roam::coll::commutative{op}). Serialized
// values are reduced along a k-nomial tree (or linearly), since their size changes as they
// combine.
#pragma once

#include <roam/am/detail/node_links.hpp>
#include <roam/am/send.hpp>
#include <roam/coll/detail/typed_collectives.hpp>
#include <roam/core/runtime.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace roam {
namespace detail {

node_runtime& collective_node(const char* caller, node_id root);

/// One node collective: its node, trace region and links.
struct coll_call {
  node_runtime& node;
  trace::region_scope traced;
  node_links links;
  coll_call(const char* caller, node_id root)
      : node(collective_node(caller, root)),
        traced(caller, id_of(node)),
        links(node, next_collective_sequence(node)) {}
};

/// `value` serialized as a handler argument is.
template <class T>
std::vector<std::byte> serialized_bytes(const T& value) {
  message_ptr m = message::allocate(0);
  message_writer w(m);
  write_value(w, value);
  return {m->payload(), m->payload() + w.position()};
}

/// The value serialized_bytes made (deserialization_error when the bytes do not hold one).
template <class T>
T value_of_bytes(const std::vector<std::byte>& bytes) {
  static_assert(std::is_default_constructible_v<T>,
                "roam: serialized values of collectives must be default constructible");
  message_reader r(bytes.data(), bytes.size());
  T value{};
  read_value(r, value);
  r.expect_end();
  return value;
}

template <class T>
std::vector<T> values_of_bytes(const std::vector<std::vector<std::byte>>& all) {
  std::vector<T> values;
  values.reserve(all.size());
  for (const auto& bytes : all) values.push_back(value_of_bytes<T>(bytes));
  return values;
}

template <class Op>
struct operator_of {
  using type = Op;
  static const Op& get(const Op& op) { return op; }
  static constexpr bool commutative = false;
};
template <class Op>
struct operator_of<coll::commutative<Op>> {
  using type = Op;
  static const Op& get(const coll::commutative<Op>& c) { return c.op; }
  static constexpr bool commutative = true;
};

/// The reduction of serialized T by `op` (which must outlive it).
template <class T, class Op>
coll::detail::serialized_reduction serialized_reduction_of(const Op& op) {
  using inner = typename operator_of<Op>::type;
  static_assert(std::is_invocable_r_v<T, const inner&, const T&, const T&>,
                "roam: a reduction operator takes two values and returns one");
  return {[](const void* f, std::vector<std::byte>& acc, const std::vector<std::byte>& next) {
            const inner& combine = *static_cast<const inner*>(f);
            acc = serialized_bytes<T>(combine(value_of_bytes<T>(acc), value_of_bytes<T>(next)));
          },
          &operator_of<Op>::get(op), operator_of<Op>::commutative};
}

}  // namespace detail

/// Returns once every node has entered the barrier (control flow only: messages sent before
/// it may still be on their way or running; see barrier_all_handled()).
inline void barrier() {
  // An allreduce of one byte by recursive doubling: every node's byte reaches every node,
  // so none returns before all have entered, in log2 P rounds.
  detail::coll_call call("roam::barrier", 0);
  const unsigned char mine = 0;
  unsigned char all = 0;
  coll::detail::allreduce_of(call.links, &mine, &all, 1, std::bit_or<>{},
                             {coll::algorithm::recursive_multiplying, 2});
}

/// Returns once every node has entered it and every message sent before any node entered
/// it, and every message their handlers sent in turn, has been handled everywhere (YGM's
/// comm::barrier): what the nodes sent is now visible in their state. Counts the messages
/// wait_quiescence counts (not collectives or runtime traffic). Collective, from the
/// application thread, like barrier(); costs two barriers and a quiescence wave.
inline void barrier_all_handled() {
  barrier();
  if (this_node() == 0) wait_quiescence();
  barrier();
}

/// Combines every node's `value` with `op`; the result is returned on every node.
template <class T, class Op>
T allreduce(T value, Op op) {
  detail::coll_call call("roam::allreduce", 0);
  if constexpr (detail::is_bitwise_serializable<T>) {
    T result = value;
    coll::detail::allreduce_of(call.links, &value, &result, 1, op, {});
    return result;
  } else {
    auto bytes = detail::serialized_bytes(value);
    coll::detail::allreduce_serialized(call.links, bytes, detail::serialized_reduction_of<T>(op),
                                       {});
    return detail::value_of_bytes<T>(bytes);
  }
}

/// Combines every node's `value` with `op`; the result is returned on `root`, nullopt
/// elsewhere.
template <class T, class Op>
std::optional<T> reduce(T value, Op op, node_id root = 0) {
  detail::coll_call call("roam::reduce", root);
  const bool at_root = detail::id_of(call.node) == root;
  if constexpr (detail::is_bitwise_serializable<T>) {
    T result = value;
    coll::detail::reduce_of(call.links, &value, &result, 1, op, static_cast<int>(root), {});
    if (!at_root) return std::nullopt;
    return result;
  } else {
    auto bytes = detail::serialized_bytes(value);
    coll::detail::reduce_serialized(call.links, bytes, detail::serialized_reduction_of<T>(op),
                                    static_cast<int>(root), {});
    if (!at_root) return std::nullopt;
    return detail::value_of_bytes<T>(bytes);
  }
}

/// Every node's `value` in node order, on `root`; an empty vector elsewhere.
template <class T>
std::vector<T> gather(T value, node_id root = 0) {
  detail::coll_call call("roam::gather", root);
  if constexpr (detail::is_bitwise_serializable<T>) {
    std::vector<T> all(detail::id_of(call.node) == root ? detail::size_of(call.node) : 0, value);
    coll::detail::gather_of(call.links, &value, all.data(), 1, static_cast<int>(root), {});
    return all;
  } else {
    return detail::values_of_bytes<T>(coll::detail::gather_serialized(
        call.links, detail::serialized_bytes(value), static_cast<int>(root), {}));
  }
}

/// Every node's `value` in node order, on every node.
template <class T>
std::vector<T> allgather(T value) {
  detail::coll_call call("roam::allgather", 0);
  if constexpr (detail::is_bitwise_serializable<T>) {
    std::vector<T> all(detail::size_of(call.node), value);
    coll::detail::allgather_of(call.links, &value, all.data(), 1, {});
    return all;
  } else {
    return detail::values_of_bytes<T>(
        coll::detail::allgather_serialized(call.links, detail::serialized_bytes(value), {}));
  }
}

/// `value` as given on `root`, returned on every node (other nodes' arguments are ignored).
template <class T>
T broadcast_value(T value, node_id root = 0) {
  detail::coll_call call("roam::broadcast_value", root);
  if constexpr (detail::is_bitwise_serializable<T>) {
    coll::detail::bcast_of(call.links, &value, 1, static_cast<int>(root), {});
    return value;
  } else {
    auto bytes = detail::id_of(call.node) == root ? detail::serialized_bytes(value)
                                                  : std::vector<std::byte>{};
    coll::detail::bcast_serialized(call.links, bytes, static_cast<int>(root), {});
    if (detail::id_of(call.node) == root) return value;
    return detail::value_of_bytes<T>(bytes);
  }
}

// Buffers of trivially copyable elements. `how` forces an algorithm and radix (default:
// --roam-coll-algorithm's where it serves the collective, else the rules' choice); an
// algorithm that does not serve the collective, or a non-commutative operator given to
// k_ring by `how`, is a roam::usage_error on every node (k_ring chosen by the rules or the
// setting gives way to reduce_scatter_allgather for such an operator).

/// `count` elements of `in` on every node combined element-wise by `op` into every node's
/// `out`. `out` may be `in`.
template <class T, class Op>
void allreduce(const T* in, T* out, std::size_t count, const Op& op, coll::choice how = {}) {
  detail::coll_call call("roam::allreduce", 0);
  coll::detail::allreduce_of(call.links, in, out, count, op, how);
}

/// allreduce, with the result in `root`'s `out` only (other nodes' `out` is not touched and
/// may be null).
template <class T, class Op>
void reduce(const T* in, T* out, std::size_t count, const Op& op, node_id root = 0,
            coll::choice how = {}) {
  detail::coll_call call("roam::reduce", root);
  coll::detail::reduce_of(call.links, in, out, count, op, static_cast<int>(root), how);
}

/// `root`'s `count` elements at `data` reach every node's `data`.
template <class T>
void broadcast_values(T* data, std::size_t count, node_id root = 0, coll::choice how = {}) {
  detail::coll_call call("roam::broadcast_values", root);
  coll::detail::bcast_of(call.links, data, count, static_cast<int>(root), how);
}

/// Every node's `count` elements at `in` reach `root`'s `out` (nodes x count, in node
/// order); other nodes' `out` is not touched and may be null.
template <class T>
void gather(const T* in, T* out, std::size_t count, node_id root = 0, coll::choice how = {}) {
  detail::coll_call call("roam::gather", root);
  coll::detail::gather_of(call.links, in, out, count, static_cast<int>(root), how);
}

/// gather, with the result in every node's `out`.
template <class T>
void allgather(const T* in, T* out, std::size_t count, coll::choice how = {}) {
  detail::coll_call call("roam::allgather", 0);
  coll::detail::allgather_of(call.links, in, out, count, how);
}

}  // namespace roam
