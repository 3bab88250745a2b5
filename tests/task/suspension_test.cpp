// Handlers that wait are suspended, not nested: the scenarios that live-lock PREMA's
// pthreads design (thesis Fig. 15) must finish, on one worker and on several.
#include <roam/roam.hpp>

#include <roam/core/detail/fiber.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

roam::config with_workers(unsigned workers, roam::node_id nodes = 1) {
  roam::config cfg = roam::config::from_environment();
  cfg.threads = workers;
  if (cfg.transport != roam::transport_kind::mpi) {
    cfg.transport = roam::transport_kind::inproc;
    cfg.nodes = nodes;
  }
  // Only the workers run handlers: a waiting application thread could otherwise hide a
  // live-lock by running the blocked work itself.
  cfg.lend_app_thread = false;
  return cfg;
}

// Fig. 15: T1 waits for T3's acknowledgement, T2 waits for T1's, T3 waits for nothing,
// started in that order. With nested waiting on one worker, T2's wait would sit on top of
// T1's on the same stack and never let T1 resume.
struct acknowledgements {
  roam::promise<void> from_t1, from_t3;
  roam::future<void> t1_done, t3_done;
  std::atomic<int> finished{0};
  acknowledgements() : t1_done(from_t1.get_future()), t3_done(from_t3.get_future()) {}
};
std::unique_ptr<acknowledgements> acks;

void t1() {
  acks->t3_done.wait();
  acks->from_t1.set_value();
  acks->finished.fetch_add(1);
}
void t2() {
  acks->t1_done.wait();
  acks->finished.fetch_add(1);
}
void t3() {
  acks->from_t3.set_value();
  acks->finished.fetch_add(1);
}

}  // namespace

class LiveLock : public ::testing::TestWithParam<unsigned> {};

TEST_P(LiveLock, Figure15ScenarioFinishes) {
  for (int round = 0; round < 20; ++round) {
    acks = std::make_unique<acknowledgements>();
    ASSERT_EQ(roam::run(with_workers(GetParam()),
                        [] {
                          if (roam::this_node() != 0) return;
                          roam::send(0, t1);
                          roam::send(0, t2);
                          roam::send(0, t3);
                          roam::wait_quiescence();
                          EXPECT_EQ(acks->finished.load(), 3);
                        }),
              0);
  }
}

namespace {
// A chain: each handler calls the next node and waits for its answer.
long chain(int left) {
  if (left == 0) return 0;
  return 1 + roam::call((roam::this_node() + 1) % roam::num_nodes(), chain, left - 1).get();
}
}  // namespace

TEST_P(LiveLock, DeepChainOfWaitingCallsFinishes) {
  long result = 0;
  ASSERT_EQ(roam::run(with_workers(GetParam(), 2),
                      [&result] {
                        long mine = roam::this_node() == 0 ? roam::call(0, chain, 2000).get() : 0;
                        mine = roam::broadcast_value(mine, 0);
                        EXPECT_EQ(mine, 2000);  // on every node
                        // One writer: in one process the virtual nodes share the test's locals.
                        if (roam::this_node() == 0) result = mine;
                      }),
            0);
  // 2000 handlers suspended at once, none nested on another's stack. Under mpi only rank 0
  // has node 0's copy.
  if (roam::config::from_environment().transport != roam::transport_kind::mpi) {
    EXPECT_EQ(result, 2000);
  }
}

namespace {
std::vector<roam::promise<void>> gates;
std::vector<roam::future<void>> gate_futures;
std::atomic<int> released{0};
void wait_at_gate(int i) {
  gate_futures[static_cast<std::size_t>(i)].wait();
  released.fetch_add(1);
}
}  // namespace

TEST_P(LiveLock, ThousandsOfHandlersSuspendAtOnce) {
  static constexpr int count = 5000;
  gates = std::vector<roam::promise<void>>(count);
  gate_futures.clear();
  for (auto& g : gates) gate_futures.push_back(g.get_future());
  released = 0;
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        if (roam::this_node() != 0) return;
                        for (int i = 0; i < count; ++i) roam::send(0, wait_at_gate, i);
                        // Open the gates in reverse order while all handlers are suspended.
                        for (int i = count - 1; i >= 0; --i)
                          gates[static_cast<std::size_t>(i)].set_value();
                        roam::wait_quiescence();
                        EXPECT_EQ(released.load(), count);
                      }),
            0);
}

