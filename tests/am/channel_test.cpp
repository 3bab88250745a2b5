// Channels: aggregation, combining and the order each kind keeps. The same suite runs on
// the inproc transport with 1-4 virtual nodes and under mpiexec with 2-4 ranks, with the
// default 8 KiB buffers, with tiny ones (a flush every few messages) and with aggregation
// off (ROAM_AGGREGATE_BYTES=0).
#include <roam/roam.hpp>

#include <roam/core/detail/aggregation.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/transport/message.hpp>

#include "route_grid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

template <class Body>
void run_everywhere(Body body) {
  ASSERT_EQ(roam::run(roam::config::from_environment(), body), 0);
}

// What each node saw. Virtual nodes of one process share these; handlers write under the
// lock, each into its own node's entries.
constexpr std::size_t max_nodes = 8;
std::mutex seen_lock;
long next_expected[max_nodes][max_nodes];  // [source][dest]: the next sequence number
long out_of_order[max_nodes];              // [dest]
long received[max_nodes];                  // [dest]
long long received_sum[max_nodes];         // [dest]

void reset_observations() {
  std::lock_guard guard(seen_lock);
  for (auto& row : next_expected) std::fill(std::begin(row), std::end(row), 0);
  std::fill(std::begin(out_of_order), std::end(out_of_order), 0);
  std::fill(std::begin(received), std::end(received), 0);
  std::fill(std::begin(received_sum), std::end(received_sum), 0);
}

// One sequence per (source, destination), shared by every kind of message it sends.
void observe(roam::node_id source, long seq) {
  const roam::node_id me = roam::this_node();
  std::lock_guard guard(seen_lock);
  if (seq != next_expected[source][me]) ++out_of_order[me];
  next_expected[source][me] = seq + 1;
  ++received[me];
  received_sum[me] += seq;
}

void count(long value) {
  const roam::node_id me = roam::this_node();
  std::lock_guard guard(seen_lock);
  ++received[me];
  received_sum[me] += value;
}

// This node's observations summed over all nodes.
long long job_total(const long long* per_node) {
  long long mine = 0;
  {
    std::lock_guard guard(seen_lock);
    mine = per_node[roam::this_node()];
  }
  return roam::allreduce(mine, [](long long a, long long b) { return a + b; });
}
long long job_total(const long* per_node) {
  long long copy[max_nodes];
  {
    std::lock_guard guard(seen_lock);
    std::copy(per_node, per_node + max_nodes, copy);
  }
  return job_total(static_cast<const long long*>(copy));
}

void direct_observe(roam::node_id source, long seq) { observe(source, seq); }

TEST(Channel, OrderedMessagesKeepTheirOrderPerDestination) {
  reset_observations();
  constexpr long per_destination = 20000;  // several bundles at the default 8 KiB
  run_everywhere([] {
    auto ch = roam::channel([](roam::node_id source, long seq) { observe(source, seq); });
    EXPECT_EQ(ch.order(), roam::channel_order::ordered);
    const roam::node_id me = roam::this_node();
    for (long i = 0; i < per_destination; ++i)
      for (roam::node_id d = 0; d < roam::num_nodes(); ++d) ch(d, me, i);
    roam::barrier();  // every node has sent
    roam::wait_quiescence();
    const long long nodes = roam::num_nodes();
    EXPECT_EQ(job_total(received), per_destination * nodes * nodes);
    EXPECT_EQ(job_total(out_of_order), 0);
  });
}

TEST(Channel, OrderedChannelsOfOneThreadShareOneOrder) {
  reset_observations();
  constexpr long messages = 30000;
  run_everywhere([] {
    auto first = roam::channel([](roam::node_id s, long seq) { observe(s, seq); });
    auto second = roam::channel(&direct_observe);  // a function, not a lambda
    const roam::node_id me = roam::this_node();
    const roam::node_id dest = (me + 1) % roam::num_nodes();
    for (long i = 0; i < messages; ++i) {
      if (i % 7 < 3)
        second(dest, me, i);
      else
        first(dest, me, i);
    }
    roam::barrier();  // every node has sent
    roam::wait_quiescence();
    EXPECT_EQ(job_total(received), messages * static_cast<long long>(roam::num_nodes()));
    EXPECT_EQ(job_total(out_of_order), 0);
  });
}

