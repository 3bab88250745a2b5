#include <roam/roam.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  return roam::run(argc, argv, [] {
    auto sum = roam::allreduce(static_cast<int>(roam::this_node()) + 1,
                               [](int a, int b) { return a + b; });
    if (roam::this_node() == 0)
      std::printf("consumer sum %d on %u nodes\n", sum, roam::num_nodes());
  });
}
