// The collectives' rules file: what a complete file selects, and each error, named by its
// line.
#include <roam/base/error.hpp>
#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/model_probe.hpp>
#include <roam/coll/tuning_rules.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace {

using roam::coll::algorithm;
using roam::coll::collective;
using roam::coll::tuning_rules;

const std::string example_path = ROAM_COLL_RULES_EXAMPLE;

bool same(const roam::coll::choice& c, algorithm a, unsigned k) { return c.alg == a && c.k == k; }

TEST(TuningRules, TheFirstRuleWhoseBoundHoldsIsChosenAtEveryLevel) {
  const tuning_rules rules = tuning_rules::load(example_path);
  EXPECT_TRUE(same(rules.select(collective::bcast, 8, 4, 4096), algorithm::knomial, 4));
  EXPECT_TRUE(
      same(rules.select(collective::bcast, 8, 4, 4097), algorithm::recursive_multiplying, 2));
  EXPECT_TRUE(same(rules.select(collective::bcast, 9, 1, 1), algorithm::knomial, 0));
  EXPECT_TRUE(same(rules.select(collective::bcast, 9, 2, 1), algorithm::recursive_multiplying, 8));
  EXPECT_TRUE(same(rules.select(collective::reduce, 1000, 64, 1 << 20), algorithm::knomial, 3));
  EXPECT_TRUE(same(rules.select(collective::gather, 3, 1, 0), algorithm::linear, 0));
  EXPECT_TRUE(same(rules.select(collective::allgather, 2, 1, 8), algorithm::linear, 0));
  EXPECT_TRUE(
      same(rules.select(collective::allgather, 3, 1, 8), algorithm::recursive_multiplying, 3));
  EXPECT_TRUE(
      same(rules.select(collective::allreduce, 4, 1, 65536), algorithm::recursive_multiplying, 4));
  EXPECT_TRUE(same(rules.select(collective::allreduce, 4, 1, 65537),
                   algorithm::reduce_scatter_allgather, 2));
}

// The text of the error `text` gives.
std::string error_of(const std::string& text) {
  try {
    (void)tuning_rules::parse(text, "r.json");
  } catch (const roam::config_error& e) {
    return e.what();
  }
  return "";
}

