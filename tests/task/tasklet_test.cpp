// Tasklets: fork-join trees checked against serial results, on 1, 2 and 4 workers.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

roam::config with_workers(unsigned workers) {
  roam::config cfg;
  cfg.transport = roam::transport_kind::inproc;
  cfg.nodes = 1;
  cfg.threads = workers;
  return cfg;
}

long fib(int n) {
  if (n < 2) return n;
  auto left = roam::spawn([n] { return fib(n - 1); });
  const long right = fib(n - 2);
  return left.join() + right;
}
long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

// A tree with a random fan-out (0-5 children) per node, fixed by the seed.
long random_tree(std::uint32_t seed, int depth) {
  std::minstd_rand rng(seed);
  if (depth == 0) return 1;
  const int children = static_cast<int>(rng() % 6);
  std::vector<roam::task<long>> kids;
  for (int c = 0; c < children; ++c) {
    const auto child_seed = static_cast<std::uint32_t>(rng());
    kids.push_back(roam::spawn([child_seed, depth] { return random_tree(child_seed, depth - 1); }));
  }
  long total = 1;
  for (auto& k : kids) total += k.join();
  return total;
}
long serial_tree(std::uint32_t seed, int depth) {
  std::minstd_rand rng(seed);
  if (depth == 0) return 1;
  const int children = static_cast<int>(rng() % 6);
  long total = 1;
  for (int c = 0; c < children; ++c)
    total += serial_tree(static_cast<std::uint32_t>(rng()), depth - 1);
  return total;
}

}  // namespace

class Tasklets : public ::testing::TestWithParam<unsigned> {};

TEST_P(Tasklets, FibMatchesSerial) {
  long got = 0;
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [&got] {
                        // From the application thread and from inside a handler.
                        got = fib(22);
                        EXPECT_EQ(roam::call(0, [] { return fib(20); }).get(), serial_fib(20));
                      }),
            0);
  EXPECT_EQ(got, serial_fib(22));
}

TEST_P(Tasklets, RandomFanOutTreesMatchSerial) {
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        for (std::uint32_t seed : {3u, 17u, 99u})
                          EXPECT_EQ(random_tree(seed, 7), serial_tree(seed, 7)) << seed;
                      }),
            0);
}

TEST_P(Tasklets, ParallelForAndReduceCoverEveryIndexOnce) {
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        std::vector<std::atomic<int>> hits(100000);
                        roam::parallel_for(std::size_t{0}, hits.size(),
                                           [&hits](std::size_t i) { hits[i].fetch_add(1); });
                        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
                        const long sum = roam::parallel_reduce(
                            0L, 1000000L, 0L, [](long i) { return i; },
                            [](long a, long b) { return a + b; });
                        EXPECT_EQ(sum, 1000000L * 999999 / 2);
                        EXPECT_EQ(roam::parallel_reduce(
                                      5, 5, 42, [](int) { return 1; },
                                      [](int a, int b) { return a + b; }),
                                  42);
                      }),
            0);
}

TEST_P(Tasklets, ExceptionsReachJoin) {
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        auto t =
                            roam::spawn([]() -> int { throw std::invalid_argument("bad piece"); });
                        EXPECT_THROW(t.join(), std::invalid_argument);
                        EXPECT_THROW(roam::parallel_for(0, 1000,
                                                        [](int i) {
                                                          if (i == 777)
                                                            throw std::range_error("777");
                                                        }),
                                     std::range_error);
                      }),
            0);
}

TEST_P(Tasklets, JoinSuspendsWhenTheTaskletWaits) {
  // A tasklet that waits on a future: its joiner suspends (or helps) instead of blocking.
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        auto result = roam::call(0, [] {
                          roam::promise<int> p;
                          auto f = p.get_future();
                          auto waiting = roam::spawn([&f] { return f.get() * 2; });
                          auto setter = roam::spawn([&p] {
                            roam::this_task::yield();
                            p.set_value(21);
                          });
                          setter.join();
                          return waiting.join();
                        });
                        EXPECT_EQ(result.get(), 42);
                      }),
            0);
}

// A path of `depth` tree nodes, each joining the tasklet of its child: `depth` nested joins.
// Issue 25: every join ran inline on the joiner's stack, and ~220 of them overflowed the
// 128 KiB handler stack (exit 139, no message). Inline joins now stop at half the stack.
long chain(int depth) {
  if (depth == 0) return 0;
  auto child = roam::spawn([depth] { return chain(depth - 1); });
  volatile char frame[256];  // a realistic frame per level, so the stack matters
  frame[0] = 1;
  return child.join() + frame[0];
}

