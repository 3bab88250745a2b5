// Shared harness of the fork-join benchmarks (fib, sort, nqueens): the same kernel written
// with roam tasklets, oneTBB and OpenMP tasks, timed side by side in one run on 1 and 2
// workers (best of `repeats` runs each).
#pragma once

#include "bench_report.hpp"
#include "one_node.hpp"

#include <roam/roam.hpp>

#include <omp.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace roam_bench {

template <class F>
double best_seconds(int repeats, F&& run) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct fork_join_kernel {
  std::string name;
  std::function<bool()> roam_run;  // each returns whether the result checks out
  std::function<bool()> tbb_run;
  std::function<bool()> omp_run;
};

inline const fork_join_kernel* current_kernel = nullptr;

/// Times the three versions on 1 and 2 workers, prints the table and, with `json`, the line
/// {"bench":NAME,"workers":[1,2],"roam_s":[…],"tbb_s":[…],"omp_s":[…],"ratio_vs_tbb":[…]}.
inline int compare_fork_join(bool json, const fork_join_kernel& k, int repeats = 3) {
  const std::vector<unsigned>& workers = compared_worker_counts;
  std::vector<double> roam_s, tbb_s, omp_s, ratio;
  bool all_correct = true;
  for (unsigned w : workers) {
    double roam_time = 0;
    // Without the application thread exactly w threads compute, as for TBB and OpenMP.
    roam::run(one_node_config(w, false), [&] {
      roam_time = best_seconds(repeats, [&] {
        // The root runs as a handler on a worker, like a roam application's work would.
        current_kernel = &k;
        all_correct &= roam::call(0, [] { return current_kernel->roam_run(); }).get();
      });
    });
    roam_s.push_back(roam_time);

    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, w);
    tbb::task_arena arena(static_cast<int>(w));
    tbb_s.push_back(
        best_seconds(repeats, [&] { arena.execute([&] { all_correct &= k.tbb_run(); }); }));

    omp_set_num_threads(static_cast<int>(w));
    omp_s.push_back(best_seconds(repeats, [&] { all_correct &= k.omp_run(); }));
    ratio.push_back(roam_s.back() / tbb_s.back());
  }
  std::printf("%-10s %8s %12s %12s %12s %14s\n", "kernel", "workers", "roam_s", "tbb_s", "omp_s",
              "roam/tbb");
  for (std::size_t i = 0; i < workers.size(); ++i)
    std::printf("%-10s %8u %12.4f %12.4f %12.4f %14.3f\n", k.name.c_str(), workers[i], roam_s[i],
                tbb_s[i], omp_s[i], ratio[i]);
  if (!all_correct) {
    std::fprintf(stderr, "%s: a result did not match the serial computation\n", k.name.c_str());
    return 1;
  }
  if (json)
    std::printf(
        "{\"bench\":\"%s\",\"workers\":%s,\"roam_s\":%s,\"tbb_s\":%s,\"omp_s\":%s,\"ratio_vs_tbb\":"
        "%s}\n",
        k.name.c_str(), array(workers).c_str(), array(roam_s).c_str(), array(tbb_s).c_str(),
        array(omp_s).c_str(), array(ratio).c_str());
  return 0;
}

}  // namespace roam_bench
