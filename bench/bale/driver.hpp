// What the bale benchmarks share: MPI start-up for any number of ranks, the roam settings,
// combining per-rank results, and the report (a table, then the JSON line of issue 6:
// {"bench","ranks","roam_rate","mpi_rate","ratio"}; rates in operations per second per
// rank, the slowest rank's time counting).
#pragma once

#include "../../examples/bale/one_worker_per_node.hpp"
#include "../bench_options.hpp"
#include "../bench_report.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace bale_bench {

/// The options every bale benchmark takes besides its sizes.
struct common_options {
  bool json = false;
  long rounds = 2;
  roam_bench::options& declare(roam_bench::options& o) {
    return o.flag("--json", json, "end with the results as one JSON line")
        .add("--rounds", rounds, "runs of each version (the best counts)");
  }
};

/// Initializes MPI (roam needs MPI_THREAD_SERIALIZED; roam::run reuses it); returns the
/// rank and sets `ranks`.
inline int start_mpi(int& argc, char**& argv, int& ranks) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return rank;
}

/// roam on the ranks MPI already runs: one node per rank, with the settings the kernels
/// need (bale::one_worker_per_node).
inline roam::config roam_settings() {
  roam::config cfg = bale::one_worker_per_node(roam::config::from_environment());
  cfg.transport = roam::transport_kind::mpi;
  return cfg;
}

inline double slowest(double seconds) {
  double result = 0;
  MPI_Allreduce(&seconds, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

inline bool everywhere(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

/// Prints the comparison on rank 0 and returns the exit status (non-zero when a result was
/// wrong). `operations` are per rank.
inline int report(const char* bench, int rank, int ranks, double operations, double roam_seconds,
                  double mpi_seconds, bool roam_ok, bool mpi_ok, bool json) {
  const double roam_rate = operations / roam_seconds;
  const double mpi_rate = operations / mpi_seconds;
  if (rank == 0) {
    std::printf("%-8s %6s %14s %16s %16s %8s\n", "bench", "ranks", "ops_per_rank", "roam_ops_per_s",
                "mpi_ops_per_s", "ratio");
    std::printf("%-8s %6d %14.0f %16.0f %16.0f %8.3f\n", bench, ranks, operations, roam_rate,
                mpi_rate, roam_rate / mpi_rate);
    if (!roam_ok) std::printf("WRONG: roam's result differs from the serial computation\n");
    if (!mpi_ok) std::printf("WRONG: the MPI version's result differs from the serial one\n");
    if (json)
      std::printf("{\"bench\":\"%s\",\"ranks\":%d,\"roam_rate\":%s,\"mpi_rate\":%s,\"ratio\":%s}\n",
                  bench, ranks, roam_bench::number(roam_rate).c_str(),
                  roam_bench::number(mpi_rate).c_str(),
                  roam_bench::number(roam_rate / mpi_rate).c_str());
    std::fflush(stdout);
  }
  return roam_ok && mpi_ok ? 0 : 1;
}

/// The whole comparison, after start_mpi(): the best of `rounds` runs of the MPI version
/// (`mpi_run()` returns its seconds), checked by `mpi_ok()`; then, inside roam::run on the
/// same ranks, the best of `rounds` runs of the roam version (`roam_run()`), checked by
/// `roam_ok()` on every node. Reports, finalizes MPI, and returns the exit status.
template <class MpiRun, class MpiOk, class RoamRun, class RoamOk>
int compare(const char* bench, const common_options& options, int rank, int ranks,
            double operations, MpiRun mpi_run, MpiOk mpi_ok, RoamRun roam_run, RoamOk roam_ok) {
  const bool json = options.json;
  const long rounds = std::max(1L, options.rounds);
  double mpi_seconds = 1e300;
  for (long r = 0; r < rounds; ++r) mpi_seconds = std::min(mpi_seconds, mpi_run());
  const bool mpi_right = everywhere(mpi_ok());

  double roam_seconds = 1e300;
  bool roam_right = false;
  roam::run(roam_settings(), [&] {
    for (long r = 0; r < rounds; ++r) roam_seconds = std::min(roam_seconds, roam_run());
    roam_right = roam_ok();
  });
  const int status = report(bench, rank, ranks, operations, slowest(roam_seconds),
                            slowest(mpi_seconds), everywhere(roam_right), mpi_right, json);
  MPI_Finalize();
  return status;
}

}  // namespace bale_bench
