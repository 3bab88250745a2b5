// A consumer of the active-message layer alone (roam::am): no mobile objects, no load
// balancing linked.
#include <roam/am/collectives.hpp>
#include <roam/am/send.hpp>
#include <roam/core/runtime.hpp>

#include <cstdio>

namespace {
int square(int x) { return x * x; }
}  // namespace

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {
    const int next = static_cast<int>((roam::this_node() + 1) % roam::num_nodes());
    const int squared = roam::call(static_cast<roam::node_id>(next), square, next + 1).get();
    const int sum = roam::allreduce(squared, [](int a, int b) { return a + b; });
    if (roam::this_node() == 0)
      std::printf("consumer_am sum of squares %d on %u nodes\n", sum, roam::num_nodes());
  });
}