// The guide's recursive fork-join on a deep tree, joined in reverse order of spawning.
long reverse_joined_tree(int depth) {
  if (depth == 0) return 1;
  std::vector<roam::task<long>> kids;
  kids.push_back(roam::spawn([depth] { return reverse_joined_tree(depth - 1); }));
  if (depth % 64 == 0)  // a second, shallow child now and then
    kids.push_back(roam::spawn([] { return reverse_joined_tree(1); }));
  long total = 1;
  for (auto k = kids.rbegin(); k != kids.rend(); ++k) total += k->join();
  return total;
}

TEST_P(Tasklets, DeeplyNestedJoinsDoNotOverflowTheStack) {
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        EXPECT_EQ(roam::call(0, [] { return chain(5000); }).get(), 5000);
                        // 2000 levels, 31 of them (multiples of 64) with a 2-node extra child.
                        EXPECT_EQ(roam::call(0, [] { return reverse_joined_tree(2000); }).get(),
                                  2001 + 31 * 2);
                      }),
            0);
}

// A tasklet that recurses deeper than the configured stack asks for its own.
[[gnu::noinline]] long recurse(long depth) {
  volatile char pad[256];
  pad[0] = static_cast<char>(depth);
  if (depth == 0) return pad[0];
  return recurse(depth - 1) + pad[0];
}

TEST_P(Tasklets, ATaskletMayAskForALargerStack) {
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        const long got = roam::call(0, [] {
                                           auto t = roam::spawn(roam::stack_size{4u << 20},
                                                                [] { return recurse(3000); });
                                           return t.join();
                                         }).get();
                        EXPECT_EQ(got, recurse(3000));
                      }),
            0);
}

// Issue 25, defect 4: children joined oldest first. A joiner resumed behind the tasklets
// of its thread's deque waited until they had all started, each on a fiber of its own:
// one live fiber per inner tree node, 87 MB for this tree, and at depth 9 the mappings ran
// out ("cannot map a fiber stack"). Resumed fibers now go before new tasklets.
long oldest_first(int depth) {
  // A little work per tree node, as in a search (the joiner's children then finish in the
  // order the deque runs them, not at once).
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(200);
  while (std::chrono::steady_clock::now() < until) {
  }
  if (depth == 0) return 1;
  std::vector<roam::task<long>> children;
  children.reserve(4);
  for (int c = 0; c < 4; ++c)
    children.push_back(roam::spawn([depth] { return oldest_first(depth - 1); }));
  long total = 1;
  for (auto& child : children) total += child.join();
  return total;
}

TEST_P(Tasklets, OldestFirstJoinsOfALargeTreeKeepFewFibers) {
  roam::config cfg = with_workers(GetParam());
  cfg.lend_app_thread = false;  // the workers alone
  ASSERT_EQ(roam::run(cfg,
                      [] {
                        // 4-ary, depth 9: 349,525 tasklets, 87,381 of them joining.
                        EXPECT_EQ(roam::call(0, [] { return oldest_first(9); }).get(), 349525);
                      }),
            0);
}

TEST(TaskletStacks, AStackAboveOneGiBIsRefused) {
  ASSERT_EQ(
      roam::run(with_workers(1),
                [] {
                  EXPECT_THROW((void)roam::spawn(roam::stack_size{(std::size_t{1} << 30) + 1},
                                                 [] { return 1; }),
                               roam::usage_error);
                  EXPECT_EQ(
                      roam::spawn(roam::stack_size{std::size_t{1} << 20}, [] { return 7; }).join(),
                      7);
                }),
      0);
}

INSTANTIATE_TEST_SUITE_P(Workers, Tasklets, ::testing::Values(1u, 2u, 4u));

TEST(TaskletWakeUp, ParkedWorkersAreWokenToStealFromAWaitingApplicationThread) {
  roam::config cfg = with_workers(2);
  cfg.lend_app_thread = false;  // the application thread only waits: workers must steal
  ASSERT_EQ(roam::run(cfg,
                      [] {
                        for (int round = 0; round < 200; ++round) {
                          roam::promise<int> p;
                          auto f = p.get_future();
                          auto t = roam::spawn([&p, round] { p.set_value(round); });
                          EXPECT_EQ(f.get(), round);
                          t.join();
                          // Let the workers park again before the next round.
                          if (round % 20 == 0)
                            std::this_thread::sleep_for(std::chrono::milliseconds(2));
                        }
                      }),
            0);
}

TEST(TaskletWakeUp, SpawnFromAThreadOfNoNodeIsRejected) {
  EXPECT_THROW(roam::spawn([] { return 1; }), roam::usage_error);
  EXPECT_THROW(roam::when_any(std::vector<roam::future<int>>{}), roam::usage_error);
}

TEST(TaskletWakeUp, JoinFromAThreadOfNoNodeWaits) {
  ASSERT_EQ(roam::run(with_workers(2),
                      [] {
                        auto t = roam::spawn([] { return 7; });
                        int got = 0;
                        std::thread other([&t, &got] { got = t.join(); });
                        other.join();
                        EXPECT_EQ(got, 7);
                      }),
            0);
}
