// bale toposort with roam (the problem and the algorithm: toposort_problem.hpp).
//
// Each level, every node pivots its rows of one nonzero: it gives each row its position
// and sends the pivot column's owner a message through one channel. The column's owner
// records the column's position and tells the owner of every other row in that column,
// through a second channel, to remove the column. Both hops are aggregated and run
// without waiting for each other; a level ends at quiescence, and the rows left with one
// nonzero form the next one.
//
// Run it with bale::one_worker_per_node settings.
#pragma once

#include "one_worker_per_node.hpp"
#include "toposort_problem.hpp"

#include <roam/roam.hpp>

#include <chrono>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace bale {

/// Each node's share of the matrix and of the result.
inline roam::node_local<toposort_share> toposort_state;

inline const auto& toposort_remove_column() {
  static const auto remove = toposort_state.channel(
      [](toposort_share& s, std::uint32_t row, std::uint32_t column) { s.remove(row, column); });
  return remove;
}

inline const auto& toposort_pivot_column() {
  static const auto pivot = toposort_state.channel(
      [](toposort_share& s, std::uint32_t column, std::uint32_t row, std::uint32_t position) {
        const auto& remove = toposort_remove_column();
        s.place_column({column, row, position},
                       [&](std::uint32_t other) { remove(s.owner(other), other, column); });
      });
  return pivot;
}

/// Pivots this node's rows of the level, the first at position `first` and the others
/// below it; runs on the node's worker, yielding between slices so that messages arriving
/// meanwhile are handled.
inline void toposort_pivot_level(std::uint32_t first) {
  toposort_share& s = toposort_state.local();
  const auto& pivot = toposort_pivot_column();
  constexpr std::size_t slice = 1 << 14;
  for (std::size_t i = 0; i < s.level.size(); ++i) {
    const toposort_share::pivot p = s.place_row(i, first);
    pivot(s.owner(p.column), p.column, p.row, p.position);
    if (i % slice == slice - 1) roam::this_task::yield();
  }
}

/// The kernel, on every node (SPMD, inside roam::run), for the matrix every node built
/// with toposort_matrix(). Returns the seconds from the first level's start to the last
/// level's end. The node's share of the result is toposort_state.local() afterwards.
inline double toposort_roam(const toposort_problem& m) {
  toposort_share& s = toposort_state.local();
  s = toposort_share_of(m, roam::this_node(), roam::num_nodes());
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t placed = 0;
  for (;;) {
    // Between levels no handler runs (quiescence), so this thread may touch the share.
    const std::vector<std::uint32_t> sizes = roam::allgather(s.begin_level());
    const std::uint32_t total = std::accumulate(sizes.begin(), sizes.end(), std::uint32_t{0});
    if (total == 0) break;
    roam::call(roam::this_node(), toposort_pivot_level,
               toposort_first_position(m.rows, placed, sizes, roam::this_node()))
        .get();
    roam::barrier_all_handled();  // every pivot and removal of the level is done
    placed += total;
  }
  if (placed != m.rows) throw std::invalid_argument("bale: the matrix is not morally triangular");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace bale
