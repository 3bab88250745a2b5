// hetero_eviction: what the framework's LRU eviction costs per task as the number of copies
// resident on a device grows. For each object count N, `passes` sweeps over N objects of
// `--bytes` each, every task reading one object into a small accumulator, run twice side by
// side: once with the device limited to a quarter of the objects (each task's object was
// evicted since its last use: a copy to the device and an eviction per task, the round-robin
// sweep being LRU's worst case), once without a limit (after the first sweep nothing moves).
// ratio = unlimited time / limited time; what a task costs beyond its transfer should not grow
// with N.
//
//   hetero_eviction [--backend host|opencl|cuda] [--objects 256,1024,...] [--bytes B]
//                   [--passes P] [--json]
//
// The host backend runs as a device with memory of its own here (its copies are memcpy calls
// on its threads), so eviction happens on every backend.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_report.hpp"
#include "roam/hetero.hpp"

ROAM_KERNEL(accumulate, (roam_global unsigned* sum, roam_global const unsigned* x, int n), {
  const int i = (int)roam_global_id(0);
  if (i < n) sum[i] += x[i];
})

namespace {

using clock_type = std::chrono::steady_clock;

struct sweep_result {
  double seconds = 0;
  std::uint64_t evictions = 0;
};

/// `passes` sweeps of tasks over `count` objects of `elements` each under `options`; checks the
/// accumulated sums.
sweep_result sweep(const roam::hetero_options& options, int count, std::size_t elements,
                   int passes) {
  roam::hetero_runtime runtime(options);
  std::vector<roam::hetero_object<unsigned>> objects;
  objects.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    std::vector<unsigned> values(elements, static_cast<unsigned>(i));
    objects.emplace_back(std::span<const unsigned>(values));
  }
  roam::hetero_object<unsigned> sum(elements);  // zeros
  const auto n = static_cast<int>(elements);
  const auto dims = roam::launch_dims::linear(elements, 64);
  {
    // Outside the timing: the kernel's first launch (an OpenCL build of its source).
    roam::hetero_object<unsigned> warm(elements);
    roam::hetero_task(accumulate, dims, roam::inout(warm), roam::in(warm), n).submit().wait();
  }
  runtime.wait_all();
  const auto before = runtime.statistics().evictions;
  const auto start = clock_type::now();
  for (int pass = 0; pass < passes; ++pass) {
    for (auto& object : objects)
      roam::hetero_task(accumulate, dims, roam::inout(sum), roam::in(object), n).submit();
  }
  runtime.wait_all();
  sweep_result result;
  result.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  result.evictions = runtime.statistics().evictions - before;
  // Every element of the sum is passes * (0 + 1 + ... + count - 1).
  const auto expected = static_cast<unsigned>(static_cast<unsigned long long>(passes) *
                                              static_cast<unsigned long long>(count) *
                                              static_cast<unsigned long long>(count - 1) / 2);
  auto view = sum.request(roam::data_access::read).get();
  const bool right =
      std::all_of(view.begin(), view.end(), [&](unsigned v) { return v == expected; });
  sum.release();
  if (!right) {
    std::fprintf(stderr, "hetero_eviction: WRONG sum for %d objects\n", count);
    std::exit(1);
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "host";
  std::vector<int> counts = {256, 1024, 4096, 16384};
  std::size_t bytes = 4096;
  int passes = 3;
  bool json = false;
  roam_bench::options("hetero_eviction")
      .add("--backend", backend, "host, opencl or cuda")
      .add("--objects", counts, "object counts measured, 8 or more each")
      .add("--bytes", bytes, "size of each object")
      .add("--passes", passes, "sweeps over the objects per measurement")
      .flag("--json", json, "end with the results as one JSON line")
      .parse(argc, argv);
  const std::size_t elements = bytes / sizeof(unsigned);
  if (elements < 1 || passes < 1 ||
      std::any_of(counts.begin(), counts.end(), [](int c) { return c < 8; })) {
    std::fprintf(stderr, "hetero_eviction: --bytes >= 4, --passes >= 1, --objects >= 8 each\n");
    return 2;
  }
  auto options = roam::hetero_options::from_environment();  // ROAM_HETERO_* apply too
  options.backends = backend;
  options.host_separate_memory = true;
  options.memory_limit = 0;
  std::printf("hetero_eviction: %s, %zu-byte objects, %d sweeps, limited = a quarter resident\n",
              backend.c_str(), bytes, passes);
  std::printf("%8s %14s %14s %10s %12s %8s\n", "objects", "limited us/t", "unlimited us/t",
              "evictions", "limited s", "ratio");
  std::vector<double> limited_s, unlimited_s, ratio;
  for (int count : counts) {
    // A quarter of the objects, plus the accumulator, in whole blocks of the pool's size class.
    auto limited = options;
    const std::size_t block = std::bit_ceil(std::max<std::size_t>(bytes, 256));
    limited.memory_limit = (static_cast<std::size_t>(count) / 4 + 1) * block;
    // Alternate the two sides, best of three each, so drifting machine load hits both alike.
    double best_limited = 1e300, best_unlimited = 1e300;
    std::uint64_t evictions = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {
      const auto l = sweep(limited, count, elements, passes);
      const auto u = sweep(options, count, elements, passes);
      best_limited = std::min(best_limited, l.seconds);
      best_unlimited = std::min(best_unlimited, u.seconds);
      evictions = l.evictions;
      if (evictions == 0) {
        std::fprintf(stderr, "hetero_eviction: WRONG: no eviction under the limit\n");
        return 1;
      }
    }
    const double tasks = static_cast<double>(count) * passes;
    limited_s.push_back(best_limited);
    unlimited_s.push_back(best_unlimited);
    ratio.push_back(best_unlimited / best_limited);
    std::printf("%8d %14.2f %14.2f %10llu %12.4f %8.3f\n", count, 1e6 * best_limited / tasks,
                1e6 * best_unlimited / tasks, static_cast<unsigned long long>(evictions),
                best_limited, best_unlimited / best_limited);
    std::fflush(stdout);
  }
  if (json) {
    std::printf(
        "{\"bench\":\"hetero_eviction\",\"backend\":\"%s\",\"objects\":%s,\"limited_s\":%s,"
        "\"unlimited_s\":%s,\"ratio\":%s}\n",
        backend.c_str(), roam_bench::array(counts).c_str(), roam_bench::array(limited_s).c_str(),
        roam_bench::array(unlimited_s).c_str(), roam_bench::array(ratio).c_str());
  }
  return 0;
}
