// A job whose trace (--roam-trace) has known contents, for check_trace.py:
// - node 0 sends `messages` messages to every other node, each handled by `count`;
// - each node sends one `ask` to the next node, whose handler yields: every `ask` suspends
//   exactly once and resumes (a wait for a reply would not always suspend: the reply may
//   be there before the wait, and the trace.inproc check failed once for it);
// - node 0 makes one mobile `box` and moves it to node 1 (a migration);
// - every node takes part in one allreduce.
// Prints "traced job done" on node 0 when everything ran.
#include <roam/roam.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Per node: in one process the nodes share this array.
std::atomic<long> counted[64];

void count(int) { counted[roam::this_node() % 64].fetch_add(1, std::memory_order_relaxed); }

// Sent by node `asker`; suspends once, whatever else runs.
void ask(roam::node_id asker) {
  roam::this_task::yield();
  if (asker >= roam::num_nodes()) std::abort();
}

struct box {
  int value = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(value);
  }
  int get() const { return value; }
};

}  // namespace

int main(int argc, char** argv) {
  // traced_job [MESSAGES] [roam flags]
  long messages = 100;
  if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9') messages = std::atol(argv[1]);
  return roam::run(argc, argv, [messages] {
    const roam::node_id me = roam::this_node();
    const roam::node_id nodes = roam::num_nodes();
    if (me == 0)
      for (roam::node_id to = 1; to < nodes; ++to)
        for (long i = 0; i < messages; ++i) roam::send(to, &count, static_cast<int>(i));
    roam::send((me + 1) % nodes, &ask, me);
    if (me == 0) {
      auto b = roam::make_mobile<box>(roam::node(0));
      roam::migrate(b, 1 % nodes).get();
      if (b.call<&box::get>().get() != 0) std::abort();
    }
    // Every application thread's sends are made before the barrier ends; quiescence then
    // covers what they set off.
    roam::barrier();
    roam::wait_quiescence();
    const long total =
        roam::allreduce(counted[me % 64].load(), [](long a, long b) { return a + b; });
    if (total != messages * static_cast<long>(nodes - 1)) {
      std::fprintf(stderr, "counted %ld messages, expected %ld\n", total,
                   messages * static_cast<long>(nodes - 1));
      std::abort();
    }
    if (me == 0) std::printf("traced job done\n");
  });
}
