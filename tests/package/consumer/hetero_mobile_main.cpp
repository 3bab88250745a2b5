// roam::hetero_mobile through find_package(roam COMPONENTS hetero_mobile): a hetero object
// carried by a message to another node, summed there.
#include <roam/hetero_mobile.hpp>

#include <cstdio>
#include <numeric>
#include <vector>

double sum_of(roam::hetero_object<double> values) {
  const std::vector<double> v = values.to_vector();
  return std::accumulate(v.begin(), v.end(), 0.0);
}

int main(int argc, char** argv) {
  roam::hetero_runtime runtime;
  return roam::run(argc, argv, [] {
    if (roam::this_node() != 0) return;
    roam::hetero_object<double> values(100, 1.5);
    const double sum = roam::call(roam::num_nodes() - 1, &sum_of, values).get();
    std::printf("consumer_hetero_mobile sum %.1f on node %u\n", sum, roam::num_nodes() - 1);
  });
}
