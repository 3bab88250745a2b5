// The heterogeneous framework through find_package(roam COMPONENTS hetero): a kernel written
// once, run as a hetero task on whichever device the runtime picks (the package test runs
// it with ROAM_HETERO_BACKENDS=host, so it needs no GPU).
#include <roam/hetero.hpp>

#include <cstdio>
#include <vector>

ROAM_KERNEL(consumer_axpy, (roam_global double* y, roam_global const double* x, double a, int n), {
  const int i = (int)roam_global_id(0);
  if (i < n) y[i] += a * x[i];
})

int main() {
  constexpr int n = 1000;
  roam::hetero_runtime runtime;
  roam::hetero_object<double> x(n, 1.0), y(n, 2.0);
  roam::hetero_task(consumer_axpy, roam::launch_dims::linear(n), roam::inout(y), roam::in(x), 3.0,
                    n)
      .submit();
  const std::vector<double> result = y.to_vector();
  runtime.wait_all();
  double sum = 0;
  for (double v : result) sum += v;
  std::printf("consumer_hetero sum %.1f\n", sum);
  return sum == 5.0 * n ? 0 : 1;
}
