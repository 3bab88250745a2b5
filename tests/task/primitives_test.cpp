// Suspend-aware primitives: yield, sleep, mutex, condition variable, when_all/when_any,
// remote promises and distributed events. Runs in one process (1-4 virtual nodes) and
// under mpiexec.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

roam::config test_config(unsigned workers = 2) {
  roam::config cfg = roam::config::from_environment();
  cfg.threads = workers;
  cfg.lend_app_thread = false;  // only workers run handlers: suspension must do the job
  return cfg;
}

template <class Body>
void run_everywhere(Body body, roam::config cfg = test_config()) {
  ASSERT_EQ(roam::run(cfg, body), 0);
}

// ---- yield ------------------------------------------------------------------------------

std::atomic<bool> others_ran{false};
std::atomic<int> yields_before_others{0};
void spinner() {
  // Yields until another handler has run: a yielding handler must not be picked again
  // before work that waits.
  while (!others_ran.load()) {
    yields_before_others.fetch_add(1);
    roam::this_task::yield();
  }
}
void other() { others_ran = true; }

}  // namespace

TEST(Yield, LetsQueuedWorkRunFirstEvenOnOneWorker) {
  others_ran = false;
  yields_before_others = 0;
  run_everywhere(
      [] {
        if (roam::this_node() != 0) return;
        // Both are queued by one handler, so both wait before the worker takes either.
        roam::send(0, [] {
          roam::send(0, spinner);
          roam::send(0, other);
        });
        roam::wait_quiescence();
        EXPECT_TRUE(others_ran.load());
        EXPECT_LE(yields_before_others.load(), 2);
      },
      test_config(1));
}

namespace {
std::atomic<int> asleep{0};
void sleep_until_all_asleep(int total) {
  asleep.fetch_add(1);
  // Finishes only once every handler sleeps at the same time: on one worker that is
  // possible only if sleeping suspends the handler and frees the worker.
  while (asleep.load() < total) roam::this_task::sleep_for(std::chrono::milliseconds(1));
}
}  // namespace

TEST(Sleep, SuspendsForAtLeastTheDurationWithoutHoldingTheWorker) {
  asleep = 0;
  run_everywhere(
      [] {
        if (roam::this_node() != 0) return;
        auto slept = roam::call(0, [] {
          const auto t0 = std::chrono::steady_clock::now();
          roam::this_task::sleep_for(std::chrono::milliseconds(30));
          return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
              .count();
        });
        EXPECT_GE(slept.get(), 30.0);
        for (int i = 0; i < 20; ++i) roam::send(0, sleep_until_all_asleep, 20);
        roam::wait_quiescence();
        EXPECT_EQ(asleep.load(), 20);
      },
      test_config(1));
}

// ---- mutex and condition variable -----------------------------------------------------

namespace {
roam::mutex counter_lock;
long guarded_counter = 0;
std::atomic<int> inside{0};
std::atomic<int> overlaps{0};
void locked_increment(int rounds) {
  for (int r = 0; r < rounds; ++r) {
    std::lock_guard guard(counter_lock);
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    const long seen = guarded_counter;
    roam::this_task::yield();  // hold the lock across a suspension
    guarded_counter = seen + 1;
    inside.fetch_sub(1);
  }
}
}  // namespace

TEST(Mutex, ExcludesHandlersThatSuspendWhileHoldingIt) {
  guarded_counter = 0;
  overlaps = 0;
  run_everywhere(
      [] {
        if (roam::this_node() != 0) return;
        for (int h = 0; h < 50; ++h) roam::send(0, locked_increment, 20);
        roam::wait_quiescence();
        EXPECT_EQ(guarded_counter, 50 * 20);
        EXPECT_EQ(overlaps.load(), 0);
      },
      test_config(4));
}

namespace {
roam::mutex queue_lock;
roam::condition_variable queue_ready;
std::vector<int> queue;
bool closed = false;
std::atomic<long> consumed_sum{0};
void consumer() {
  std::unique_lock lock(queue_lock);
  for (;;) {
    queue_ready.wait(lock, [] { return !queue.empty() || closed; });
    if (queue.empty()) return;
    int v = queue.back();
    queue.pop_back();
    lock.unlock();
    consumed_sum.fetch_add(v);
    lock.lock();
  }
}
void producer(int from, int to) {
  for (int v = from; v < to; ++v) {
    {
      std::lock_guard guard(queue_lock);
      queue.push_back(v);
    }
    queue_ready.notify_one();
  }
}
}  // namespace

TEST(ConditionVariable, ProducersAndConsumersHandOverEverything) {
  queue.clear();
  closed = false;
  consumed_sum = 0;
  run_everywhere(
      [] {
        if (roam::this_node() != 0) return;
        for (int c = 0; c < 8; ++c) roam::send(0, consumer);  // they suspend on the cv
        for (int p = 0; p < 4; ++p) roam::send(0, producer, p * 1000, (p + 1) * 1000);
        // Close once every value was consumed; quiescence cannot be reached before, since
        // the consumers stay suspended.
        while (consumed_sum.load() != 4000L * 3999 / 2)
          roam::this_task::sleep_for(std::chrono::milliseconds(1));
        {
          std::lock_guard guard(queue_lock);
          closed = true;
        }
        queue_ready.notify_all();
        roam::wait_quiescence();
        EXPECT_TRUE(queue.empty());
      },
      test_config(2));
}

// ---- futures across nodes ----------------------------------------------------------------

