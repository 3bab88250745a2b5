// The tree the runtime's own protocols (quiescence waves, the job's shutdown) travel on:
// node-then-rank. Inside a process the nodes share memory, so one thread reads or sets all
// of them; between processes the messages follow a k-ary tree of ranks rooted at the rank
// that starts the protocol. No rank receives more than fan_out + 1 messages of one wave,
// and a wave crosses the job in ceil(log_k(ranks)) steps.
#pragma once

#include <roam/transport/node_id.hpp>

#include <algorithm>
#include <cstdint>

namespace roam::detail {

struct rank_tree {
  /// Eight children: a wave over 10^5 ranks is six steps deep, and a rank handles at most
  /// nine of its messages (one from its parent, eight reports), a small share of its
  /// traffic at the waves' pace (at most one every 20 microseconds per waiting node).
  static constexpr node_id fan_out = 8;

  node_id self = 0;   ///< this rank
  node_id root = 0;   ///< the rank that started the protocol
  node_id ranks = 1;  ///< ranks in the job

  /// Position in the tree: the root is 0, the children of v are v * k + 1 ... v * k + k.
  [[nodiscard]] node_id position() const noexcept { return (self + ranks - root) % ranks; }
  [[nodiscard]] bool is_root() const noexcept { return self == root; }
  [[nodiscard]] node_id parent() const noexcept { return rank_at((position() - 1) / fan_out); }
  [[nodiscard]] node_id children() const noexcept {
    const std::uint64_t first = first_child();
    if (first >= ranks) return 0;
    return static_cast<node_id>(std::min<std::uint64_t>(ranks - first, fan_out));
  }
  template <class F>
  void for_each_child(F&& f) const {
    const auto first = static_cast<node_id>(first_child());
    for (node_id i = 0, n = children(); i < n; ++i) f(rank_at(first + i));
  }

 private:
  // 64 bits: positions near 2^31 times the fan-out overflow a node_id.
  [[nodiscard]] std::uint64_t first_child() const noexcept {
    return std::uint64_t{position()} * fan_out + 1;
  }
  [[nodiscard]] node_id rank_at(node_id position) const noexcept {
    return (position + root) % ranks;
  }
};

}  // namespace roam::detail
