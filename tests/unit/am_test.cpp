// Active messages, futures, collectives and quiescence. The same suite runs on the inproc
// transport with 1-4 virtual nodes and under mpiexec with 2-4 ranks (ctest sets
// ROAM_NODES / ROAM_TRANSPORT); every test checks results on every node.
#include <roam/roam.hpp>

#include <gtest/gtest.h>
#include <pthread.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

roam::config test_config() { return roam::config::from_environment(); }

template <class Body>
void run_everywhere(Body body, roam::config cfg = test_config()) {
  ASSERT_EQ(roam::run(cfg, body), 0);
}

// ---- handlers ----------------------------------------------------------------------------

// State indexed by node, so in-process virtual nodes do not share it.
constexpr std::size_t max_nodes = 64;
std::array<std::atomic<long>, max_nodes> counter{};
void add_to_counter(long v) { counter[roam::this_node()].fetch_add(v); }
void reset(std::array<std::atomic<long>, max_nodes>& a) {
  for (auto& c : a) c = 0;
}

struct point {  // trivially copyable: travels by memcpy
  double x, y;
  int tag;
};

struct particle_set {  // cereal-serializable, non-contiguous data
  std::string name;
  std::vector<std::vector<double>> blocks;
  std::map<int, std::string> labels;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(name, blocks, labels);
  }
  bool operator==(const particle_set&) const = default;
};

particle_set sample_set(int seed) {
  particle_set s{"set" + std::to_string(seed), {}, {}};
  for (int i = 0; i < 5; ++i)
    s.blocks.push_back(std::vector<double>(static_cast<std::size_t>(i + seed), i * 0.5));
  s.labels = {{seed, "a"}, {seed + 1, "bb"}};
  return s;
}

std::string describe(point p, const std::string& s, std::vector<int> v, std::optional<int> o,
                     std::tuple<int, std::string> t, const particle_set& ps) {
  return std::to_string(p.x + p.y) + "/" + std::to_string(p.tag) + "/" + s + "/" +
         std::to_string(std::accumulate(v.begin(), v.end(), 0)) + "/" +
         (o ? std::to_string(*o) : "none") + "/" + std::to_string(std::get<0>(t)) + std::get<1>(t) +
         "/" + ps.name + "/" + std::to_string(ps.blocks.size()) + "/" + ps.labels.begin()->second;
}

struct scaled_adder {  // a function object with state: the state travels with it
  long factor = 1;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(factor);
  }
  long operator()(long v) const { return v * factor; }
};

int fail_with(int code) {
  if (code > 0) throw std::out_of_range("code " + std::to_string(code));
  return code;
}

// Records (source, sequence) pairs to check per-sender ordering.
std::mutex order_lock;
std::map<std::pair<roam::node_id, roam::node_id>, std::vector<int>>
    received_order;  // (dest, source)
void record_order(roam::node_id source, int sequence) {
  std::lock_guard guard(order_lock);
  received_order[{roam::this_node(), source}].push_back(sequence);
}

// After every node sent `count` numbered messages to every node: waits for them all, then
// checks that this node got each node's numbers 0 .. count-1 in order.
void expect_every_sequence_in_order(int count) {
  roam::barrier();
  if (roam::this_node() == 0) roam::wait_quiescence();
  roam::barrier();
  std::lock_guard guard(order_lock);
  for (roam::node_id source = 0; source < roam::num_nodes(); ++source) {
    const auto& seq = received_order[{roam::this_node(), source}];
    ASSERT_EQ(seq.size(), static_cast<std::size_t>(count)) << "from node " << source;
    for (int i = 0; i < count; ++i)
      ASSERT_EQ(seq[static_cast<std::size_t>(i)], i) << "from node " << source;
  }
}

