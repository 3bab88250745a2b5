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

void check_grid(const route_grid& g) {
  const node_id nodes = g.nodes;
  ASSERT_GE(static_cast<std::size_t>(g.columns) * g.rows, nodes);
  ASSERT_LT(static_cast<std::size_t>(g.columns) * (g.rows - 1), nodes);  // no empty row
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

std::size_t square_grid_slots(node_id nodes) {
  return 2 * static_cast<std::size_t>(std::ceil(std::sqrt(nodes))) + 1;
}

void check_grid(node_id nodes) {
  const route_grid g(nodes);
  // About 2 sqrt(P) slots: the lanes a thread keeps instead of P.
  EXPECT_LE(g.slots(), square_grid_slots(nodes)) << nodes << " nodes";
  check_grid(g);
}

TEST(RouteGrid, EveryNodeIsReachedInTwoStepsThroughOneLanePerHop) {
  for (node_id nodes = 1; nodes <= 130; ++nodes) check_grid(nodes);
  for (node_id nodes : {255u, 256u, 257u, 1000u, 1024u}) check_grid(nodes);
}

// In mixed mode the columns follow the nodes per rank, so that relays may hold credit
// (below), at a cost of at most half as many lanes again; with few nodes per rank always.
TEST(RouteGrid, AMixedModeGridFitsTheRanksAtAboutTwoSqrtPLanes) {
  for (node_id per_rank = 2; per_rank <= 12; ++per_rank)
    for (node_id ranks = 2; ranks <= 40; ++ranks) {
      const node_id nodes = ranks * per_rank;
      const route_grid g(nodes, per_rank);
      check_grid(g);
      EXPECT_LE(2 * g.slots(), 3 * route_grid(nodes).slots()) << ranks << " x " << per_rank;
      if (static_cast<std::size_t>(per_rank) * per_rank <= nodes) {
        EXPECT_TRUE(g.relays_may_hold_credit(per_rank)) << ranks << " x " << per_rank;
      }
    }
  // 3 ranks of 2 nodes: 2 columns (each rank a row) instead of 3.
  EXPECT_EQ(route_grid(6, 2).columns, 2u);
  EXPECT_EQ(route_grid(6).columns, 3u);
  // Where the square grid already fits, it stays: 2 ranks of 2 nodes, 2 ranks of 8.
  EXPECT_EQ(route_grid(4, 2).columns, 2u);
  EXPECT_EQ(route_grid(16, 8).columns, 4u);
  // 4 ranks of 8: 8 columns (each rank a row) instead of 6.
  EXPECT_EQ(route_grid(32, 8).columns, 8u);
  // Many nodes per rank: a divisor of them. 2 ranks of 1024: 64 columns, 32 rows.
  EXPECT_EQ(route_grid(2048, 1024).columns, 64u);
  // One rank (every node in one process): the square grid.
  EXPECT_EQ(route_grid(10, 10).columns, 4u);
  // Rows are counted without wrapping near 2^32 nodes.
  EXPECT_EQ(route_grid(4294967295u).rows, 65536u);
  EXPECT_EQ(route_grid(4294901760u, 65536).rows, 65535u);
}

TEST(RouteGrid, RowsComeFromAMultiplicationExactlyForEveryNode) {
  for (node_id nodes : {1u, 2u, 3u, 7u, 100u, 1000u, 65536u, 1000000u, 4000000000u}) {
    const route_grid g(nodes);
    for (node_id n :
         {0u, 1u, g.columns - 1, g.columns, g.columns + 1, nodes / 2, nodes - 1, 0xffffffffu}) {
      EXPECT_EQ(g.row(n), n / g.columns) << n << " of " << nodes;
      EXPECT_EQ(g.column(n), n % g.columns) << n << " of " << nodes;
    }
  }
}

TEST(RouteGrid, AShortLastRowTakesTheColumnFirst) {
  const route_grid g(7);  // 3 columns: 0 1 2 / 3 4 5 / 6
  EXPECT_EQ(g.columns, 3u);
  EXPECT_EQ(g.rows, 3u);
  EXPECT_EQ(g.next_hop(6, 5), 3u);  // row 2 has no column 2: up column 0, then along row 1
  EXPECT_EQ(g.next_hop(5, 6), 3u);  // along row 1 to column 0, then down
  EXPECT_EQ(g.next_hop(0, 4), 1u);  // along row 0 to column 1, then down
}

// Whether, with `per_rank` nodes per rank, some ranks could wait for each other forever if
// relays held credit: rank X waits for rank Y when X relays records on their last step to Y
// (they need Y's credit) while Y relays first steps from X (and holds X's credit until they
// leave Y). A cycle of such waits is a possible deadlock.
bool holding_could_deadlock(const route_grid& g, node_id per_rank) {
  const node_id nodes = g.nodes;
  const node_id ranks = (nodes + per_rank - 1) / per_rank;
  std::vector<std::set<node_id>> holds(ranks), last_steps_to(ranks);
  for (node_id from = 0; from < nodes; ++from)
    for (node_id to = 0; to < nodes; ++to) {
      const node_id hop = g.next_hop(from, to);
      if (hop == to) continue;
      if (from / per_rank != hop / per_rank) holds[hop / per_rank].insert(from / per_rank);
      if (hop / per_rank != to / per_rank) last_steps_to[hop / per_rank].insert(to / per_rank);
    }
  // Depth-first search for a cycle in "x waits for y".
  std::vector<int> state(ranks, 0);  // 0 new, 1 on the path, 2 done
  auto cyclic = [&](auto&& self, node_id x) -> bool {
    state[x] = 1;
    for (node_id y : last_steps_to[x]) {
      if (!holds[y].count(x)) continue;
      if (state[y] == 1 || (state[y] == 0 && self(self, y))) return true;
    }
    state[x] = 2;
    return false;
  };
  for (node_id x = 0; x < ranks; ++x)
    if (state[x] == 0 && cyclic(cyclic, x)) return true;
  return false;
}

TEST(RouteGrid, RelaysHoldCreditOnlyWhereNoRanksCanWaitForEachOther) {
  // Mixed mode with 2 nodes on each of 3 ranks: two ranks relay for each other (found by
  // the review of ADR 43), so relays must not hold credit there.
  // The grid of 3 columns would have them; the mixed-mode grid has 2 columns instead.
  ASSERT_TRUE(holding_could_deadlock(route_grid(6), 2));
  EXPECT_FALSE(route_grid(6).relays_may_hold_credit(2));
  for (node_id per_rank = 1; per_rank <= 6; ++per_rank)
    for (node_id ranks = 1; ranks <= 40; ++ranks) {
      const node_id nodes = ranks * per_rank;
      for (const route_grid& g : {route_grid(nodes), route_grid(nodes, per_rank)})
        if (g.relays_may_hold_credit(per_rank)) {
          EXPECT_FALSE(holding_could_deadlock(g, per_rank))
              << ranks << " ranks of " << per_rank << " nodes, " << g.columns << " columns";
        }
    }
}

}  // namespace
