// Flow control: every node but node 0 sends as fast as it can to node 0, whose handler is
// slower than the senders. Without flow control the messages pile up (in node 0's queue,
// in MPI's unexpected queue, in the senders' backlogs) and each process's memory grows
// with the number sent; with it, senders wait and memory stays bounded by the settings:
// --roam-inbox-limit messages per node, --roam-send-window bytes per pair of ranks,
// --roam-send-backlog unsent bytes per process.
//
//   flow_control MODE [--bound-kb N] [--roam-...]   (in one process, or under mpiexec)
//
// MODE: send (roam::send), thread_send (roam::send from a thread of the application that
// belongs to no node: one node per process), channel (variable-size channel records), or
// exchange (every node sends to every other, and each handler answers with a message as
// large: traffic both ways through full windows must not deadlock). Exit status 0 when
// every message arrived and no process grew by more than the bound (--bound-kb, 48 MiB by
// default).
//
// MODE thread_promise (2 ranks): node 1 sends node 0 a stream of ordered channel bundles;
// the first one's handler waits for a promise that a thread of the application (of no
// node) fulfils, while the stream's later bundles are held behind it, beyond the inbox
// limit. That thread must not wait for node 0's queue (it would wait for itself).
//
// MODE relay_own (4 ranks, routed, ADR 43): every node sends to the node outside its row
// and column both channel records (their first step goes to a row-mate, which holds their
// credit while it relays) and, from a thread of the application that belongs to no node,
// direct messages (through the node's own relay lanes, held back only by the backlog, far
// above the window). A relay that counted its own traffic as relayed held its row-mate's
// credit while waiting for the row-mate's, which did the same: the job hung.
#include <roam/roam.hpp>

#include <sys/resource.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr long per_sender = 20000;
constexpr std::size_t payload_bytes = 4096;  // 80 MB per sender in all
constexpr int relay_own_rounds = 3;
constexpr long relay_own_messages = 1000;  // each way, each round
// Far below what the senders send (80 MB each), far above what the settings allow to pile
// up (inbox limit 256 x 4 KiB, a window of 64 KiB per rank, a backlog of 1 MiB).
long growth_bound_kb = 48L * 1024;
// Under the sanitizers freed memory is held back (ASan's quarantine, TSan's shadow), so
// the peak says nothing about roam's queues there: only delivery is checked.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool check_growth = false;
#else
constexpr bool check_growth = true;
#endif

constexpr std::size_t max_nodes = 64;
std::array<std::atomic<long>, max_nodes> arrived{};
std::array<std::atomic<long>, max_nodes> answered{};

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Slower than a sender: node 0 falls behind unless the senders are held back.
void slow_down() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void take(std::string data) {
  if (data.size() != payload_bytes) std::abort();
  slow_down();
  arrived[roam::this_node()].fetch_add(1);
}

constexpr long held_bundles = 64;  // thread_promise: each record in a bundle of its own

void wait_for_a_thread(long i) {
  if (i == 0) {
    auto made = roam::make_remote_promise<int>();
    std::thread helper([promise = made.first] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the stream arrives
      promise.set_value(1);
    });
    const int value = made.second.get();
    helper.join();
    if (value != 1) std::abort();
  }
  arrived[roam::this_node()].fetch_add(1);
}

void answer(std::string data, roam::node_id from) {
  if (data.size() != payload_bytes) std::abort();
  arrived[roam::this_node()].fetch_add(1);
  // A handler's send is never held back: it answers what flow control already admitted.
  roam::send(
      from,
      [](std::string back) {
        if (back.size() != payload_bytes) std::abort();
        answered[roam::this_node()].fetch_add(1);
      },
      std::move(data));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "send" && mode != "thread_send" && mode != "channel" && mode != "exchange" &&
      mode != "relay_own" && mode != "thread_promise") {
    std::fprintf(stderr,
                 "usage: flow_control send|thread_send|channel|exchange|relay_own|thread_promise "
                 "[--roam-...]\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--bound-kb") growth_bound_kb = std::stol(argv[i + 1]);
  std::atomic<bool> failed{false};
  const int rc = roam::run(argc, argv, [&] {
    const roam::node_id me = roam::this_node(), nodes = roam::num_nodes();
    if (nodes > max_nodes || nodes < 2) {
      std::fprintf(stderr, "flow_control needs 2 to %zu nodes\n", max_nodes);
      failed = true;
      return;
    }
    const std::string data(payload_bytes, static_cast<char>('a' + me % 26));
    roam::barrier();
    const long before_kb = peak_rss_kb();
    auto channel = roam::channel([](std::string d) { take(std::move(d)); });
    auto waiting_channel = roam::channel([](long i) { wait_for_a_thread(i); });
    // relay_own: the node outside this one's row and column of the 2 x 2 grid.
    const roam::node_id across = nodes - 1 - me;
    if (mode == "relay_own") {
      if (nodes != 4) {
        std::fprintf(stderr, "flow_control relay_own needs 4 nodes\n");
        failed = true;
        return;
      }
      // Rounds: the hang came in about half of the single rounds tried.
      for (int round = 0; round < relay_own_rounds; ++round) {
        // A thread of the application, not of the node: it has no lanes of its own.
        std::thread direct([&] {
          for (long i = 0; i < relay_own_messages; ++i) roam::send(across, take, data);
        });
        for (long i = 0; i < relay_own_messages; ++i) channel(across, data);
        direct.join();
        roam::flush();
        roam::barrier();
      }
    } else if (mode == "exchange") {
      for (long i = 0; i < per_sender / 4; ++i)
        for (roam::node_id d = 0; d < nodes; ++d)
          if (d != me) roam::send(d, answer, data, me);
    } else if (mode == "thread_promise") {
      if (me == 1)
        for (long i = 0; i < held_bundles; ++i) {
          waiting_channel(0, i);
          roam::flush();  // a bundle each
        }
    } else if (mode == "thread_send") {
      if (me != 0) {
        std::thread sender([&] {
          for (long i = 0; i < per_sender; ++i) roam::send(0, take, data);
        });
        sender.join();
      }
    } else if (me != 0) {
      for (long i = 0; i < per_sender; ++i) {
        if (mode == "send")
          roam::send(0, take, data);
        else
          channel(0, data);
      }
    }
    roam::flush();
    roam::barrier();
    if (me == 0) roam::wait_quiescence();
    roam::barrier();
    const long grown_kb = peak_rss_kb() - before_kb;
    const long expected = mode == "exchange"         ? per_sender / 4 * (nodes - 1)
                          : mode == "relay_own"      ? relay_own_messages * 2 * relay_own_rounds
                          : mode == "thread_promise" ? (me == 0 ? held_bundles : 0)
                          : me == 0                  ? per_sender * (nodes - 1)
                                                     : 0;
    const long got = arrived[me].load();
    const long answers = answered[me].load();
    std::printf(
        "node %u: %ld messages arrived (%ld expected), %ld answers; peak RSS grew by "
        "%ld KB (bound %ld KB)\n",
        me, got, expected, answers, grown_kb, growth_bound_kb);
    // In the exchange the answers are a handler's sends, which nothing holds back: only
    // completion (no deadlock) is checked there.
    if (got != expected || (mode == "exchange" && answers != expected) ||
        (check_growth && mode != "exchange" && mode != "relay_own" && mode != "thread_promise" &&
         grown_kb > growth_bound_kb))
      failed = true;
  });
  if (rc != 0) return rc;
  if (failed) {
    std::fprintf(stderr, "FAIL: a message was lost or a process grew past the bound\n");
    return 1;
  }
  return 0;
}