// Rules for every collective but allreduce, one line each; `allreduce` is the rest.
std::string with_allreduce(const std::string& allreduce) {
  std::string text = "{\n";
  for (const char* c : {"bcast", "reduce", "gather", "allgather"})
    text += std::string("\"collective=") + c +
            "\": {\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": {\"algorithm=linear\": "
            "{}}}}},\n";
  return text + "\"collective=allreduce\": " + allreduce + "\n}";
}

void expect_error(const std::string& text, const std::string& part) {
  const std::string e = error_of(text);
  EXPECT_NE(e.find(part), std::string::npos) << "error: '" << e << "', expected '" << part << "'";
}

TEST(TuningRules, EachErrorNamesItsLine) {
  const std::string leaf = "{\"msg_size=any\": {\"algorithm=knomial\": {}}}";
  expect_error(with_allreduce("{\"comm_size=any\": {\"ppn<=4\": " + leaf + "}}"),
               "r.json:6: the last ppn rule must be \"ppn=any\"");
  expect_error(with_allreduce("{\"comm_size<=8\": {\"ppn=any\": " + leaf +
                              "},\n\"comm_size<=4\": {\"ppn=any\": " + leaf +
                              "},\n\"comm_size=any\": {\"ppn=any\": " + leaf + "}}"),
               "r.json:7: \"comm_size<=4\" does not exceed the bound before it");
  expect_error(with_allreduce("{\"comm_size=any\": {\"ppn=any\": " + leaf +
                              "},\n\"comm_size<=4\": {\"ppn=any\": " + leaf + "}}"),
               "r.json:7: \"comm_size<=4\" follows \"comm_size=any\" and can never apply");
  expect_error(
      with_allreduce(
          "{\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": {\"algorithm=fast\": {}}}}}"),
      "r.json:6: unknown algorithm in \"algorithm=fast\"");
  expect_error(
      with_allreduce(
          "{\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": {\"algorithm=knomial\": {\"k=1\": "
          "{}}}}}}"),
      "r.json:6: the knomial algorithm's radix k must be at least 2, not 1");
  expect_error(
      with_allreduce(
          "{\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": {\"algorithm=k_ring\": {\"k=0\": "
          "{}}}}}}"),
      "r.json:6: the k_ring algorithm's radix k must be at least 1, not 0");
  std::string ring_gather = with_allreduce("{}");
  const std::string linear_gather =
      "gather\": {\"comm_size=any\": {\"ppn=any\": "
      "{\"msg_size=any\": {\"algorithm=linear";
  ring_gather.replace(ring_gather.find("\"collective=" + linear_gather) + 12, linear_gather.size(),
                      "gather\": {\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": "
                      "{\"algorithm=k_ring");
  expect_error(ring_gather, "r.json:4: the k_ring algorithm has no gather");
  expect_error(
      with_allreduce(
          "{\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": {\"algorithm=linear\": {\"k=2\": "
          "{}}}}}}"),
      "the linear algorithm takes no radix");
  expect_error(with_allreduce("{\"comm_size<=x\": {}}"), "'x' is not a whole number");
  expect_error(with_allreduce("{\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": 3}}}"),
               "r.json:6: a rule's value must be an object");
  expect_error(with_allreduce("{\"comm_size=any\": {}\n"), "r.json:8: the rules end too early");
  expect_error(with_allreduce("{}"), "r.json:6: no comm_size rule here");
}

TEST(TuningRules, AnIncompleteOrWrongSetIsRefused) {
  expect_error("{}", "r.json:1: no rules for bcast");
  std::string rsa_bcast = with_allreduce("{}");
  const std::string linear = "algorithm=linear";
  rsa_bcast.replace(rsa_bcast.find(linear), linear.size(), "algorithm=reduce_scatter_allgather");
  expect_error(rsa_bcast, "r.json:2: the reduce_scatter_allgather algorithm has no bcast");
  expect_error(with_allreduce("{\"comm_size=any\": {\"ppn=any\": " +
                              std::string("{\"msg_size=any\": {\"algorithm=linear\": {}}}}},\n") +
                              "\"collective=reduce\": {}"),
               "r.json:7: a second rule set for reduce");
  expect_error("{\"collective=scan\": {}}", "r.json:1: expected \"collective=NAME\"");
  expect_error(with_allreduce("{}") + " x", "text after the rules' closing brace");
}

TEST(TuningRules, AMissingFileIsNamed) {
  try {
    (void)tuning_rules::load("/nonexistent/rules.json");
    FAIL() << "a missing file was read";
  } catch (const roam::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/rules.json"), std::string::npos);
  }
}

}  // namespace

namespace {

using roam::coll::cost_model;

TEST(CostModel, RulesFromTheModelAreCompleteAndServeTheirCollectives) {
  const cost_model model;
  const tuning_rules rules = roam::coll::rules_from(model);
  for (const collective c : {collective::bcast, collective::reduce, collective::gather,
                             collective::allgather, collective::allreduce})
    for (std::uint64_t ranks : {1u, 2u, 3u, 17u, 1000u, 5000000u})
      for (std::uint64_t bytes : {0ull, 8ull, 100000ull, 1ull << 40}) {
        const auto choice = rules.select(c, ranks, 1, bytes);
        EXPECT_NE(choice.alg, algorithm::automatic);
        EXPECT_LT(model.time_us(c, choice, 64, 1024), 1e300)
            << roam::coll::describe(choice) << " for " << roam::coll::to_string(c);
      }
}

TEST(TuningRules, KRingTakesAGroupSizeOfOne) {
  const tuning_rules rules =
      tuning_rules::parse(with_allreduce("{\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": "
                                         "{\"algorithm=k_ring\": {\"k=1\": {}}}}}}"),
                          "r.json");
  EXPECT_TRUE(same(rules.select(collective::allreduce, 6, 3, 1 << 20), algorithm::k_ring, 1));
  EXPECT_EQ(roam::coll::describe({algorithm::k_ring, 0}), "k_ring k=1");
  EXPECT_EQ(roam::coll::describe({algorithm::knomial, 0}), "knomial k=2");
}

TEST(CostModel, TheRingsBandwidthShowsForLargeBroadcasts) {
  const cost_model model;
  // Scatter + ring allgather moves about 2n per rank where a binomial tree moves n log P.
  EXPECT_LT(model.time_us(collective::bcast, {algorithm::k_ring, 1}, 64, 64u << 20),
            model.time_us(collective::bcast, {algorithm::knomial, 2}, 64, 64u << 20));
  EXPECT_EQ(model.time_us(collective::reduce, {algorithm::k_ring, 1}, 8, 8),
            std::numeric_limits<double>::infinity());
}

TEST(CostModel, ItFavoursFewRoundsForSmallMessagesAndFewBytesForLargeOnes) {
  const cost_model model;
  // 8 bytes to 64 ranks: alpha dominates, so a wide tree beats the binomial one.
  const auto small = model.best(collective::bcast, 64, 8);
  EXPECT_LT(model.time_us(collective::bcast, small, 64, 8),
            model.time_us(collective::bcast, {algorithm::knomial, 2}, 64, 8));
  EXPECT_GT(small.k, 2u);
  // 64 MiB allreduce on 64 ranks: moving each byte about twice wins.
  EXPECT_EQ(model.best(collective::allreduce, 64, 64u << 20).alg,
            algorithm::reduce_scatter_allgather);
  EXPECT_EQ(model.time_us(collective::allreduce, {algorithm::knomial, 2}, 1, 100), 0.0);
  // An algorithm without the collective never wins.
  EXPECT_EQ(model.time_us(collective::gather, {algorithm::recursive_multiplying, 2}, 8, 8),
            std::numeric_limits<double>::infinity());
}

TEST(CostModel, EachFurtherMessageOfARoundCostsItsOverhead) {
  // Regression: with every message of a round overlapping (thesis 4.2's model, overhead 0)
  // the model chose radix P at every scale: one rank posting 4095 messages at once.
  cost_model overlapping;
  overlapping.overhead_us = 0;
  EXPECT_EQ(overlapping.best(collective::bcast, 4096, 8).k, 4096u);
  const cost_model model{3.0, 4e-5, 2.5e-4, 0.6};
  for (const collective c : {collective::bcast, collective::reduce, collective::gather,
                             collective::allgather, collective::allreduce})
    for (const std::uint64_t bytes : {8ull, 4096ull, 1ull << 20}) {
      const auto chosen = model.best(c, 4096, bytes);
      EXPECT_LE(chosen.k, 64u) << roam::coll::describe(chosen) << " for "
                               << roam::coll::to_string(c) << " of " << bytes << " B";
    }
  // Still a wider tree than the binomial one for small messages on many ranks.
  EXPECT_GT(model.best(collective::bcast, 4096, 8).k, 2u);
  // Linear posts P - 1 messages in one round: o (P - 2) above one message's latency.
  EXPECT_DOUBLE_EQ(model.time_us(collective::bcast, {algorithm::linear, 0}, 10, 0), 3.0 + 8 * 0.6);
}

TEST(CostModel, TheEnvironmentsFormTakesThreeOrFourNumbers) {
  using roam::coll::detail::parse_cost_model;
  const cost_model three = parse_cost_model("2.5,1e-4,3e-4", "M");
  EXPECT_DOUBLE_EQ(three.alpha_us, 2.5);
  EXPECT_DOUBLE_EQ(three.beta_us_per_byte, 1e-4);
  EXPECT_DOUBLE_EQ(three.gamma_us_per_byte, 3e-4);
  EXPECT_DOUBLE_EQ(three.overhead_us, cost_model{}.overhead_us);
  EXPECT_DOUBLE_EQ(parse_cost_model("1, 2, 3, 0.25", "M").overhead_us, 0.25);
  for (const char* bad : {"", "1,2", "1,2,3,4,5", "1,2,3,", "1,-2,3", "1;2;3", "1,2,3x", "a,b,c"})
    try {
      (void)parse_cost_model(bad, "ROAM_COLL_MODEL");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const roam::config_error& e) {
      EXPECT_NE(std::string(e.what()).find("ROAM_COLL_MODEL='"), std::string::npos) << e.what();
    }
}

}  // namespace
