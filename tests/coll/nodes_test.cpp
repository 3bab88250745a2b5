// The collectives' algorithms over roam nodes (node_links): every algorithm x radix x root x
// size against the serial reference, as the simulated links run them, in one process with
// 1-9 virtual nodes and under mpiexec; and the node collectives' public calls (roam::
// allreduce and the buffer forms), forced choices and settings included.
#include "collective_cases.hpp"

#include <roam/coll/coll_settings.hpp>
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace roam_test;

roam::config job_config() { return roam::config::from_environment(); }

TEST(NodeLinks, EveryAlgorithmRadixRootAndSizeMatchesTheReference) {
  ASSERT_EQ(roam::run(job_config(),
                      [] {
                        auto& node = roam::detail::require_node("test");
                        std::vector<std::string> failures;
                        {
                          // One set of links for the whole sequence: its transfers are
                          // numbered per peer and tag, as every node's are alike.
                          roam::detail::node_links l(node,
                                                     roam::detail::next_collective_sequence(node));
                          failures = case_runner(l).run_all();
                        }
                        for (std::size_t i = 0; i < failures.size() && i < 20; ++i)
                          ADD_FAILURE() << failures[i];
                        EXPECT_TRUE(failures.empty()) << failures.size() << " failures";
                        // No node may leave while another still sends to it.
                        roam::barrier();
                      }),
            0);
}

/// x then y for affine maps: associative, not commutative.
affine compose(affine x, affine y) { return then(x, y); }

TEST(NodeCollectives, ValuesGoInNodeOrderAndBuffersElementWise) {
  ASSERT_EQ(
      roam::run(job_config(),
                [] {
                  const roam::node_id me = roam::this_node(), p = roam::num_nodes();
                  // A trivially copyable value: the generalized algorithms, node order.
                  const affine mine{2 * me + 3, me + 1};
                  affine want = {3, 1};
                  for (roam::node_id r = 1; r < p; ++r) want = then(want, {2 * r + 3, r + 1});
                  EXPECT_EQ(roam::allreduce(mine, compose), want);
                  const auto at_last = roam::reduce(mine, compose, p - 1);
                  EXPECT_EQ(at_last.has_value(), me == p - 1);
                  if (at_last) {
                    EXPECT_EQ(*at_last, want);
                  }
                  const std::vector<roam::node_id> ids = roam::allgather(me);
                  std::vector<roam::node_id> all(p);
                  std::iota(all.begin(), all.end(), 0);
                  EXPECT_EQ(ids, all);
                  EXPECT_EQ(roam::gather(me, p / 2).size(), me == p / 2 ? p : 0u);
                  EXPECT_EQ(roam::broadcast_value(me == p - 1 ? 42 : 7, p - 1), 42);
                  // Serialized values: sizes first, reductions in node order.
                  EXPECT_EQ(roam::allgather(std::to_string(me)).back(), std::to_string(p - 1));
                  std::string order;
                  for (roam::node_id r = 0; r < p; ++r) order += std::to_string(r) + ",";
                  const auto join = [](const std::string& a, const std::string& b) {
                    return a + b;
                  };
                  EXPECT_EQ(roam::allreduce(std::to_string(me) + ",", join), order);
                  const auto joined = roam::reduce(std::to_string(me) + ",", join, p / 2);
                  EXPECT_EQ(joined.has_value(), me == p / 2);
                  if (joined) {
                    EXPECT_EQ(*joined, order);
                  }
                  const std::vector<int> sent(me == 0 ? 5000 : 3, 7);
                  EXPECT_EQ(roam::broadcast_value(sent, 0).size(), 5000u);
                  const auto names = roam::gather(std::string(me, 'x'), p - 1);
                  EXPECT_EQ(names.size(), me == p - 1 ? p : 0u);
                  if (!names.empty()) {
                    EXPECT_EQ(names.back(), std::string(p - 1, 'x'));
                  }
                  // Buffers, with a forced algorithm.
                  std::vector<double> in(1000, me + 1.0), out(1000);
                  roam::allreduce(in.data(), out.data(), in.size(), std::plus<>{},
                                  {roam::coll::algorithm::k_ring, 2});
                  EXPECT_EQ(out[999], p * (p + 1) / 2.0);
                  std::vector<double> everything(std::size_t{1000} * p);
                  roam::allgather(in.data(), everything.data(), in.size(),
                                  {roam::coll::algorithm::recursive_multiplying, 3});
                  EXPECT_EQ(everything[std::size_t{1000} * (p - 1)], static_cast<double>(p));
                  std::vector<int> data(33, me == 0 ? 5 : 0);
                  roam::broadcast_values(data.data(), data.size(), 0);
                  EXPECT_EQ(data[32], 5);
                  // k_ring refuses an operator that does not commute, on every node.
                  std::string refused;
                  try {
                    affine result;
                    roam::allreduce(&mine, &result, 1, compose, {roam::coll::algorithm::k_ring, 1});
                  } catch (const roam::usage_error& e) {
                    refused = e.what();
                  }
                  EXPECT_NE(refused.find("not known to commute"), std::string::npos) << refused;
                  roam::barrier();
                }),
      0);
}

TEST(NodeCollectives, TheSettingForcesAChoiceAndAMalformedOneIsRefused) {
  roam::config cfg = job_config();
  cfg.set("coll-algorithm", "knomial:3");
  EXPECT_EQ(cfg.of<roam::coll::coll_settings>().forced.alg, roam::coll::algorithm::knomial);
  EXPECT_EQ(cfg.of<roam::coll::coll_settings>().forced.k, 3u);
  ASSERT_EQ(
      roam::run(cfg,
                [] {
                  auto& node = roam::detail::require_node("test");
                  roam::detail::node_links l(node, roam::detail::next_collective_sequence(node));
                  EXPECT_EQ(roam::coll::describe(l.forced()), "knomial k=3");
                  EXPECT_EQ(roam::allreduce(1, std::plus<>{}), static_cast<int>(roam::num_nodes()));
                }),
      0);
  // k_ring forced by the setting gives way for an operator that does not commute.
  cfg.set("coll-algorithm", "k_ring:2");
  ASSERT_EQ(roam::run(cfg,
                      [] {
                        const roam::node_id me = roam::this_node(), p = roam::num_nodes();
                        affine want = {3, 1};
                        for (roam::node_id r = 1; r < p; ++r) want = then(want, {2 * r + 3, r + 1});
                        EXPECT_EQ(roam::allreduce(affine{2 * me + 3, me + 1}, compose), want);
                        EXPECT_EQ(roam::allreduce(me + 1, std::plus<>{}), p * (p + 1) / 2);
                      }),
            0);
  try {
    cfg.set("coll-algorithm", "k_ring:0");
    ADD_FAILURE() << "k_ring:0 was taken";
  } catch (const roam::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("radix must be at least 1, not 0"), std::string::npos)
        << e.what();
  }
  try {
    cfg.set("coll-algorithm", "fastest");
    ADD_FAILURE() << "an unknown algorithm was taken";
  } catch (const roam::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown algorithm 'fastest'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
