// The program shown in the README (kept identical; a test runs it).
#include <roam/roam.hpp>

#include <atomic>
#include <cstdio>

roam::node_local<std::atomic<long>> received;  // per-node state: one counter on every node

void deliver(std::atomic<long>& mine, long amount) { mine += amount; }  // runs where it is sent

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {  // runs once on every node (SPMD)
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    for (roam::node_id d = 0; d < n; ++d) received.send<deliver>(d, long(me) + 1);  // no reply
    roam::future<int> sq = roam::call((me + 1) % n, [](int x) { return x * x; }, int(me));
    std::printf("node %u: %u squared is %d\n", me, me, sq.get());
    roam::barrier_all_handled();  // every node is here, and every message sent has been handled
    long total = roam::allreduce(received.local().load(), [](long a, long b) { return a + b; });
    if (me == 0) std::printf("%ld received on %u nodes\n", total, n);
  });
}