// A message tree whose shape depends only on the seed: fan-out 0-3, depth-limited.
std::array<std::atomic<long>, max_nodes> tree_visits{};
void grow(int depth, std::uint32_t seed) {
  tree_visits[roam::this_node()].fetch_add(1);
  std::minstd_rand rng(seed);
  if (depth == 0) return;
  const int children = static_cast<int>(rng() % 4);
  for (int c = 0; c < children; ++c) {
    const auto dest = static_cast<roam::node_id>(rng() % roam::num_nodes());
    const auto child_seed = static_cast<std::uint32_t>(rng());
    roam::send(dest, grow, depth - 1, child_seed);
  }
}
long tree_size(int depth, std::uint32_t seed) {
  std::minstd_rand rng(seed);
  long n = 1;
  if (depth == 0) return n;
  const int children = static_cast<int>(rng() % 4);
  for (int c = 0; c < children; ++c) {
    (void)rng();  // the destination
    n += tree_size(depth - 1, static_cast<std::uint32_t>(rng()));
  }
  return n;
}

long sum(long a, long b) { return a + b; }

}  // namespace

TEST(ActiveMessages, SendRunsOnEveryNodeAndQuiescenceSeesIt) {
  reset(counter);
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    for (roam::node_id d = 0; d < n; ++d) roam::send(d, add_to_counter, 1000L + roam::this_node());
    roam::barrier();
    if (roam::this_node() == 0) roam::wait_quiescence();
    roam::barrier();
    // Every node received one message from every node.
    EXPECT_EQ(counter[roam::this_node()].load(), 1000L * n + static_cast<long>(n) * (n - 1) / 2);
  });
}

TEST(ActiveMessages, CallReturnsValuesOfEveryArgumentKind) {
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    const roam::node_id target = (roam::this_node() + 1) % n;
    auto f = roam::call(target, describe, point{1.5, 2.5, 7}, "text", std::vector<int>{1, 2, 3},
                        std::optional<int>(9), std::make_tuple(4, std::string("x")), sample_set(2));
    EXPECT_EQ(f.get(), "4.000000/7/text/6/9/4x/set2/5/a");

    // Lambdas, void results, stateful function objects.
    auto where = roam::call(target, [] { return roam::this_node(); });
    EXPECT_EQ(where.get(), target);
    auto done = roam::call(
        target, [](int) {}, 3);
    done.get();
    EXPECT_EQ(roam::call(target, scaled_adder{7}, 6L).get(), 42L);

    // Structured data comes back intact.
    auto echo = roam::call(
        target, [](particle_set s) { return s; }, sample_set(5));
    EXPECT_EQ(echo.get(), sample_set(5));
    roam::barrier();
  });
}

TEST(ActiveMessages, LargePayloadsUseSplitPhaseAndArriveIntact) {
  run_everywhere([] {
    const roam::node_id target = (roam::this_node() + 1) % roam::num_nodes();
    for (std::size_t size : {std::size_t{0}, std::size_t{100}, std::size_t{511}, std::size_t{512},
                             std::size_t{513}, std::size_t{4096}, std::size_t{1} << 20}) {
      std::vector<std::uint8_t> data(size);
      for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<std::uint8_t>(i * 31 + size);
      auto checksum = roam::call(
          target,
          [](const std::vector<std::uint8_t>& v) {
            std::uint64_t s = 0;
            for (std::size_t i = 0; i < v.size(); ++i) s += v[i] * (i + 1);
            return std::make_pair(v.size(), s);
          },
          data);
      std::uint64_t expected = 0;
      for (std::size_t i = 0; i < size; ++i) expected += data[i] * (i + 1);
      auto [got_size, got_sum] = checksum.get();
      EXPECT_EQ(got_size, size);
      EXPECT_EQ(got_sum, expected);
    }
    roam::barrier();
  });
}

