// The tree that greedy_refine gathers its reports along and sends its moves down: the
// nodes in a complete k-ary tree by number, node 0 at the root. A node hears from its
// parent and at most k children, and a round takes ⌈log_k P⌉ steps each way, where a
// gather straight to node 0 made it receive P reports at once.
// Pure arithmetic (no runtime calls), so that it is tested on its own.
#pragma once

#include <roam/transport/node_id.hpp>

#include <cstdint>

namespace roam::lb::builtin {

class gather_tree {
 public:
  static constexpr node_id fan_out = 8;

  explicit gather_tree(node_id nodes) noexcept : nodes_(nodes) {}

  /// The node `n` reports to; not for the root.
  static node_id parent(node_id n) noexcept { return (n - 1) / fan_out; }
  /// The children of `n` are first_child(n) .. first_child(n) + children(n) - 1.
  static node_id first_child(node_id n) noexcept { return n * fan_out + 1; }
  [[nodiscard]] node_id children(node_id n) const noexcept {
    // In 64 bits: n * fan_out + fan_out overflows 32 bits for the last nodes of 2^32.
    const std::uint64_t first = std::uint64_t{n} * fan_out + 1;
    if (first >= nodes_) return 0;
    const std::uint64_t left = nodes_ - first;
    return static_cast<node_id>(left < fan_out ? left : fan_out);
  }
  /// The child of `n` whose subtree holds `x` (x must be in n's subtree, other than n).
  static node_id child_toward(node_id n, node_id x) noexcept {
    while (parent(x) != n) x = parent(x);
    return x;
  }
  /// Whether `x` lies in the subtree of `n` (n itself included).
  static bool in_subtree(node_id n, node_id x) noexcept {
    while (x > n) x = parent(x);
    return x == n;
  }

 private:
  node_id nodes_;
};

}  // namespace roam::lb::builtin
