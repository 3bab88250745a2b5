// roam — collectives among the nodes, for the application threads.
//
// Every node must call the same collectives in the same order, from its application
// thread (the thread running roam::run's body), like MPI collectives on a communicator.
// Their messages are runtime messages, not counted by wait_quiescence, and the waiting
// thread runs its node's work meanwhile.
//
// Values that go by memcpy (roam::detail::is_bitwise_serializable: trivially copyable
// types without a serialize function) and the buffer forms run the generalized algorithms
// of the collectives layer (roam/coll, docs/guide/collectives.md) over the nodes: the
// algorithm and radix the rules choose (--roam-coll-tuning; --roam-coll-algorithm forces
// one), and reductions combined in node order unless the operator is known to commute.
// Other values (serialized through cereal: vectors, strings, ...) travel along a binomial
// tree of messages (O(log P) steps) whose reductions combine partial results in arrival
// order: their operators must be associative and commutative, and functions or stateless
// function objects or lambdas (they are instantiated on the nodes that combine).
#pragma once

#include <roam/am/detail/node_links.hpp>
#include <roam/am/send.hpp>
#include <roam/coll/detail/typed_collectives.hpp>
#include <roam/core/runtime.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace roam {
namespace detail {

/// Binomial tree over virtual ranks (node - root) mod P; virtual rank 0 is the root.
struct binomial_tree {
  node_id self, root, size;
  node_id virtual_rank() const noexcept { return (self + size - root) % size; }
  node_id real(node_id v) const noexcept { return (v + root) % size; }
  node_id parent() const noexcept {
    node_id v = virtual_rank();
    return real(v & (v - 1));
  }
  template <class F>
  void for_each_child(F&& f) const {
    node_id v = virtual_rank();
    node_id limit = v == 0 ? size : (v & (~v + 1));  // children are v + 2^k, 2^k < lowest bit
    for (node_id step = 1; step < limit && v + step < size; step <<= 1) f(real(v + step));
  }
  node_id children() const noexcept {
    node_id n = 0;
    for_each_child([&n](node_id) { ++n; });
    return n;
  }
};

template <class T>
struct collective_slot {
  std::mutex lock;
  node_id arrived = 0;
  std::optional<T> partial;
  std::optional<T> result;
  ready_flag done;
};

template <class T>
std::shared_ptr<collective_slot<T>> slot_for(node_runtime& n, std::uint64_t seq) {
  return std::static_pointer_cast<collective_slot<T>>(rendezvous_slot(
      n, seq, [] { return std::shared_ptr<void>(std::make_shared<collective_slot<T>>()); }));
}

template <class T>
struct release_down;

/// Completes the collective on this node and passes the result to the tree children.
template <class T>
void release(node_runtime& n, std::uint64_t seq, node_id root, T value) {
  binomial_tree tree{id_of(n), root, size_of(n)};
  tree.for_each_child([&](node_id child) {
    post(n,
         build_message<release_down<T>>(child, release_down<T>{}, flag_system, seq, root, value));
  });
  auto slot = slot_for<T>(n, seq);
  std::lock_guard guard(slot->lock);
  slot->result = std::move(value);
  slot->done.set();
}

template <class T>
struct release_down {
  void operator()(std::uint64_t seq, node_id root, T value) const {
    release(*current_node(), seq, root, std::move(value));
  }
};

template <class T, class Op, bool All>
struct combine_up;

/// Operators travel as function tokens (functions) or not at all (stateless objects).
template <class Op>
std::uint64_t operator_token(const Op& op) {
  if constexpr (std::is_pointer_v<Op>)
    return encode_function_cached(reinterpret_cast<const void*>(op));
  else
    return 0;
}
template <class Op>
Op operator_from_token(std::uint64_t token) {
  if constexpr (std::is_pointer_v<Op>) {
    return function_from_token<Op>(token);
  } else {
    return Op{};
  }
}

/// Adds one contribution (own or a child's subtree); when all are in, sends the partial
/// result to the parent, or finishes at the root.
template <class T, class Op, bool All>
void contribute(node_runtime& n, std::uint64_t seq, node_id root, Op op, T value) {
  binomial_tree tree{id_of(n), root, size_of(n)};
  auto slot = slot_for<T>(n, seq);
  std::optional<T> complete;
  {
    std::lock_guard guard(slot->lock);
    slot->partial =
        slot->partial ? op(std::move(*slot->partial), std::move(value)) : std::move(value);
    if (++slot->arrived == tree.children() + 1) complete = std::move(slot->partial);
  }
  if (!complete) return;
  if (tree.virtual_rank() != 0) {
    post(n, build_message<combine_up<T, Op, All>>(tree.parent(), combine_up<T, Op, All>{},
                                                  flag_system, seq, root, operator_token(op),
                                                  std::move(*complete)));
    if (!All) {  // rooted collectives end here for non-roots
      std::lock_guard guard(slot->lock);
      slot->done.set();
    }
  } else if (All) {
    release<T>(n, seq, root, std::move(*complete));
  } else {
    std::lock_guard guard(slot->lock);
    slot->result = std::move(*complete);
    slot->done.set();
  }
}

template <class T, class Op, bool All>
struct combine_up {
  void operator()(std::uint64_t seq, node_id root, std::uint64_t op, T value) const {
    contribute<T, Op, All>(*current_node(), seq, root, operator_from_token<Op>(op),
                           std::move(value));
  }
};

/// Waits for the collective `seq` and returns its result (nullopt where there is none).
template <class T>
std::optional<T> finish(node_runtime& n, std::uint64_t seq) {
  auto slot = slot_for<T>(n, seq);
  wait(slot->done);
  erase_rendezvous_slot(n, seq);
  std::lock_guard guard(slot->lock);
  return std::move(slot->result);
}

node_runtime& collective_node(const char* caller, node_id root);

template <class T, class Op, bool All>
std::optional<T> tree_reduce(const char* caller, T value, Op op, node_id root) {
  static_assert(
      std::is_pointer_v<Op> || (std::is_empty_v<Op> && std::is_default_constructible_v<Op>),
      "roam: reduction operators must be functions or stateless function objects or lambdas");
  auto& n = collective_node(caller, root);
  const trace::region_scope traced(caller, id_of(n));
  const std::uint64_t seq = next_collective_sequence(n);
  contribute<T, Op, All>(n, seq, root, op, std::move(value));
  return finish<T>(n, seq);
}

/// One node collective on the generalized algorithms: its node, trace region and links.
struct coll_call {
  node_runtime& node;
  trace::region_scope traced;
  node_links links;
  coll_call(const char* caller, node_id root)
      : node(collective_node(caller, root)),
        traced(caller, id_of(node)),
        links(node, next_collective_sequence(node)) {}
};

struct no_value {
  template <class Ar>
  void serialize(Ar&) {}
};
struct keep_first {
  no_value operator()(no_value a, no_value) const { return a; }
};
template <class T>
struct concatenate {
  std::vector<std::pair<node_id, T>> operator()(std::vector<std::pair<node_id, T>> a,
                                                std::vector<std::pair<node_id, T>> b) const {
    a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
    return a;
  }
};
template <class T>
std::vector<T> in_node_order(std::vector<std::pair<node_id, T>> parts) {
  std::sort(parts.begin(), parts.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<T> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.push_back(std::move(p.second));
  return out;
}

}  // namespace detail

/// Returns once every node has entered the barrier (control flow only: messages sent before
/// it may still be on their way or running; see barrier_all_handled()).
inline void barrier() {
  detail::tree_reduce<detail::no_value, detail::keep_first, true>("roam::barrier", {}, {}, 0);
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
  if constexpr (detail::is_bitwise_serializable<T>) {
    detail::coll_call call("roam::allreduce", 0);
    T result = value;
    coll::detail::allreduce_of(call.links, &value, &result, 1, op, {});
    return result;
  } else {
    return *detail::tree_reduce<T, Op, true>("roam::allreduce", std::move(value), op, 0);
  }
}

/// Combines every node's `value` with `op`; the result is returned on `root`, nullopt
/// elsewhere (non-roots return as soon as their part is passed on).
template <class T, class Op>
std::optional<T> reduce(T value, Op op, node_id root = 0) {
  if constexpr (detail::is_bitwise_serializable<T>) {
    detail::coll_call call("roam::reduce", root);
    T result = value;
    coll::detail::reduce_of(call.links, &value, &result, 1, op, static_cast<int>(root), {});
    if (detail::id_of(call.node) != root) return std::nullopt;
    return result;
  } else {
    return detail::tree_reduce<T, Op, false>("roam::reduce", std::move(value), op, root);
  }
}

/// Every node's `value` in node order, on `root`; an empty vector elsewhere.
template <class T>
std::vector<T> gather(T value, node_id root = 0) {
  if constexpr (detail::is_bitwise_serializable<T>) {
    detail::coll_call call("roam::gather", root);
    std::vector<T> all(detail::id_of(call.node) == root ? detail::size_of(call.node) : 0, value);
    coll::detail::gather_of(call.links, &value, all.data(), 1, static_cast<int>(root), {});
    return all;
  } else {
    using part = std::vector<std::pair<node_id, T>>;
    auto all = detail::tree_reduce<part, detail::concatenate<T>, false>(
        "roam::gather", part{{this_node(), std::move(value)}}, {}, root);
    return all ? detail::in_node_order(std::move(*all)) : std::vector<T>{};
  }
}

/// Every node's `value` in node order, on every node.
template <class T>
std::vector<T> allgather(T value) {
  if constexpr (detail::is_bitwise_serializable<T>) {
    detail::coll_call call("roam::allgather", 0);
    std::vector<T> all(detail::size_of(call.node), value);
    coll::detail::allgather_of(call.links, &value, all.data(), 1, {});
    return all;
  } else {
    using part = std::vector<std::pair<node_id, T>>;
    auto all = detail::tree_reduce<part, detail::concatenate<T>, true>(
        "roam::allgather", part{{this_node(), std::move(value)}}, {}, 0);
    return detail::in_node_order(std::move(*all));
  }
}

/// `value` as given on `root`, returned on every node (other nodes' arguments are ignored).
template <class T>
T broadcast_value(T value, node_id root = 0) {
  if constexpr (detail::is_bitwise_serializable<T>) {
    detail::coll_call call("roam::broadcast_value", root);
    coll::detail::bcast_of(call.links, &value, 1, static_cast<int>(root), {});
    return value;
  } else {
    auto& n = detail::collective_node("roam::broadcast_value", root);
    const detail::trace::region_scope traced("roam::broadcast_value", detail::id_of(n));
    const std::uint64_t seq = detail::next_collective_sequence(n);
    if (detail::id_of(n) == root) detail::release<T>(n, seq, root, std::move(value));
    return *detail::finish<T>(n, seq);
  }
}

// Buffers of trivially copyable elements, on the generalized algorithms: each call returns
// when this node's part is done (its output complete, its input reusable). `how` forces an
// algorithm and radix (default: the rules' choice; docs/guide/collectives.md); an
// algorithm that does not serve the collective, or a non-commutative operator given to
// k_ring, is a roam::usage_error on every node.

/// `count` elements of `in` on every node combined element-wise by `op` (in node order
/// unless `op` is known to commute: roam/coll/commutative.hpp) into every node's `out`.
/// `out` may be `in`.
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