TEST(Futures, WhenAllAndWhenAnyOverCallsToEveryNode) {
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    std::vector<roam::future<long>> calls;
    for (roam::node_id d = 0; d < n; ++d)
      calls.push_back(roam::call(
          d, [](long x) { return x * 10; }, long(d)));
    auto all = roam::when_all(std::move(calls)).get();
    ASSERT_EQ(all.size(), n);
    for (roam::node_id d = 0; d < n; ++d) EXPECT_EQ(all[d], 10L * d);

    std::vector<roam::future<int>> racers;
    for (roam::node_id d = 0; d < n; ++d)
      racers.push_back(roam::call(
          d,
          [](int ms) {
            roam::this_task::sleep_for(std::chrono::milliseconds(ms));
            return ms;
          },
          d == n - 1 ? 0 : 200));
    auto first = roam::when_any(std::move(racers)).get();
    EXPECT_EQ(first.index, n - 1);
    EXPECT_EQ(first.value, 0);

    std::vector<roam::future<int>> failing;
    failing.push_back(roam::call(0, [] { return 1; }));
    failing.push_back(roam::call(n - 1, []() -> int { throw std::runtime_error("no"); }));
    EXPECT_THROW(roam::when_all(std::move(failing)).get(), roam::remote_error);
    roam::wait_quiescence();  // the slow racers finish before the next test
    roam::barrier();
  });
}

TEST(Futures, RemotePromiseIsFulfilledOnAnotherNode) {
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    auto [promise, value] = roam::make_remote_promise<std::string>();
    // The promise travels to the next node, which fulfils it from inside a handler.
    roam::send((roam::this_node() + 1) % n,
               [](roam::remote_promise<std::string> p, int from) {
                 p.set_value("node " + std::to_string(roam::this_node()) + " answers " +
                             std::to_string(from));
               },
               promise, static_cast<int>(roam::this_node()));
    EXPECT_EQ(value.get(), "node " + std::to_string((roam::this_node() + 1) % n) + " answers " +
                               std::to_string(roam::this_node()));
    auto [failing, doomed] = roam::make_remote_promise<int>();
    roam::send((roam::this_node() + 1) % n,
               [](roam::remote_promise<int> p) { p.set_error("demo", "refused"); }, failing);
    EXPECT_THROW(doomed.get(), roam::remote_error);
    roam::barrier();
  });
}

// ---- distributed events ------------------------------------------------------------------

namespace {
std::array<std::atomic<long>, 64> fired_sum{};
std::array<std::atomic<int>, 64> fired_count{};
}  // namespace

TEST(Events, FireOnceWithTheDataOfEverySignal) {
  for (auto& f : fired_sum) f = 0;
  for (auto& f : fired_count) f = 0;
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    constexpr int per_node = 25;
    // Every node creates an event expecting 25 signals from every node.
    auto mine = roam::make_event<long>(
        static_cast<std::size_t>(per_node) * n, [](std::vector<long> values) {
          fired_count[roam::this_node()].fetch_add(1);
          fired_sum[roam::this_node()].fetch_add(std::accumulate(values.begin(), values.end(), 0L));
        });
    auto events = roam::allgather(mine);
    for (const auto& e : events)
      for (int k = 0; k < per_node; ++k)
        roam::signal(e, static_cast<long>(roam::this_node()) * 100 + k);
    roam::barrier();
    if (roam::this_node() == 0) roam::wait_quiescence();
    roam::barrier();
    EXPECT_EQ(fired_count[roam::this_node()].load(), 1);
    long expected = 0;
    for (roam::node_id s = 0; s < n; ++s)
      for (int k = 0; k < per_node; ++k) expected += static_cast<long>(s) * 100 + k;
    EXPECT_EQ(fired_sum[roam::this_node()].load(), expected);
  });
}

// A future made ready holds its value itself (no shared state); every operation behaves as
// on a future whose promise was set. None of them needs a node.
TEST(ReadyFuture, HoldsItsValueAndBehavesLikeAnyReadyFuture) {
  auto f = roam::make_ready_future(std::string("seven"));
  EXPECT_TRUE(f.valid());
  EXPECT_TRUE(f.ready());
  f.wait();
  auto moved = std::move(f);
  EXPECT_FALSE(f.valid());  // NOLINT(bugprone-use-after-move): a moved-from future is empty
  EXPECT_FALSE(f.ready());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(f.get(), roam::usage_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.get(), "seven");
  EXPECT_FALSE(moved.valid());  // consumed
  EXPECT_THROW(moved.get(), roam::usage_error);

  // then() runs its continuation at once, on this thread, and forwards its exception.
  bool ran = false;
  auto twice = roam::make_ready_future(21).then([&](int v) {
    ran = true;
    return 2 * v;
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(twice.get(), 42);
  auto failed = roam::make_ready_future(1).then([](int) -> int { throw std::runtime_error("no"); });
  EXPECT_THROW(failed.get(), std::runtime_error);

  // Combinators take its value like any other future's.
  std::vector<roam::future<int>> all;
  all.push_back(roam::make_ready_future(1));
  all.push_back(roam::make_ready_future(2));
  EXPECT_EQ(roam::when_all(std::move(all)).get(), (std::vector<int>{1, 2}));
  std::vector<roam::future<int>> race;
  race.push_back(roam::make_ready_future(9));
  const auto first = roam::when_any(std::move(race)).get();
  EXPECT_EQ(first.index, 0u);
  EXPECT_EQ(first.value, 9);

  // Move-assignment replaces what the target held.
  roam::future<int> target = roam::make_ready_future(3);
  target = roam::make_ready_future(4);
  EXPECT_EQ(target.get(), 4);
}
