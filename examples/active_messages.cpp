// The main demo: active messages between nodes.
//
//   ./run demo                      # 4 virtual nodes in one process
//   mpiexec -n 4 build/default/examples/active_messages   # 4 MPI ranks
//
// Node 0 sends a "token" around a ring of nodes, asks every node for a value with
// roam::call, grows a random message tree whose size nobody knows in advance and waits
// for it with wait_quiescence, then every node joins collectives.
#include <roam/roam.hpp>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>

namespace {

// Per-node state: one counter on every node.
roam::node_local<std::atomic<long>> tree_messages;

// A free function handler: passes the token on until it has gone round `laps` times.
void ring_hop(int hops_left, std::string trail) {
  trail += " -> " + std::to_string(roam::this_node());
  if (hops_left == 0) {
    std::printf("ring finished on node %u: %s\n", roam::this_node(), trail.c_str());
    return;
  }
  roam::send((roam::this_node() + 1) % roam::num_nodes(), ring_hop, hops_left - 1,
             std::move(trail));
}

// A handler that spawns a random number of children on random nodes.
struct grow_tree {
  void operator()(int depth, unsigned seed) const {
    tree_messages.local().fetch_add(1);
    std::mt19937 rng(seed);
    if (depth == 0) return;
    int children = static_cast<int>(rng() % 4);
    for (int c = 0; c < children; ++c)
      roam::send(rng() % roam::num_nodes(), grow_tree{}, depth - 1, static_cast<unsigned>(rng()));
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Four virtual nodes unless the user chose otherwise (ROAM_NODES / --roam-nodes).
  setenv("ROAM_NODES", "4", 0);
  return roam::run(argc, argv, [] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    if (me == 0) {
      std::printf("roam demo: %u nodes\n", n);
      roam::send(1 % n, ring_hop, static_cast<int>(2 * n - 1), std::string("0"));

      std::vector<roam::future<std::string>> answers;
      for (roam::node_id d = 0; d < n; ++d)
        answers.push_back(roam::call(
            d,
            [](int x) {
              return "node " + std::to_string(roam::this_node()) + " squares " + std::to_string(x) +
                     " to " + std::to_string(x * x);
            },
            static_cast<int>(d) + 2));
      for (auto& a : answers) std::printf("%s\n", a.get().c_str());

      for (unsigned root = 0; root < 16; ++root) roam::send(root % n, grow_tree{}, 12, 42u + root);
      roam::wait_quiescence();
    }
    roam::barrier();
    long total =
        roam::allreduce(tree_messages.local().load(), [](long a, long b) { return a + b; });
    auto names = roam::allgather(std::string("n") + std::to_string(me));
    if (me == 0) {
      std::printf("random tree: %ld messages handled across all nodes (counted after quiescence)\n",
                  total);
      std::printf("allgather: ");
      for (auto& s : names) std::printf("%s ", s.c_str());
      std::printf("\n");
    }
  });
}
