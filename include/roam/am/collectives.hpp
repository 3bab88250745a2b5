// roam — collectives among the nodes, for the application threads.
//
// Every node must call the same collectives in the same order, from its application
// thread (the thread running roam::run's body), like MPI collectives on a communicator.
// They travel as runtime messages along a binomial tree (O(log P) steps), are not counted
// by wait_quiescence, and the waiting thread runs its node's work meanwhile.
//
// Reduction operators are functions, or stateless function objects or lambdas (they are
// instantiated on the nodes that combine); they must be associative and commutative:
// partial results are combined in arrival order.
#pragma once

#include <roam/am/send.hpp>
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
  return *detail::tree_reduce<T, Op, true>("roam::allreduce", std::move(value), op, 0);
}

/// Combines every node's `value` with `op`; the result is returned on `root`, nullopt
/// elsewhere (non-roots return as soon as their part is passed on).
template <class T, class Op>
std::optional<T> reduce(T value, Op op, node_id root = 0) {
  return detail::tree_reduce<T, Op, false>("roam::reduce", std::move(value), op, root);
}

/// Every node's `value` in node order, on `root`; an empty vector elsewhere.
template <class T>
std::vector<T> gather(T value, node_id root = 0) {
  using part = std::vector<std::pair<node_id, T>>;
  auto all = detail::tree_reduce<part, detail::concatenate<T>, false>(
      "roam::gather", part{{this_node(), std::move(value)}}, {}, root);
  return all ? detail::in_node_order(std::move(*all)) : std::vector<T>{};
}

/// Every node's `value` in node order, on every node.
template <class T>
std::vector<T> allgather(T value) {
  using part = std::vector<std::pair<node_id, T>>;
  auto all = detail::tree_reduce<part, detail::concatenate<T>, true>(
      "roam::allgather", part{{this_node(), std::move(value)}}, {}, 0);
  return detail::in_node_order(std::move(*all));
}

/// `value` as given on `root`, returned on every node (other nodes' arguments are ignored).
template <class T>
T broadcast_value(T value, node_id root = 0) {
  auto& n = detail::collective_node("roam::broadcast_value", root);
  const detail::trace::region_scope traced("roam::broadcast_value", detail::id_of(n));
  const std::uint64_t seq = detail::next_collective_sequence(n);
  if (detail::id_of(n) == root) detail::release<T>(n, seq, root, std::move(value));
  return *detail::finish<T>(n, seq);
}

}  // namespace roam
