// The grid routed channel traffic crosses (a private header of src/core, ADR 43): every
// record reaches its node in at most two steps, each between nodes of one row or one column,
// always by the same path, and a node's lanes (its grid slots) number about 2 sqrt(P).
#include "route_grid.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace {

using roam::node_id;
using roam::detail::route_grid;

bool neighbours(const route_grid& g, node_id a, node_id b) {
  return g.row(a) == g.row(b) || g.column(a) == g.column(b);
}

void check_grid(node_id nodes) {
  const route_grid g(nodes);
  ASSERT_GE(static_cast<std::size_t>(g.columns) * g.rows, nodes);
  // About 2 sqrt(P) slots: the lanes a thread keeps instead of P.
  EXPECT_LE(g.slots(), 2 * static_cast<std::size_t>(std::ceil(std::sqrt(nodes))) + 1)
      << nodes << " nodes";
  for (node_id from = 0; from < nodes; ++from) {
    std::vector<node_id> hop_of_slot(g.slots(), nodes);  // nodes: no hop seen yet
    for (node_id to = 0; to < nodes; ++to) {
      const node_id hop = g.next_hop(from, to);
      ASSERT_LT(hop, nodes) << from << " -> " << to;
      ASSERT_TRUE(neighbours(g, from, hop)) << from << " -> " << to << " via " << hop;
      // Two steps at most: the hop reaches the destination directly.
      ASSERT_EQ(g.next_hop(hop, to), to) << from << " -> " << to << " via " << hop;
      if (neighbours(g, from, to)) {
        ASSERT_EQ(hop, to);
      }
      // One lane per hop: slots name hops, and no two hops share one.
      const std::size_t slot = g.slot(from, to);
      ASSERT_LT(slot, g.slots());
      if (hop_of_slot[slot] == nodes) hop_of_slot[slot] = hop;
      ASSERT_EQ(hop_of_slot[slot], hop) << "slot " << slot << " of node " << from;
      ASSERT_EQ(g.slot(from, hop), slot);
    }
  }
}

TEST(RouteGrid, EveryNodeIsReachedInTwoStepsThroughOneLanePerHop) {
  for (node_id nodes = 1; nodes <= 130; ++nodes) check_grid(nodes);
  for (node_id nodes : {255u, 256u, 257u, 1000u, 1024u}) check_grid(nodes);
}

TEST(RouteGrid, AShortLastRowTakesTheColumnFirst) {
  const route_grid g(7);  // 3 columns: 0 1 2 / 3 4 5 / 6
  EXPECT_EQ(g.columns, 3u);
  EXPECT_EQ(g.rows, 3u);
  EXPECT_EQ(g.next_hop(6, 5), 3u);  // row 2 has no column 2: up column 0, then along row 1
  EXPECT_EQ(g.next_hop(5, 6), 3u);  // along row 1 to column 0, then down
  EXPECT_EQ(g.next_hop(0, 4), 1u);  // along row 0 to column 1, then down
}

}  // namespace
