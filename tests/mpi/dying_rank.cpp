// A rank killed with SIGKILL must end the whole job with a non-zero status and a message
// naming that rank, within seconds, never hang it. Rank 2 kills itself at the moment the
// mode names, while the others go on:
//
//   traffic     in the middle of all-to-all messages
//   barrier     while the others wait in roam::barrier
//   collective  while the others wait in roam::allreduce
//   migration   while an object migrates to it (in the object's unpacking)
//
//   mpiexec -n 4 dying_rank MODE   (the test runs it 10 times per mode; see CMakeLists.txt)
#include <roam/roam.hpp>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
constexpr roam::node_id dying = 2;

[[noreturn]] void die() {
  std::fflush(nullptr);
  ::kill(::getpid(), SIGKILL);
  std::abort();  // not reached
}

std::atomic<long> received{0};
void count_message(long) { ++received; }

// Every node sends to every node for about two seconds; the dying rank stops after 300 ms.
void traffic() {
  const auto start = std::chrono::steady_clock::now();
  const roam::node_id nodes = roam::num_nodes();
  for (long i = 0; std::chrono::steady_clock::now() - start < 2s; ++i) {
    if (roam::this_node() == dying && std::chrono::steady_clock::now() - start > 300ms) die();
    roam::send(static_cast<roam::node_id>(i % nodes), count_message, i);
  }
  roam::barrier();
}

// In the loops of collectives below: the dying rank dies at round 50, once the others wait
// in the next collective.
void die_at_round_50(int round) {
  if (roam::this_node() != dying || round != 50) return;
  std::this_thread::sleep_for(100ms);
  die();
}

void barriers() {
  for (int round = 0; round < 100000; ++round) {
    die_at_round_50(round);
    roam::barrier();
  }
}

void collectives() {
  long sum = 0;
  for (int round = 0; round < 100000; ++round) {
    die_at_round_50(round);
    sum += roam::allreduce(1L, std::plus<>{});
  }
  std::printf("sum %ld\n", sum);
}

// An object that kills the dying rank when it arrives there on its third visit.
struct traveller {
  int visits = 0;
  template <class Ar>
  void save(Ar& ar) const {
    ar(visits);
  }
  template <class Ar>
  void load(Ar& ar) {
    ar(visits);
    if (roam::this_node() == dying && ++visits >= 3) die();
  }
  void touch() {}
};

void migration() {
  if (roam::this_node() == 0) {
    auto t = roam::make_mobile<traveller>();
    for (int hop = 0; hop < 1000; ++hop) {
      roam::migrate(t, static_cast<roam::node_id>((hop + 1) % roam::num_nodes())).get();
      t.send<&traveller::touch>();
    }
  }
  roam::barrier();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  void (*body)() = mode == "traffic"      ? traffic
                   : mode == "barrier"    ? barriers
                   : mode == "collective" ? collectives
                   : mode == "migration"  ? migration
                                          : nullptr;
  if (!body) {
    std::fprintf(stderr, "usage: dying_rank traffic|barrier|collective|migration\n");
    return 2;
  }
  return roam::run(argc, argv, body);
}
