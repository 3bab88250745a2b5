// roam::node_local (per-node state) and roam::barrier_all_handled (a barrier that also waits
// for every message sent before it). In one process with 1-4 virtual nodes and under mpiexec.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

template <class Body>
void run_everywhere(Body body) {
  ASSERT_EQ(roam::run(roam::config::from_environment(), body), 0);
}

// Globals: one instance per node, made on first use, fresh in every run.
roam::node_local<std::atomic<long>> received;
roam::node_local<std::string> greeting([] { return std::string("hello from a factory"); });

void deliver(std::atomic<long>& mine, long amount) { mine += amount; }

TEST(NodeLocal, AGlobalHasOneInstancePerNodeReachableByMessages) {
  for (int run = 0; run < 2; ++run)  // every run starts from fresh instances
    run_everywhere([] {
      const roam::node_id me = roam::this_node(), n = roam::num_nodes();
      EXPECT_EQ(received.local().load(), 0);
      roam::barrier();  // no node sends before every node saw its fresh instance
      for (roam::node_id d = 0; d < n; ++d) received.send<deliver>(d, long(me) + 1);
      for (roam::node_id d = 0; d < n; ++d)
        received.send(
            d, [](std::atomic<long>& mine, long x) { mine += 100 * x; }, 1L);
      roam::barrier_all_handled();
      EXPECT_EQ(received.local().load(), long(n) * (n + 1) / 2 + 100 * long(n));
      EXPECT_EQ(greeting.local(), "hello from a factory");
      roam::barrier();  // nobody reads another node's instance after this
    });
}

roam::node_local<long> first_counter;
roam::node_local<long> second_counter;

TEST(NodeLocal, LookupsOfSeveralGlobalsOnOneThreadFindEachTheirOwnInstance) {
  // Alternating between globals, and between runs, local() finds each global's own instance
  // of this node.
  for (int run = 0; run < 2; ++run)
    run_everywhere([] {
      const long me = roam::this_node();
      EXPECT_EQ(first_counter.local(), 0);  // fresh in every run
      for (int i = 0; i < 100; ++i) {
        first_counter.local() += 1;
        second_counter.local() += 1000 + me;
      }
      EXPECT_EQ(first_counter.local(), 100);
      EXPECT_EQ(second_counter.local(), 100 * (1000 + me));
      EXPECT_NE(&first_counter.local(), static_cast<void*>(&second_counter.local()));
      roam::barrier();
    });
}

TEST(NodeLocal, CallReturnsFromTheRemoteInstance) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    received.local() = 10 * long(me);
    roam::barrier();
    const roam::node_id next = (me + 1) % n;
    const long seen =
        received
            .call(
                next, [](std::atomic<long>& theirs, long add) { return theirs + add; }, 1L)
            .get();
    EXPECT_EQ(seen, 10 * long(next) + 1);
    roam::barrier();
  });
}

TEST(NodeLocal, ACollectiveOneIsBuiltOnEveryNodeAndMessagesWaitForIt) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    // The last node builds its instance late: a message reaching it before waits.
    if (me == n - 1 && n > 1) std::this_thread::sleep_for(50ms);
    roam::node_local<std::vector<int>> values(roam::collective, std::size_t(3), int(me));
    const roam::node_id last = n - 1;
    // The other nodes' calls reach the last node before it built its instance: they wait.
    const int first = values.call(last, [](std::vector<int>& v) { return v.front(); }).get();
    EXPECT_EQ(first, int(last));
    EXPECT_EQ(values.local(), std::vector<int>(3, int(me)));
    roam::barrier();  // nobody reads its own instance while the others push
    // Several workers of the last node may run these handlers at once: T needs its own lock.
    values.send(
        last,
        [](std::vector<int>& v, int x) {
          static std::mutex pushing;
          const std::lock_guard<std::mutex> hold(pushing);
          v.push_back(x);
        },
        int(me));
    roam::barrier_all_handled();  // no message to `values` is left anywhere
    if (me == last) {
      EXPECT_EQ(values.local().size(), 3u + n);
    }
  });
}

roam::node_local<std::vector<long>> tallies;

TEST(NodeLocal, AChannelRunsItsMessagesOnTheDestinationsInstance) {
  for (int run = 0; run < 2; ++run)  // every run starts from fresh instances
    run_everywhere([] {
      const roam::node_id me = roam::this_node(), n = roam::num_nodes();
      tallies.local().assign(n, 0);
      roam::barrier();
      // The source travels in the bundle, not the record: each node counts who sent what.
      static const auto count =
          tallies.channel([](std::vector<long>& mine, roam::source_node from,
                             long amount) { mine[from] += amount; },
                          roam::look_ahead([](std::vector<long>& mine, roam::source_node from,
                                              long) { __builtin_prefetch(&mine[from]); }));
      for (int i = 0; i < 1000; ++i)
        for (roam::node_id d = 0; d < n; ++d) count(d, long(me) + 1);
      roam::barrier_all_handled();
      for (roam::node_id from = 0; from < n; ++from)
        EXPECT_EQ(tallies.local()[from], 1000 * (long(from) + 1)) << "from node " << from;
      roam::barrier();
    });
}

TEST(NodeLocal, ACollectiveOnesChannelReachesEachNodesOwnInstance) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    roam::node_local<std::atomic<long>> sums(roam::collective, 0L);
    const auto add = sums.channel([](std::atomic<long>& mine, long x) { mine += x; });
    for (roam::node_id d = 0; d < n; ++d) add(d, 10 * long(d) + long(me));
    roam::barrier_all_handled();
    EXPECT_EQ(sums.local().load(), long(n) * 10 * long(me) + long(n) * (long(n) - 1) / 2);
    roam::barrier();  // nobody destroys its instance while messages may still come
  });
}

TEST(NodeLocal, AGlobalBuiltInsideARunIsRefused) {
  run_everywhere([] {
    EXPECT_THROW(roam::node_local<int> late, roam::usage_error);
    roam::barrier();
  });
}

roam::node_local<std::atomic<long>> hops;

// A chain: each hop sends the next one, so most messages are sent by handlers, after every
// node entered the barrier.
void hop(std::atomic<long>& mine, int left) {
  ++mine;
  if (left > 0) hops.send<hop>((roam::this_node() + 1) % roam::num_nodes(), left - 1);
}

TEST(BarrierAllHandled, WaitsForMessagesThatHandlersSendInTurn) {
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    hops.send<hop>(roam::this_node(), 50);
    roam::barrier_all_handled();
    const long total = roam::allreduce(hops.local().load(), [](long a, long b) { return a + b; });
    EXPECT_EQ(total, 51L * n);
  });
}

}  // namespace
