// Fibonacci by naive recursion, one task per call above a small cutoff: the classic
// fork-join overhead test. roam tasklets vs oneTBB parallel_invoke vs OpenMP tasks.
//   ./run bench fib [--json] [--n 30] [--cutoff 2]
#include "bench_options.hpp"
#include "fork_join.hpp"

#include <tbb/parallel_invoke.h>

namespace {

int cutoff = 2;
long serial(int n) { return n < 2 ? n : serial(n - 1) + serial(n - 2); }

long with_roam(int n) {
  if (n < cutoff) return serial(n);
  auto left = roam::spawn([n] { return with_roam(n - 1); });
  const long right = with_roam(n - 2);
  return left.join() + right;
}

long with_tbb(int n) {
  if (n < cutoff) return serial(n);
  long left = 0, right = 0;
  // parallel_invoke: oneTBB's lightest binary fork-join.
  tbb::parallel_invoke([&left, n] { left = with_tbb(n - 1); },
                       [&right, n] { right = with_tbb(n - 2); });
  return left + right;
}

long with_omp(int n) {
  if (n < cutoff) return serial(n);
  long left = 0;
#pragma omp task shared(left) firstprivate(n)
  left = with_omp(n - 1);
  const long right = with_omp(n - 2);
#pragma omp taskwait
  return left + right;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 30;
  roam_bench::options_with_json command_line("fib");
  command_line.add("--n", n, "computes fib(n)")
      .add("--cutoff", cutoff, "calls below this n run serially")
      .parse(argc, argv);
  const long expected = serial(n);
  roam_bench::fork_join_kernel k{"fib", [&] { return with_roam(n) == expected; },
                                 [&] { return with_tbb(n) == expected; },
                                 [&] {
                                   long r = 0;
#pragma omp parallel
#pragma omp single
                                   r = with_omp(n);
                                   return r == expected;
                                 }};
  return roam_bench::compare_fork_join(command_line.json, k);
}