TEST(ActiveMessages, ExceptionInCallReachesTheCallersFuture) {
  run_everywhere([] {
    const roam::node_id target = (roam::this_node() + 1) % roam::num_nodes();
    EXPECT_EQ(roam::call(target, fail_with, 0).get(), 0);
    auto f = roam::call(target, fail_with, 3);
    try {
      f.get();
      ADD_FAILURE() << "expected roam::remote_error";
    } catch (const roam::remote_error& e) {
      EXPECT_EQ(e.exception_type(), "std::out_of_range");
      EXPECT_EQ(e.original_message(), "code 3");
      // Named by its symbol, not only by its type (issue 25: several int(int) handlers).
      EXPECT_NE(std::string(e.what()).find("fail_with(int)' threw"), std::string::npos) << e.what();
    }
    // then() forwards the error without calling the continuation.
    bool called = false;
    auto g = roam::call(target, fail_with, 1).then([&called](int) {
      called = true;
      return 1;
    });
    EXPECT_THROW(g.get(), roam::remote_error);
    EXPECT_FALSE(called);
    roam::barrier();
  });
}

TEST(ActiveMessages, ThenChainsRunOnReplies) {
  run_everywhere([] {
    const roam::node_id target = (roam::this_node() + 1) % roam::num_nodes();
    auto f = roam::call(
                 target, [](long v) { return v * 2; }, 21L)
                 .then([](long v) { return std::to_string(v); })
                 .then([](std::string s) { return s + "!"; });
    EXPECT_EQ(f.get(), "42!");
    roam::barrier();
  });
}

TEST(ActiveMessages, HandlersSendAndWaitFromInsideHandlers) {
  run_everywhere([] {
    const roam::node_id n = roam::num_nodes();
    // A chain of calls, each handler waiting for the next node's answer.
    auto chain = roam::call(
        (roam::this_node() + 1) % n,
        [](int hops) {
          struct step {
            static long run(int left) {
              if (left == 0) return static_cast<long>(roam::this_node());
              return 1000 +
                     roam::call((roam::this_node() + 1) % roam::num_nodes(), run, left - 1).get();
            }
          };
          return step::run(hops);
        },
        6);
    const long expected_last = static_cast<long>((roam::this_node() + 1 + 6) % n);
    EXPECT_EQ(chain.get(), 6000 + expected_last);
    roam::barrier();
  });
}

TEST(ActiveMessages, BroadcastReachesEveryNodeOnce) {
  reset(counter);
  run_everywhere([] {
    if (roam::this_node() == 0) {
      roam::broadcast(add_to_counter, 5L);
      roam::wait_quiescence();
    }
    roam::barrier();
    EXPECT_EQ(counter[roam::this_node()].load(), 5L);
  });
}

// Copies of broadcasts from every node, by (receiving node, origin).
std::array<std::array<std::atomic<int>, max_nodes>, max_nodes> broadcast_copies{};
void count_broadcast_copy(roam::node_id origin) {
  broadcast_copies[roam::this_node()][origin].fetch_add(1);
}

TEST(ActiveMessages, BroadcastsFromEveryNodeReachEveryNodeOnce) {
  for (auto& row : broadcast_copies)
    for (auto& c : row) c = 0;
  run_everywhere([] {
    // The relay tree is rooted at each caller in turn: every shape the job allows.
    roam::broadcast(count_broadcast_copy, roam::this_node());
    roam::barrier();
    if (roam::this_node() == 0) roam::wait_quiescence();
    roam::barrier();
    for (roam::node_id origin = 0; origin < roam::num_nodes(); ++origin)
      EXPECT_EQ(broadcast_copies[roam::this_node()][origin].load(), 1) << "from node " << origin;
  });
}

TEST(ActiveMessages, BroadcastsFromOneThreadStartInOrder) {
  received_order.clear();
  roam::config cfg = test_config();
  cfg.threads = 1;  // start order is run order (see MessagesFromOneSenderStartInOrder)
  cfg.lend_app_thread = false;
  run_everywhere(
      [] {
        constexpr int count = 300;
        for (int i = 0; i < count; ++i) roam::broadcast(record_order, roam::this_node(), i);
        // Quiescence must count the relayed copies: none may run after it returns.
        expect_every_sequence_in_order(count);
      },
      cfg);
}