// A direct send ships the thread's ordered buffer to its node first, so it never overtakes
// channel messages in transit. The sender here never idles or waits (it spins on an
// atomic), so only that flush can get the channel message there: the direct handler waits
// for it to have run.
std::atomic<long> channel_ran{0};
std::atomic<long> direct_done{0};
TEST(Channel, DirectSendShipsTheChannelBufferFirst) {
  channel_ran = 0;
  direct_done = 0;
  run_everywhere([] {
    roam::barrier();
    if (roam::this_node() == 0) {
      const roam::node_id dest = roam::num_nodes() - 1;
      auto mark = roam::channel([](long) { channel_ran.fetch_add(1); });
      for (long i = 0; i < 3; ++i) mark(dest, i);
      roam::send(dest, [] {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (channel_ran.load() < 3 && std::chrono::steady_clock::now() < deadline)
          roam::this_task::sleep_for(100us);
        EXPECT_EQ(channel_ran.load(), 3) << "the channel messages stayed in the sender's buffer";
        roam::send(0, [] { direct_done.fetch_add(1); });
      });
      const auto deadline = std::chrono::steady_clock::now() + 30s;
      while (direct_done.load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(100us);
      EXPECT_EQ(direct_done.load(), 1);
    }
    roam::barrier();
  });
}

TEST(Channel, UnorderedMessagesAllArriveExactlyOnce) {
  reset_observations();
  constexpr long per_destination = 15000;
  run_everywhere([] {
    auto ch = roam::channel([](long v) { count(v); }, roam::unordered);
    EXPECT_EQ(ch.order(), roam::channel_order::unordered);
    for (long i = 0; i < per_destination; ++i)
      for (roam::node_id d = 0; d < roam::num_nodes(); ++d) ch(d, i);
    roam::barrier();  // every node has sent
    roam::wait_quiescence();
    const long long nodes = roam::num_nodes();
    EXPECT_EQ(job_total(received), per_destination * nodes * nodes);
    EXPECT_EQ(job_total(received_sum), per_destination * (per_destination - 1) / 2 * nodes * nodes);
  });
}

// A look-ahead sees every record of its channel exactly once, before the handler runs it.
std::map<long, int> hinted[max_nodes];  // [dest]: value -> look-ahead calls
long hinted_late[max_nodes];            // [dest]: records the handler ran before their hint

TEST(Channel, LookAheadSeesEachRecordOnceBeforeItsHandler) {
  reset_observations();
  for (auto& h : hinted) h.clear();
  std::fill(std::begin(hinted_late), std::end(hinted_late), 0);
  constexpr long per_destination = 5000;
  run_everywhere([] {
    auto ch = roam::channel(
        [](long v) {
          {
            std::lock_guard guard(seen_lock);
            if (hinted[roam::this_node()][v] != 1) ++hinted_late[roam::this_node()];
          }
          count(v);
        },
        roam::look_ahead([](const long& v) {
          std::lock_guard guard(seen_lock);
          ++hinted[roam::this_node()][v];
        }));
    const long base = static_cast<long>(roam::this_node()) * per_destination;
    for (long i = 0; i < per_destination; ++i)
      for (roam::node_id d = 0; d < roam::num_nodes(); ++d) ch(d, base + i);
    roam::barrier();
    roam::wait_quiescence();
    const long long nodes = roam::num_nodes();
    EXPECT_EQ(job_total(received), per_destination * nodes * nodes);
    EXPECT_EQ(job_total(hinted_late), 0);
    long long calls = 0;
    {
      std::lock_guard guard(seen_lock);
      for (auto [value, times] : hinted[roam::this_node()]) calls += times;
      EXPECT_EQ(hinted[roam::this_node()].size(),
                static_cast<std::size_t>(per_destination * nodes));
    }
    EXPECT_EQ(calls, per_destination * nodes);
  });
}

// A handler that takes roam::source_node learns the sending node without the sender
// passing it: with fixed-size records (with and without look-ahead, which sees it too) and
// with variable-size ones. Each record also carries the sender's id, to compare.
long wrong_source[max_nodes];  // [dest]
void check_source(roam::source_node from, roam::node_id sender) {
  const roam::node_id me = roam::this_node();
  std::lock_guard guard(seen_lock);
  if (from != sender || from.id >= roam::num_nodes()) ++wrong_source[me];
}

TEST(Channel, HandlersMayAskWhichNodeSentTheMessage) {
  reset_observations();
  std::fill(std::begin(wrong_source), std::end(wrong_source), 0);
  run_everywhere([] {
    auto fixed = roam::channel([](roam::source_node from, roam::node_id sender, long v) {
      check_source(from, sender);
      count(v);
    });
    auto hinted_fixed = roam::channel(
        [](roam::source_node from, roam::node_id sender, long v) {
          check_source(from, sender);
          count(v);
        },
        roam::look_ahead([](roam::source_node from, roam::node_id sender, long) {
          check_source(from, sender);
        }));
    auto sized = roam::channel([](roam::source_node from, std::string text, roam::node_id sender) {
      check_source(from, sender);
      count(static_cast<long>(text.size()));
    });
    const roam::node_id me = roam::this_node();
    constexpr long per_destination = 3000;
    for (long i = 0; i < per_destination; ++i)
      for (roam::node_id d = 0; d < roam::num_nodes(); ++d) {
        fixed(d, me, 1L);
        hinted_fixed(d, me, 1L);
        sized(d, std::string(static_cast<std::size_t>(i % 3), 'x'), me);
      }
    roam::barrier();
    roam::wait_quiescence();
    const long long nodes = roam::num_nodes();
    EXPECT_EQ(job_total(wrong_source), 0);
    EXPECT_EQ(job_total(received), 3 * per_destination * nodes * nodes);
    EXPECT_EQ(job_total(received_sum), (2 * per_destination + per_destination) * nodes * nodes);
  });
}

// A handful of messages never fills a buffer: quiescence must still see them run, and so
// must messages that handlers send on (here a chain of hops from node to node).
void hop(long left) {
  count(left);
  if (left > 0) {
    static const auto next = roam::channel([](long l) { hop(l); });
    next((roam::this_node() + 1) % roam::num_nodes(), left - 1);
  }
}

TEST(Channel, QuiescenceLeavesNothingInABuffer) {
  reset_observations();
  run_everywhere([] {
    auto few = roam::channel([](long v) { count(v); });
    for (roam::node_id d = 0; d < roam::num_nodes(); ++d) few(d, 1);
    auto start = roam::channel([](long l) { hop(l); });
    start((roam::this_node() + 1) % roam::num_nodes(), 50);
    roam::barrier();  // every node has sent
    roam::wait_quiescence();
    const long long nodes = roam::num_nodes();
    EXPECT_EQ(job_total(received), nodes * nodes + nodes * 51);
  });
}

// Stops the test binary with a message when `seconds` pass before it is dismissed: a hang
// becomes a failure that says what hung, not a ctest timeout.
class hang_watchdog {
 public:
  hang_watchdog(const char* what, std::chrono::seconds limit)
      : thread_([this, what, limit] {
          std::unique_lock lock(lock_);
          if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "hang: %s did not finish within %lld s\n", what,
                         static_cast<long long>(limit.count()));
            std::fflush(stderr);
            std::abort();
          }
        }) {}
  ~hang_watchdog() {
    {
      std::lock_guard guard(lock_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }
  hang_watchdog(const hang_watchdog&) = delete;
  hang_watchdog& operator=(const hang_watchdog&) = delete;

 private:
  std::mutex lock_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

// Issue 25, defect 1: a record forwarded around the ring while node 0 waits for
// quiescence and the other application threads wait in barrier() (lending themselves to
// run handlers). A waiting application thread that ran the forwarding handler kept the
// record in its buffer, so quiescence never came: 9 runs in 10 hung on 2 nodes.
std::atomic<long> ring_hops[max_nodes];  // [node that ran the hop]
void ring_hop(long left) {
  ring_hops[roam::this_node()].fetch_add(1);
  if (left > 0) {
    static const auto next = roam::channel([](long l) { ring_hop(l); });
    next((roam::this_node() + 1) % roam::num_nodes(), left - 1);
  }
}

TEST(Channel, WaitingApplicationThreadsShipWhatTheirHandlersSent) {
  constexpr long laps = 10;
  hang_watchdog watchdog("50 ring runs with node 0 in wait_quiescence", std::chrono::seconds(120));
  for (int repetition = 0; repetition < 50; ++repetition) {
    for (auto& h : ring_hops) h = 0;
    run_everywhere([] {
      const roam::node_id me = roam::this_node(), n = roam::num_nodes();
      static const auto start = roam::channel([](long l) { ring_hop(l); });
      if (me == 0) {
        start((me + 1) % n, laps * n);
        roam::wait_quiescence();
      }
      roam::barrier();  // node 0 saw quiescence: every hop has run
      const long total =
          roam::allreduce(ring_hops[me].load(), [](long a, long b) { return a + b; });
      EXPECT_EQ(total, laps * n + 1);
    });
  }
}

TEST(Channel, ArgumentsOfAnyTypeTravelIntact) {
  reset_observations();
  run_everywhere([] {
    auto ch = roam::channel([](std::string text, std::vector<int> values, double scale) {
      long sum = std::accumulate(values.begin(), values.end(), 0L);
      EXPECT_EQ(text, "record " + std::to_string(values.size()));
      EXPECT_EQ(scale, 0.5);
      count(sum);
    });
    for (int i = 0; i < 300; ++i) {
      std::vector<int> values(static_cast<std::size_t>(i % 40), 3);
      ch((roam::this_node() + i) % roam::num_nodes(), "record " + std::to_string(values.size()),
         values, 0.5);
    }
    roam::barrier();  // every node has sent
    roam::wait_quiescence();
    long long expected = 0;
    for (int i = 0; i < 300; ++i) expected += 3LL * (i % 40);
    EXPECT_EQ(job_total(received), 300 * static_cast<long long>(roam::num_nodes()));
    EXPECT_EQ(job_total(received_sum), expected * roam::num_nodes());
  });
}

// flush() ships a buffer while its thread keeps working (never idles, never waits): the
// receiver's answer comes back although the sender only spins on an atomic.
std::atomic<int> answers{0};
TEST(Channel, FlushShipsWithoutWaiting) {
  answers = 0;
  run_everywhere([] {
    roam::barrier();
    if (roam::this_node() == 0) {
      auto ask =
          roam::channel([](roam::node_id back) { roam::send(back, [] { answers.fetch_add(1); }); });
      ask(roam::num_nodes() - 1, roam::node_id{0});
      roam::flush();
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (answers.load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(100us);
      EXPECT_EQ(answers.load(), 1) << "the flushed message never ran";
    }
    roam::barrier();
  });
}

// A handler that suspends in the middle of a group (it waits for a call) lets the rest of
// the group run after it, in order, possibly on another worker.
TEST(Channel, HandlersMayWaitInsideAGroup) {
  reset_observations();
  constexpr long messages = 2000;
  run_everywhere([] {
    auto ch = roam::channel([](roam::node_id source, long seq) {
      if (seq % 100 == 0) {
        long echoed = roam::call(
                          source, [](long v) { return v; }, seq)
                          .get();
        EXPECT_EQ(echoed, seq);
      }
      observe(source, seq);
    });
    const roam::node_id me = roam::this_node();
    for (long i = 0; i < messages; ++i) ch((me + 1) % roam::num_nodes(), me, i);
    roam::barrier();  // every node has sent
    roam::wait_quiescence();
    EXPECT_EQ(job_total(received), messages * static_cast<long long>(roam::num_nodes()));
    EXPECT_EQ(job_total(out_of_order), 0);
  });
}

// A worker that never runs out of work (a handler that keeps yielding) still receives
// messages from other nodes: busy workers poll the network now and then. Node 1's
// application thread only sleeps (it never waits through roam, so it polls nothing); the
// message from node 0 can reach node 1 only through its busy worker.
std::atomic<bool> stop_spinning{false};
std::atomic<bool> spinner_started{false};
TEST(Channel, BusyWorkersStillReceive) {
  stop_spinning = false;
  spinner_started = false;
  run_everywhere([] {
    roam::barrier();
    const roam::node_id busy = roam::num_nodes() - 1;
    if (roam::this_node() == busy) {
      roam::send(busy, [] {
        spinner_started = true;
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!stop_spinning.load() && std::chrono::steady_clock::now() < deadline)
          roam::this_task::yield();
        EXPECT_TRUE(stop_spinning.load()) << "the message never reached a busy worker";
      });
      while (!spinner_started.load()) std::this_thread::sleep_for(100us);
      roam::send(0, [] { roam::send(roam::num_nodes() - 1, [] { stop_spinning = true; }); });
      const auto deadline = std::chrono::steady_clock::now() + 30s;
      while (!stop_spinning.load() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(100us);
    }
    roam::barrier();
  });
}

// A buffer that fills before its thread idles doubles for the next bundle, up to
// --roam-aggregate-growth times its size; after an idle moment (here roam::flush()) it is
// sized to what the thread sent since the previous one. Checked on a worker, which has
// buffers (the application thread sends each message on its own). With aggregation off
// there are no buffers, and with growth 1 the size never changes.
void check_buffer_growth(roam::node_id to, std::uint32_t aggregate_bytes, std::uint32_t growth) {
  auto room = [to] {
    return roam::detail::next_bundle_room(to, roam::detail::lane_order::ordered);
  };
  auto ch = roam::channel([](long v) { count(v); });
  ch(to, 1L);
  roam::flush();
  if (aggregate_bytes == 0) {
    EXPECT_EQ(room(), 0u);  // no buffers
    return;
  }
  const std::size_t block = room() + sizeof(roam::detail::message);
  auto room_at = [block](std::size_t factor) {
    return block * factor - sizeof(roam::detail::message);
  };
  ASSERT_GE(block, aggregate_bytes);
  // A routed record names its destination too.
  const std::size_t record = sizeof(long) + roam::detail::record_target_bytes();
  // A stream of twice the largest buffer, without an idle moment: full bundles, doubling.
  for (std::size_t i = 0; i < std::size_t{2} * growth * block / record; ++i) ch(to, 1L);
  EXPECT_EQ(room(), room_at(growth));
  roam::flush();  // it sent more than the largest bundle holds: stays largest
  EXPECT_EQ(room(), room_at(growth));
  ch(to, 1L);  // one message between idle moments: back to the configured size
  roam::flush();
  EXPECT_EQ(room(), room_at(1));
  // More than one buffer holds, less than one of twice the size (group headers included):
  // one full bundle, then the rest at the flush; the next bundle holds all of it.
  for (std::size_t i = 0; i < (room_at(1) + room_at(2)) / 2 / record; ++i) ch(to, 1L);
  roam::flush();
  EXPECT_EQ(room(), room_at(std::min<std::uint32_t>(2, growth)));
}

TEST(Channel, BuffersGrowForAStreamAndShrinkAfterAnIdleMoment) {
  reset_observations();
  const roam::config cfg = roam::config::from_environment();
  run_everywhere([&cfg] {
    const roam::node_id to = (roam::this_node() + 1) % roam::num_nodes();
    roam::call(roam::this_node(), check_buffer_growth, to, cfg.aggregate_bytes,
               cfg.aggregate_growth)
        .get();
    roam::barrier();
    roam::wait_quiescence();
  });
}

// A thread that sends to every node keeps two lanes per node, or, when its job routes
// (--roam-route-min-nodes; by default jobs of 1024 nodes or more), two per node of its row
// and column of the grid: about 4 sqrt(P).
TEST(Channel, ARoutedThreadKeepsLanesForItsRowAndColumnOnly) {
  const roam::config cfg = roam::config::from_environment();
  const bool by_default = std::getenv("ROAM_ROUTE_MIN_NODES") == nullptr;
  run_everywhere([&cfg, by_default] {
    const std::size_t nodes = roam::num_nodes();
    const bool routed = cfg.route_min_nodes != 0 && nodes >= cfg.route_min_nodes;
    if (by_default) {
      EXPECT_EQ(routed, nodes >= 1024) << "the default of --roam-route-min-nodes";
    }
    const std::size_t lanes = roam::call(roam::this_node(), [] {
                                auto ch = roam::channel([](long) {});
                                for (roam::node_id d = 0; d < roam::num_nodes(); ++d) ch(d, 1L);
                                roam::flush();
                                return roam::detail::thread_lane_count();
                              }).get();
    if (cfg.aggregate_bytes == 0) {
      EXPECT_EQ(lanes, 0u);
    } else if (routed) {
      // The job's grid: ceil(sqrt(P)) columns, or in mixed mode columns that fit the ranks.
      const roam::detail::route_grid grid(
          static_cast<roam::node_id>(nodes),
          roam::detail::local_nodes_of(roam::detail::require_node("test")).count);
      EXPECT_EQ(lanes, 2 * grid.slots());
    } else {
      EXPECT_EQ(lanes, 2 * nodes);
    }
    roam::barrier();
    roam::wait_quiescence();
  });
}

TEST(Channel, BadDestinationIsAUsageError) {
  run_everywhere([] {
    auto ch = roam::channel([](long) {});
    EXPECT_THROW(ch(roam::num_nodes() + 3, 1L), roam::usage_error);
  });
}

TEST(Channel, ThreadsOfNoNodeCannotSend) {
  auto ch = roam::channel([](long) {});
  EXPECT_THROW(ch(0, 1L), roam::usage_error);
}

}  // namespace
