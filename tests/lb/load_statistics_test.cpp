// White-box tests of the load-balancing layer's per-object load statistics (the rules behind
// the object protocol's load hooks, src/lb/load_statistics).
#include "load_statistics.hpp"

#include <gtest/gtest.h>

namespace {

using roam::detail::object_hooks;
using roam::detail::object_load_counters;

object_hooks installed() {
  object_hooks hooks;
  roam::lb::install_load_statistics(hooks);
  return hooks;
}

TEST(LoadStatistics, InstallsEveryCountingHook) {
  const auto hooks = installed();
  EXPECT_NE(hooks.arrived, nullptr);
  EXPECT_NE(hooks.finished, nullptr);
  EXPECT_NE(hooks.recount, nullptr);
  EXPECT_EQ(hooks.notify, nullptr);  // the policy's, not the statistics'
}

TEST(LoadStatistics, AMessageCountsFromArrivalUntilItsHandlerFinishes) {
  const auto hooks = installed();
  object_load_counters load;
  hooks.arrived(load, 2.5);
  hooks.arrived(load, 1.0);
  EXPECT_EQ(load.pending_count, 2u);
  EXPECT_DOUBLE_EQ(load.pending_cost, 3.5);
  hooks.finished(load, 2.5, -1);
  EXPECT_EQ(load.pending_count, 1u);
  EXPECT_DOUBLE_EQ(load.pending_cost, 1.0);
  EXPECT_DOUBLE_EQ(load.mean_run_us, 0.0);  // not measured
  hooks.finished(load, 1.0, -1);
  EXPECT_EQ(load.pending_count, 0u);
  EXPECT_DOUBLE_EQ(load.pending_cost, 0.0);
}

TEST(LoadStatistics, TheLastFinishLeavesExactlyNothingWhateverTheRounding) {
  const auto hooks = installed();
  object_load_counters load;
  for (int i = 0; i < 3; ++i) hooks.arrived(load, 0.1);
  hooks.finished(load, 0.1, -1);
  hooks.finished(load, 0.3, -1);  // more than is left: never negative
  EXPECT_DOUBLE_EQ(load.pending_cost, 0.0);
  hooks.finished(load, 0.1, -1);
  EXPECT_EQ(load.pending_count, 0u);
  EXPECT_EQ(load.pending_cost, 0.0);
}

TEST(LoadStatistics, AFinishNotCountedOnArrivalChangesNothing) {
  const auto hooks = installed();
  object_load_counters load;
  hooks.finished(load, 4.0, 10.0);
  EXPECT_EQ(load.pending_count, 0u);
  EXPECT_DOUBLE_EQ(load.pending_cost, 0.0);
  EXPECT_DOUBLE_EQ(load.mean_run_us, 0.0);
}

TEST(LoadStatistics, RunTimesAreAMovingAverageThatStartsAtTheFirst) {
  const auto hooks = installed();
  object_load_counters load;
  for (int i = 0; i < 3; ++i) hooks.arrived(load, 1);
  hooks.finished(load, 1, 100.0);
  EXPECT_DOUBLE_EQ(load.mean_run_us, 100.0);
  hooks.finished(load, 1, 200.0);
  EXPECT_DOUBLE_EQ(load.mean_run_us, 0.8 * 100.0 + 0.2 * 200.0);
}

TEST(LoadStatistics, ARecountReplacesTheCountsAndKeepsTheRunTimes) {
  const auto hooks = installed();
  object_load_counters load;
  for (int i = 0; i < 4; ++i) hooks.arrived(load, 2);
  hooks.finished(load, 2, 50.0);
  hooks.recount(load, 2, 1);  // left: one running handler stays
  EXPECT_EQ(load.pending_count, 1u);
  EXPECT_DOUBLE_EQ(load.pending_cost, 2.0);
  EXPECT_DOUBLE_EQ(load.mean_run_us, 50.0);
}

}  // namespace