void record_large(roam::node_id source, int sequence, std::string data) {
  EXPECT_EQ(data.size(), std::size_t{100000});
  record_order(source, sequence);
}

TEST(ActiveMessages, BroadcastsLargerThanAFrameStartInOrder) {
  // Split-phase messages (header, then payload) on every relay hop, interleaved with small
  // broadcasts from the same thread.
  received_order.clear();
  roam::config cfg = test_config();
  cfg.threads = 1;
  cfg.lend_app_thread = false;
  run_everywhere(
      [] {
        constexpr int count = 20;
        const std::string large(100000, 'x');
        for (int i = 0; i < count; ++i) {
          if (i % 2)
            roam::broadcast(record_large, roam::this_node(), i, large);
          else
            roam::broadcast(record_order, roam::this_node(), i);
        }
        expect_every_sequence_in_order(count);
      },
      cfg);
}

TEST(ActiveMessages, MessagesFromOneSenderStartInOrder) {
  received_order.clear();
  roam::config cfg = test_config();
  cfg.threads = 1;              // one worker per node and an application thread that
  cfg.lend_app_thread = false;  // does not run work: start order is run order
  run_everywhere(
      [] {
        constexpr int count = 5000;
        for (int i = 0; i < count; ++i)
          for (roam::node_id d = 0; d < roam::num_nodes(); ++d)
            roam::send(d, record_order, roam::this_node(), i);
        expect_every_sequence_in_order(count);
      },
      cfg);
}

TEST(Collectives, AllKindsAgreeOnEveryNode) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    roam::barrier();
    EXPECT_EQ(roam::allreduce(static_cast<long>(me) + 1, [](long a, long b) { return a + b; }),
              static_cast<long>(n) * (n + 1) / 2);
    EXPECT_EQ(
        roam::allreduce(std::to_string(me),
                        [](std::string a, std::string b) { return a.size() >= b.size() ? a : b; })
            .size(),
        std::to_string(n - 1).size());
    for (roam::node_id root = 0; root < n; ++root) {
      auto r = roam::reduce(static_cast<long>(me), sum, root);
      EXPECT_EQ(r.has_value(), me == root);
      if (r) {
        EXPECT_EQ(*r, static_cast<long>(n) * (n - 1) / 2);
      }
      auto g = roam::gather(std::string(me + 1, 'x'), root);
      if (me == root) {
        ASSERT_EQ(g.size(), n);
        for (roam::node_id i = 0; i < n; ++i) EXPECT_EQ(g[i], std::string(i + 1, 'x'));
      } else {
        EXPECT_TRUE(g.empty());
      }
      auto b = roam::broadcast_value(
          me == root ? std::vector<int>{int(root), 7} : std::vector<int>{}, root);
      EXPECT_EQ(b, (std::vector<int>{static_cast<int>(root), 7}));
    }
    auto all = roam::allgather(std::make_pair(me, me * me));
    ASSERT_EQ(all.size(), n);
    for (roam::node_id i = 0; i < n; ++i) EXPECT_EQ(all[i], std::make_pair(i, i * i));
  });
}

TEST(Quiescence, RandomTreesOfUnknownShapeAreFullyHandled) {
  for (std::uint32_t seed : {1u, 7u, 12345u}) {
    reset(tree_visits);
    run_everywhere([seed] {
      const roam::node_id n = roam::num_nodes();
      if (roam::this_node() == 0) {
        // Several roots; quiescence must cover every descendant on every node.
        for (std::uint32_t r = 0; r < 8; ++r) roam::send(r % n, grow, 9, seed * 100 + r);
        roam::wait_quiescence();
      }
      roam::barrier();
      // Read right after quiescence: nothing may arrive late.
      long visits = roam::allreduce(tree_visits[roam::this_node()].load(), sum);
      long expected = 0;
      for (std::uint32_t r = 0; r < 8; ++r) expected += tree_size(9, seed * 100 + r);
      EXPECT_GT(expected, 50);
      EXPECT_EQ(visits, expected) << "seed " << seed;
    });
  }
}

