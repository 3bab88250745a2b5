// The program shown in the README (kept identical; a test runs it).
#include <roam/roam.hpp>

#include <array>
#include <atomic>
#include <cstdio>

// Per-node state: virtual nodes of one process share globals (this sketch allows 64 nodes).
std::array<std::atomic<long>, 64> received{};

void deliver(long amount) { received[roam::this_node()] += amount; }  // a handler

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {  // runs once on every node (SPMD)
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    for (roam::node_id d = 0; d < n; ++d) roam::send(d, deliver, long(me) + 1);  // fire and forget
    roam::future<int> sq = roam::call((me + 1) % n, [](int x) { return x * x; }, int(me));
    std::printf("node %u: %u squared is %d\n", me, me, sq.get());
    roam::barrier();                       // every node has sent its messages
    if (me == 0) roam::wait_quiescence();  // ... and now every message has been handled
    roam::barrier();
    long total = roam::allreduce(received[me].load(), [](long a, long b) { return a + b; });
    if (me == 0) std::printf("%ld received on %u nodes\n", total, n);
  });
}
