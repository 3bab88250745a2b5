// Sparse triangular solve: roam's fan-out of partial sums by active messages against the
// bulk-synchronous MPI version of the same solve (level scheduling, one MPI_Allgatherv of
// every level's new values) in the same run, both checked against a serial solve. Repetitions
// alternate the two; medians reported. Run with `./run bench sptrsv [--ranks N] [--json]`.
#include "../examples/gas/sptrsv.hpp"
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::uint32_t side = 200;
  int dimensions = 2, repeat = 5;
  std::string matrix;
  roam_bench::options_with_json command_line("sptrsv");
  command_line.add("--side", side, "grid side of the Poisson matrix")
      .add("--dimensions", dimensions, "2 (5-point) or 3 (7-point)")
      .add("--matrix", matrix, "a Matrix Market file instead (its lower triangle)")
      .add("--repeat", repeat, "repetitions (alternating roam and MPI); medians reported")
      .parse(argc, argv);
  sptrsv::lower_matrix l;
  try {
    l = matrix.empty() ? sptrsv::poisson_ilu0(side, dimensions)
                       : sptrsv::read_matrix_market(matrix);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sptrsv: %s\n", e.what());
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::vector<double> b = sptrsv::right_hand_side(l.n);
  const std::vector<double> reference = sptrsv::solve_serial(l, b);

  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  std::vector<double> roam_ms, mpi_ms;
  double worst_error = 0;
  // Both solves are timed without their analysis: plan_levels here, prepare() below.
  const sptrsv::level_plan plan = sptrsv::plan_levels(l, ranks);
  for (int r = 0; r < repeat; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = std::chrono::steady_clock::now();
    const std::vector<double> x = sptrsv::solve_mpi_levels(l, plan, b, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    mpi_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    worst_error = std::max(worst_error, sptrsv::relative_error(x, reference));
    roam::run(cfg, [&] {
      sptrsv::prepare(l, b);
      roam::barrier();
      const auto begin = std::chrono::steady_clock::now();
      sptrsv::solve_roam();
      roam::barrier();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
              .count();
      const auto parts = roam::gather(sptrsv::stripes.local().x, 0);
      if (roam::this_node() != 0) return;
      roam_ms.push_back(ms);
      std::vector<double> all;
      for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
      worst_error = std::max(worst_error, sptrsv::relative_error(all, reference));
    });
  }
  if (rank == 0) {
    const double roam_median = roam_bench::median(roam_ms), mpi_median = roam_bench::median(mpi_ms);
    const double speedup = mpi_median / roam_median;
    std::printf("%u rows, %zu nonzeros, %d ranks; medians of %d\n", l.n, l.value.size(), ranks,
                repeat);
    std::printf("%-28s %10.3f ms\n%-28s %10.3f ms\n%-28s %10.3f\n%-28s %10.1e %s\n",
                "roam (fan-out, messages)", roam_median, "MPI (level scheduling)", mpi_median,
                "MPI time / roam time", speedup, "worst relative error", worst_error,
                worst_error <= 1e-12 ? "right" : "WRONG");
    if (command_line.json)
      std::printf(
          "{\"bench\":\"sptrsv\",\"rows\":%u,\"ranks\":%d,\"roam_ms\":%s,\"mpi_ms\":%s,"
          "\"speedup\":%s}\n",
          l.n, ranks, roam_bench::number(roam_median).c_str(),
          roam_bench::number(mpi_median).c_str(), roam_bench::number(speedup).c_str());
  }
  MPI_Finalize();
  return worst_error <= 1e-12 ? 0 : 1;
}