TEST(Quiescence, EveryNodeCanDetectWhileAllSend) {
  run_everywhere([] {
    for (std::uint32_t r = 0; r < 4; ++r)
      roam::send((roam::this_node() + r) % roam::num_nodes(), grow, 7, roam::this_node() * 10 + r);
    roam::wait_quiescence();  // concurrently on every node
    roam::barrier();
  });
}

TEST(ActiveMessages, ApplicationThreadsMaySendWhenTheProcessHostsOneNode) {
  run_everywhere([] {
    const auto settings = roam::config::from_environment();
    const bool several_in_this_process =
        settings.transport == roam::transport_kind::mpi
            ? settings.nodes_per_rank > 1
            : std::max(settings.nodes, settings.nodes_per_rank) > 1;
    if (several_in_this_process) {
      // Several virtual nodes: a foreign thread has no node and is told so.
      std::thread t([] { EXPECT_THROW(roam::send(0, add_to_counter, 1L), roam::usage_error); });
      t.join();
      return;
    }
    std::atomic<long> got{0};
    std::thread t([&got] {
      got = roam::call((roam::num_nodes() > 1) ? 1u : 0u, [](long v) { return v + 1; }, 41L).get();
    });
    t.join();
    EXPECT_EQ(got.load(), 42);
    roam::barrier();
  });
}

TEST(Runtime, CanRunSeveralTimesAndOutsideCallsAreRejected) {
  EXPECT_THROW(roam::this_node(), roam::usage_error);
  EXPECT_THROW(roam::send(0, add_to_counter, 1L), roam::usage_error);
  for (int i = 0; i < 3; ++i) run_everywhere([] { roam::barrier(); });
}

std::string this_thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

// `top -H`, gdb and perf tell the runtime's threads apart by these names.
TEST(Runtime, WorkerThreadsAreNamedAfterTheirNode) {
  roam::config cfg = test_config();
  cfg.lend_app_thread = false;  // the handler must run on a worker
  run_everywhere(
      [] {
        const std::string name = roam::call(roam::this_node(), this_thread_name).get();
        EXPECT_EQ(name.rfind("roam-w" + std::to_string(roam::this_node()) + ".", 0), 0u) << name;
        roam::barrier();
      },
      cfg);
}

TEST(Quiescence, WaitingForItInsideAHandlerIsRejected) {
  run_everywhere([] {
    const roam::node_id target = (roam::this_node() + 1) % roam::num_nodes();
    auto rejected = roam::call(target, [] {
      try {
        roam::wait_quiescence();
        return false;
      } catch (const roam::usage_error&) {
        return true;
      }
    });
    EXPECT_TRUE(rejected.get());
    roam::barrier();
  });
}

