// Parallel mergesort of 64-bit keys (10^7 by default; --elements 100000000 for 10^8):
// split in halves sorted in parallel, merged serially, std::sort below a cutoff. The same
// algorithm with roam tasklets, oneTBB task_group and OpenMP tasks.
//   ./run bench sort [--json] [--elements N]
#include "bench_options.hpp"
#include "fork_join.hpp"

#include <tbb/parallel_invoke.h>

#include <random>

namespace {

constexpr std::size_t cutoff = 1 << 14;
using key = std::uint64_t;

template <class Fork>
void merge_sort(key* data, key* scratch, std::size_t n, Fork&& fork) {
  if (n <= cutoff) {
    std::sort(data, data + n);
    return;
  }
  const std::size_t half = n / 2;
  fork([=, &fork] { merge_sort(data, scratch, half, fork); },
       [=, &fork] { merge_sort(data + half, scratch + half, n - half, fork); });
  std::merge(data, data + half, data + half, data + n, scratch);
  std::copy(scratch, scratch + n, data);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t elements = 10000000;
  roam_bench::options_with_json command_line("sort");
  command_line.add("--elements", elements, "64-bit keys to sort").parse(argc, argv);
  std::vector<key> input(elements);
  std::mt19937_64 rng(7);
  for (auto& x : input) x = rng();
  std::vector<key> sorted = input;
  std::sort(sorted.begin(), sorted.end());
  std::vector<key> data, scratch(elements);

  auto roam_fork = [](auto a, auto b) {
    auto left = roam::spawn(a);
    b();
    left.join();
  };
  auto tbb_fork = [](auto a, auto b) { tbb::parallel_invoke(a, b); };
  auto omp_fork = [](auto a, auto b) {
#pragma omp task firstprivate(a)
    a();
    b();
#pragma omp taskwait
  };
  roam_bench::fork_join_kernel k{"sort",
                                 [&] {
                                   data = input;
                                   merge_sort(data.data(), scratch.data(), elements, roam_fork);
                                   return data == sorted;
                                 },
                                 [&] {
                                   data = input;
                                   merge_sort(data.data(), scratch.data(), elements, tbb_fork);
                                   return data == sorted;
                                 },
                                 [&] {
                                   data = input;
#pragma omp parallel
#pragma omp single
                                   merge_sort(data.data(), scratch.data(), elements, omp_fork);
                                   return data == sorted;
                                 }};
  return roam_bench::compare_fork_join(command_line.json, k);
}
