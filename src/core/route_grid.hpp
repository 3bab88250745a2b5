// The grid that routed channel traffic crosses (--roam-route-min-nodes, ADR 43 in
// docs/design/decisions.md): the job's P nodes fill a grid of C = ceil(sqrt(P)) columns
// (in mixed mode, a multiple or a divisor of the nodes per rank near it) row by row, and a
// record goes first along its sender's row to the destination's column, then down that
// column. So a thread keeps lanes to its row and its column only, about 2 sqrt(P) of them
// instead of P, and each of those lanes fills with records for a whole column of
// destinations.
#pragma once

#include <roam/transport/node_id.hpp>

#include <cstddef>
#include <cstdint>

namespace roam::detail {

struct route_grid {
  node_id nodes = 1;
  node_id columns = 1;
  node_id rows = 1;
  std::uint64_t reciprocal = 0;  ///< ceil(2^64 / columns); 0 for one column

  route_grid() = default;
  /// The grid of `p` nodes, each rank hosting `nodes_per_rank` consecutive ones. With one
  /// node per rank (or one rank) it has ceil(sqrt(p)) columns. With several, the columns
  /// are a multiple or a divisor of the nodes per rank wherever that costs a thread at most
  /// half as many lanes again (always when nodes_per_rank <= sqrt(p)): ranks then hold
  /// parts of one row or whole rows, so relays may hold credit (relays_may_hold_credit)
  /// and a relay's queue stays bounded by the send window in mixed mode too.
  explicit route_grid(node_id p, node_id nodes_per_rank = 1) : nodes(p) {
    while (static_cast<std::size_t>(columns) * columns < p) ++columns;
    if (nodes_per_rank > 1 && nodes_per_rank < p && !relays_may_hold_credit(nodes_per_rank)) {
      const std::uint64_t per_rank = nodes_per_rank;
      // A thread's lanes with c columns: slots() of that grid.
      auto lanes_with = [p](std::uint64_t c) { return c + (p + c - 1) / c; };
      std::uint64_t best = 0, best_slots = ~std::uint64_t{0};
      auto consider = [&](std::uint64_t c) {
        if (c == 0 || c > p) return;
        if (lanes_with(c) < best_slots) best = c, best_slots = lanes_with(c);
      };
      // c + p / c is convex in c: the multiples on either side of sqrt(p) are the best ones.
      const std::uint64_t below = columns / per_rank;
      consider(below * per_rank);
      consider((below + 1) * per_rank);
      for (std::uint64_t d = 1; d * d <= per_rank; ++d)
        if (per_rank % d == 0) {
          consider(d);
          consider(per_rank / d);
        }
      if (2 * best_slots <= 3 * lanes_with(columns)) columns = static_cast<node_id>(best);
    }
    rows = static_cast<node_id>((std::uint64_t{p} + columns - 1) / columns);
    reciprocal = columns == 1 ? 0 : ~std::uint64_t{0} / columns + 1;
  }

  /// n / columns by a multiplication: every channel record of a routed thread needs it, and
  /// a division by a number known only at run time cost 11 % of a random-traffic run
  /// (exact for every 32-bit n: Lemire, Kaser and Kurz, "Faster remainder by direct
  /// computation", 2019).
  node_id row(node_id n) const noexcept {
    if (reciprocal == 0) return n;  // one column
    // The high 64 bits of reciprocal x n, from two 32 x 32-bit products (no 128-bit type
    // in ISO C++).
    const std::uint64_t low = (reciprocal & 0xffffffffu) * n;
    const std::uint64_t high = (reciprocal >> 32) * n;
    return static_cast<node_id>((high + (low >> 32)) >> 32);
  }
  node_id column(node_id n) const noexcept { return n - row(n) * columns; }

  /// Where a record from `from` for `to` goes next: `to` itself when they share a row or a
  /// column, else the node of `from`'s row in `to`'s column. When the last row is short and
  /// has no such node, the node of `to`'s row in `from`'s column (a full row) instead. Two
  /// steps at most, and a record for one destination always takes the same path.
  node_id next_hop(node_id from, node_id to) const noexcept {
    const node_id from_row = row(from), to_row = row(to);
    const node_id from_column = from - from_row * columns, to_column = to - to_row * columns;
    if (from_row == to_row || from_column == to_column) return to;
    const node_id along_row = from_row * columns + to_column;
    return along_row < nodes ? along_row : to_row * columns + from_column;
  }

  /// Whether a relay may hold back the send credit of the records it relays until they have
  /// left it (ADR 43) when each rank hosts `nodes_per_rank` consecutive nodes: credit is
  /// per pair of ranks, so holding is safe only where no rank waits, through its relayed
  /// records' last step, for a rank that holds its credit. That is so with one node per
  /// rank, or when ranks hold whole rows or parts of one row (route_grid_test checks it).
  bool relays_may_hold_credit(node_id nodes_per_rank) const noexcept {
    return nodes_per_rank == 1 || columns % nodes_per_rank == 0 || nodes_per_rank % columns == 0;
  }

  /// Lane slots of one node: one per node of its row, then one per node of its column.
  std::size_t slots() const noexcept { return std::size_t{columns} + rows; }

  /// The slot of the lane `from` uses for records to `to` (the slot of next_hop(from, to)).
  std::size_t slot(node_id from, node_id to) const noexcept {
    const node_id from_row = row(from), to_row = row(to);
    const node_id from_column = from - from_row * columns, to_column = to - to_row * columns;
    if (from_row == to_row) return to_column;
    if (from_column == to_column) return std::size_t{columns} + to_row;
    if (from_row * columns + to_column < nodes) return to_column;
    return std::size_t{columns} + to_row;
  }
};

}  // namespace roam::detail