TEST(Futures, PromisesContinuationsAndReadyFutures) {
  static_assert(!std::is_copy_constructible_v<roam::future<int>>);
  static_assert(std::is_move_constructible_v<roam::future<int>>);
  run_everywhere([] {
    auto ready = roam::make_ready_future(5);
    EXPECT_TRUE(ready.ready());
    EXPECT_EQ(ready.get(), 5);
    roam::promise<std::string> p;
    auto f = p.get_future();
    EXPECT_THROW(p.get_future(), roam::usage_error);
    auto g = std::move(f).then([](std::string s) { return s.size(); });
    EXPECT_FALSE(g.ready());
    p.set_value("four");
    EXPECT_TRUE(g.ready());  // the continuation ran on the fulfilling thread
    EXPECT_EQ(g.get(), 4u);
    EXPECT_FALSE(g.valid());
    EXPECT_THROW(g.get(), roam::usage_error);
    roam::promise<void> v;
    auto vf = v.get_future();
    v.set_exception(std::make_exception_ptr(std::runtime_error("x")));
    EXPECT_THROW(vf.get(), std::runtime_error);
    static_assert(!std::is_copy_constructible_v<roam::promise<int>>);
    roam::future<int> orphan;
    bool continued_with_error = false;
    roam::future<int> chained;
    {
      roam::promise<int> dropped;
      orphan = dropped.get_future();
    }  // destroyed unfulfilled: the future fails instead of waiting forever
    EXPECT_THROW(orphan.get(), roam::broken_promise);
    {
      roam::promise<int> dropped;
      chained = dropped.get_future().then([&continued_with_error](int v) {
        continued_with_error = true;
        return v;
      });
    }
    EXPECT_THROW(chained.get(), roam::broken_promise);
    EXPECT_FALSE(continued_with_error);
    roam::barrier();
  });
}

namespace {

std::uint64_t checksum(std::span<const std::uint32_t> v) {
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i + 1) * v[i];
  return s;
}
roam::buffer<std::uint32_t> numbered(std::size_t n, std::uint32_t base) {
  roam::buffer<std::uint32_t> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = base + static_cast<std::uint32_t>(i);
  return b;
}

// A buffer between other arguments, in a struct, and forwarded on to the next node.
std::uint64_t sum_with_tag(int tag, roam::buffer<std::uint32_t> data, std::string label) {
  return static_cast<std::uint64_t>(tag) + checksum(data.span()) + label.size();
}
struct holds_buffer {
  std::string name;
  roam::buffer<double> values;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(name, values);
  }
};
roam::buffer<std::uint32_t> forward_then_return(roam::buffer<std::uint32_t> data, int hops) {
  if (hops == 0) {
    for (auto& x : data) x += 1;  // the receiver owns and may modify what it got
    return data;
  }
  return roam::call((roam::this_node() + 1) % roam::num_nodes(), forward_then_return,
                    std::move(data), hops - 1)
      .get();
}

}  // namespace

TEST(Buffers, MovedBuffersTravelAndComeBackIntact) {
  run_everywhere([] {
    const roam::node_id target = (roam::this_node() + 1) % roam::num_nodes();
    for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{200}, std::size_t{70000}}) {
      auto b = numbered(n, 7);
      const auto expected = checksum(b.span());
      // Moved and preceded by a small argument: the buffer's block becomes the message.
      auto f = roam::call(target, sum_with_tag, 5, std::move(b), std::string("abc"));
      EXPECT_TRUE(b.empty()) << "a moved buffer hands its storage over";
      EXPECT_EQ(f.get(), 5 + expected + 3);
      // Passed as an lvalue: copied, the caller keeps it.
      auto kept = numbered(n, 9);
      EXPECT_EQ(roam::call(target, sum_with_tag, 1, kept, std::string()).get(),
                1 + checksum(kept.span()));
      EXPECT_EQ(kept.size(), n);
      // Forwarded through several nodes and returned modified.
      auto back = roam::call(target, forward_then_return, numbered(n, 100), 3).get();
      ASSERT_EQ(back.size(), n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], 101 + i);
    }
    // Inside another serialized value it travels as a copy.
    holds_buffer h{"h", roam::buffer<double>{1.5, 2.5}};
    auto echoed = roam::call(
        target,
        [](holds_buffer x) {
          return x.values[0] + x.values[1] + static_cast<double>(x.name.size());
        },
        h);
    EXPECT_EQ(echoed.get(), 5.0);
    // Large preceding arguments fall back to copying the buffer (still correct).
    std::string big(200, 'x');
    auto with_big = roam::call(
        target, [](std::string s, roam::buffer<std::uint32_t> v) { return s.size() + v.size(); },
        big, numbered(10, 0));
    EXPECT_EQ(with_big.get(), 210u);
    roam::barrier();
  });
}
