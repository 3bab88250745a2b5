// What the bale benchmarks share: MPI start-up for any number of ranks, the roam settings,
// combining per-rank results, and the report (a table, then the JSON line of issue 6:
// {"bench","ranks","roam_rate","mpi_rate","ratio"}; rates in operations per second per
// rank, the slowest rank's time counting).
#pragma once

#include "../bench_report.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace bale_bench {

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

/// roam on the ranks MPI already runs: one node per rank, one worker per node (it owns the
/// node's share of the data, as a bale PE does); the application thread sends and then
/// only waits.
inline roam::config roam_settings() {
  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  cfg.threads = 1;
  cfg.lend_app_thread = false;
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

}  // namespace bale_bench
