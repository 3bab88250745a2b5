// Who asks whom in master_worker. Up to flat_up_to nodes, every worker asks the master.
// Beyond, the nodes form groups of ⌈√P⌉ by number: each group's first node (the master, in
// the master's group) serves its group, and asks the master on behalf of its group. No
// node then serves more than about 2√P others, where one master served P − 1.
// Pure arithmetic (no runtime calls), so that it is tested on its own.
#pragma once

#include <roam/transport/node_id.hpp>

#include <cmath>
#include <cstdint>

namespace roam::lb::builtin {

class master_groups {
 public:
  static constexpr node_id flat_up_to = 64;

  master_groups(node_id nodes, node_id master) noexcept
      : nodes_(nodes), master_(master), group_(nodes <= flat_up_to ? 0 : side(nodes)) {}

  /// Whether the job has groups (more than flat_up_to nodes).
  [[nodiscard]] bool grouped() const noexcept { return group_ != 0; }
  /// The node that serves `n` (n is not the master).
  [[nodiscard]] node_id up(node_id n) const noexcept {
    const node_id leader = leader_of(n);
    return leader == n ? master_ : leader;
  }
  /// Whether `n` serves a group of its own (the master excluded).
  [[nodiscard]] bool leads(node_id n) const noexcept { return n != master_ && leader_of(n) == n; }
  /// The nodes a request from `n` speaks for: its group for a group's server, else itself.
  [[nodiscard]] node_id represented(node_id n) const noexcept {
    return leads(n) ? group_size(n) : 1;
  }
  /// The nodes whose load `server`'s view of the average covers, itself included.
  [[nodiscard]] node_id covered(node_id server) const noexcept {
    return server == master_ || !grouped() ? nodes_ : group_size(server);
  }

 private:
  static node_id side(node_id nodes) noexcept {
    auto s = static_cast<node_id>(std::sqrt(static_cast<double>(nodes)));
    while (std::uint64_t{s} * s < nodes) ++s;
    return s;
  }
  [[nodiscard]] node_id first_of(node_id n) const noexcept { return n / group_ * group_; }
  [[nodiscard]] node_id group_size(node_id n) const noexcept {
    const node_id first = first_of(n);
    return nodes_ - first < group_ ? nodes_ - first : group_;
  }
  [[nodiscard]] node_id leader_of(node_id n) const noexcept {
    if (!grouped()) return n == master_ ? n : master_;
    const node_id first = first_of(n);
    return master_ >= first && master_ - first < group_ ? master_ : first;
  }

  node_id nodes_, master_, group_;  // group_: nodes per group, 0 when flat
};

}  // namespace roam::lb::builtin