// A handler fulfils a promise that the application thread owns and destroys as soon as its
// future is ready, while the handler's set_value may still be waking it. The setter must keep
// the shared state alive until it returns (a bounce benchmark hung on the freed state's lock;
// AddressSanitizer reports the use after free).
// The promise's address travels in the message (each node sends to itself, and a process may
// host several nodes, so one global pointer would be shared among them).
void fulfil(std::uintptr_t promise_address, int value) {
  reinterpret_cast<roam::promise<int>*>(promise_address)->set_value(value);
}

TEST_P(LiveLock, APromiseMayDieAsSoonAsItsFutureIsReady) {
  ASSERT_EQ(roam::run(with_workers(GetParam()),
                      [] {
                        for (int i = 0; i < 3000; ++i) {
                          roam::promise<int> done;
                          roam::send(roam::this_node(), fulfil,
                                     reinterpret_cast<std::uintptr_t>(&done), i);
                          ASSERT_EQ(done.get_future().get(), i);
                        }
                      }),
            0);
}

// Handlers that never wait run on the worker loop's own stack, without a fiber switch (issue
// 27, item 6): a fiber per handler cost two switches each, a quarter of an empty handler's
// time. One that waits costs two: the loop handed over to a fresh fiber, and the resumption.
std::atomic<std::uint64_t> switches_seen{0};
std::atomic<bool> switches_reported{false};
std::unique_ptr<roam::promise<void>> fast_path_gate;
roam::future<void> fast_path_gate_open;

void do_nothing() {}
void wait_for_fast_path_gate() { fast_path_gate_open.wait(); }
void open_fast_path_gate() { fast_path_gate->set_value(); }
void report_switches(std::uint64_t before) {
  switches_seen = roam::detail::fiber_switches_on_this_thread() - before;
  switches_reported = true;
}
void run_burst(int handlers, bool one_waits) {
  const std::uint64_t before = roam::detail::fiber_switches_on_this_thread();
  if (one_waits) roam::send(roam::this_node(), wait_for_fast_path_gate);
  for (int i = 0; i < handlers; ++i) roam::send(roam::this_node(), do_nothing);
  if (one_waits) roam::send(roam::this_node(), open_fast_path_gate);
  roam::send(roam::this_node(), report_switches, before);
}

// The fiber switches node 0's worker made in a burst of 1000 handlers (mixed mode hosts
// other nodes in the process: they only wait). Runs the checks on node 0's thread.
void expect_switches_in_burst(bool one_waits, std::uint64_t expected) {
  fast_path_gate = std::make_unique<roam::promise<void>>();
  fast_path_gate_open = fast_path_gate->get_future();
  switches_reported = false;
  // One worker: every handler of the burst runs on the thread that counts.
  EXPECT_EQ(roam::run(with_workers(1),
                      [one_waits, expected] {
                        if (roam::this_node() == 0)
                          roam::send(roam::this_node(), run_burst, 1000, one_waits);
                        roam::wait_quiescence();
                        if (roam::this_node() != 0) return;
                        EXPECT_TRUE(switches_reported.load());
                        EXPECT_EQ(switches_seen.load(), expected);
                      }),
            0);
  fast_path_gate_open = {};
  fast_path_gate.reset();
}

TEST(FastPath, HandlersThatNeverWaitRunWithoutAFiberSwitch) { expect_switches_in_burst(false, 0); }

TEST(FastPath, AHandlerThatWaitsHandsTheLoopOverAndIsResumed) { expect_switches_in_burst(true, 2); }

// A fiber that finishes its item leaves nothing mapped behind: under AddressSanitizer with
// fake stacks (task.inproc.fake_stacks), one that left keeping its fake stack and was then
// unmapped (a tasklet's larger stack) or started afresh leaked the fake stack's mapping,
// megabytes of address space each. Elsewhere it checks that their stacks are unmapped.
long address_space_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7));
  ADD_FAILURE() << "no VmSize in /proc/self/status";
  return 0;
}

int through_a_frame(int i) {
  volatile int on_the_stack[16] = {};  // address taken: a fake frame under the checker
  on_the_stack[i % 16] = i;
  return on_the_stack[i % 16];
}

