// The tree of ranks that quiescence waves and the job's shutdown travel on (a private
// header of src/core): every rank is reached exactly once, from its parent, in few steps,
// and no rank has more than fan_out children, for any root.
#include "rank_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using roam::node_id;
using roam::detail::rank_tree;

/// Walks the tree from its root: returns each rank's depth (-1 where never reached).
std::vector<int> depths(node_id ranks, node_id root) {
  std::vector<int> depth(ranks, -1);
  std::vector<node_id> level{root};
  depth[root] = 0;
  for (int d = 1; !level.empty(); ++d) {
    std::vector<node_id> next;
    for (node_id r : level) {
      const rank_tree tree{r, root, ranks};
      EXPECT_LE(tree.children(), rank_tree::fan_out);
      tree.for_each_child([&](node_id child) {
        EXPECT_LT(child, ranks);
        EXPECT_EQ(depth[child], -1) << "rank " << child << " reached twice";
        EXPECT_EQ((rank_tree{child, root, ranks}.parent()), r);
        depth[child] = d;
        next.push_back(child);
      });
    }
    level = std::move(next);
  }
  return depth;
}

TEST(RankTree, EveryRankIsReachedOnceFromItsParentWhateverTheRoot) {
  for (node_id ranks : {1u, 2u, 3u, 8u, 9u, 10u, 63u, 64u, 65u, 73u, 100u, 511u, 1000u}) {
    for (node_id root : {node_id{0}, ranks / 2, ranks - 1}) {
      const auto depth = depths(ranks, root);
      int deepest = 0;
      for (node_id r = 0; r < ranks; ++r) {
        ASSERT_GE(depth[r], 0) << "rank " << r << " of " << ranks << " (root " << root
                               << ") is never reached";
        deepest = std::max(deepest, depth[r]);
      }
      // ceil(log_8(ranks)) steps: 1 rank, 0; up to 9, 1; up to 73, 2; up to 585, 3; ...
      int bound = 0;
      for (std::uint64_t covered = 1, level = 1; covered < ranks; ++bound) {
        level *= rank_tree::fan_out;
        covered += level;
      }
      EXPECT_LE(deepest, bound) << ranks << " ranks";
      EXPECT_TRUE((rank_tree{root, root, ranks}.is_root()));
    }
  }
}

TEST(RankTree, PositionsNearTheLargestJobDoNotOverflow) {
  const node_id ranks = node_id{1} << 31;
  // The last rank with children, and the first without.
  const node_id last_parent = (ranks - 2) / rank_tree::fan_out;
  const rank_tree parent{last_parent, 0, ranks};
  EXPECT_EQ(parent.children(), (ranks - 1) - last_parent * rank_tree::fan_out);
  parent.for_each_child([&](node_id child) {
    EXPECT_LT(child, ranks);
    EXPECT_EQ((rank_tree{child, 0, ranks}.parent()), last_parent);
  });
  EXPECT_EQ((rank_tree{last_parent + 1, 0, ranks}.children()), 0u);
  EXPECT_EQ((rank_tree{ranks - 1, 0, ranks}.children()), 0u);
}

}  // namespace