TEST(FastPath, FibersThatFinishLeaveNoAddressSpaceBehind) {
  constexpr int tasklets = 200;
  long grown_kb = -1;
  EXPECT_EQ(roam::run(with_workers(1),
                      [&grown_kb] {
                        if (roam::this_node() != 0) return;
                        auto run_some = [](int count) {
                          for (int i = 0; i < count; ++i) {
                            auto t = roam::spawn(roam::stack_size{std::size_t{1} << 20},
                                                 [i] { return through_a_frame(i); });
                            EXPECT_EQ(t.join(), i);
                          }
                        };
                        run_some(20);  // pools and the allocator's caches warm up
                        const long before = address_space_kb();
                        run_some(tasklets);
                        grown_kb = address_space_kb() - before;
                      }),
            0);
  // A leak costs at least a stack's megabyte per tasklet: 200 MB here.
  EXPECT_LT(grown_kb, 32L * 1024) << "address space grew by " << grown_kb << " KB over " << tasklets
                                  << " tasklets on their own stacks";
}

// A worker kept busy by a stream of handlers, each sending the next to its own node, still
// takes in messages from other nodes:
// - its own queue never empties, yet arrivals (the injection queue) get every 8th pick;
// - when every fourth handler waits (its loop handed over to a fresh fiber each time), it
//   still polls the network between them: its poll counter once lived in the loop's frame
//   and started again with each handed-over loop, so such a stream never polled and a
//   message from another rank never arrived.
// The stop comes from the last node (node 0 stops itself when it is alone).
std::atomic<bool> stream_stop{false};
std::atomic<bool> stream_gave_up{false};
std::atomic<long> stream_waits{0};
std::shared_ptr<roam::promise<void>> stream_gate;  // node 0's one worker only
std::chrono::steady_clock::time_point stream_began;

std::atomic<bool> stream_under_way{false};
void note_stream_under_way() { stream_under_way = true; }

void stream_step(long i, bool waits) {
  if (auto gate = std::exchange(stream_gate, nullptr)) gate->set_value();  // the waiting step
  // The stop leaves once the stream runs: a stop that came first would end it at once.
  if (i == 0) roam::send(roam::num_nodes() - 1, note_stream_under_way);
  if (stream_stop.load()) return;
  if (std::chrono::steady_clock::now() - stream_began > std::chrono::seconds(10)) {
    stream_gave_up = true;  // the stop never came: end the stream so that the job ends
    return;
  }
  if (!waits || i % 4 != 0) {
    roam::send(roam::this_node(), stream_step, i + 1, waits);
    return;
  }
  auto gate = std::make_shared<roam::promise<void>>();
  roam::future<void> opened = gate->get_future();
  stream_gate = gate;
  roam::send(roam::this_node(), stream_step, i + 1, waits);  // it opens the gate
  opened.wait();
  stream_waits.fetch_add(1);
}
void stop_stream() { stream_stop = true; }

void expect_stream_stopped_from_the_last_node(bool waits) {
  stream_stop = false;
  stream_gave_up = false;
  stream_under_way = false;
  stream_waits = 0;
  std::atomic<bool> hosts_node_0{false};  // the checks below hold in node 0's process
  EXPECT_EQ(roam::run(with_workers(1, 2),
                      [waits, &hosts_node_0] {
                        const roam::node_id last = roam::num_nodes() - 1;
                        roam::barrier();
                        if (roam::this_node() == 0) {
                          hosts_node_0 = true;
                          stream_began = std::chrono::steady_clock::now();
                          roam::send(0, stream_step, 0L, waits);
                        }
                        if (roam::this_node() == last) {
                          while (!stream_under_way)
                            std::this_thread::sleep_for(std::chrono::milliseconds(1));
                          std::this_thread::sleep_for(std::chrono::milliseconds(20));
                          if (last == 0)
                            stream_stop = true;
                          else
                            roam::send(0, stop_stream);
                        }
                        roam::wait_quiescence();
                      }),
            0);
  stream_gate.reset();
  if (!hosts_node_0) return;
  EXPECT_TRUE(stream_stop.load());
  EXPECT_FALSE(stream_gave_up.load())
      << "node 0's worker, busy with a stream of handlers, never took the stop in";
  if (waits) {
    EXPECT_GT(stream_waits.load(), 0);
  }
}

TEST(FastPath, AWorkerBusyWithAStreamOfHandlersTakesArrivalsIn) {
  expect_stream_stopped_from_the_last_node(false);
}

TEST(FastPath, AWorkerBusyWithHandlersThatWaitStillPollsTheNetwork) {
  expect_stream_stopped_from_the_last_node(true);
}

INSTANTIATE_TEST_SUITE_P(Workers, LiveLock, ::testing::Values(1u, 2u, 4u));
