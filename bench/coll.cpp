// The generalized collectives over MPI_COMM_WORLD against Open MPI's own, in one run:
// for bcast, reduce, allgather and allreduce at each message size, roam's automatic choice,
// the best algorithm and radix found by trying every one, and the MPI library's collective.
//   ./run bench coll [--ranks N] [--json] [--sizes B,...] [--runs R]
//   (N ranks, default 4; B bytes per rank, default 8 B ... 1 MiB; the median of R runs,
//   default 5, each the mean of enough calls to take about 20 ms, alternating roam and MPI.)
// A call's time is the slowest rank's. The ratio is roam's choice over MPI's.
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <roam/coll/mpi.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

using roam::coll::algorithm;
using roam::coll::choice;
using roam::coll::collective;
namespace rc = roam::coll::mpi;

struct series {
  std::vector<double> sizes, roam_us, best_us, mpi_us, ratio;
  std::vector<std::string> best_alg;
};

/// The algorithms and radices that serve `what` on `p` ranks.
std::vector<choice> candidates(collective what, int p) {
  std::vector<choice> all{{algorithm::linear, 0}};
  std::vector<unsigned> radices;
  for (unsigned k = 2; k <= 8 && k < static_cast<unsigned>(p); ++k) radices.push_back(k);
  radices.push_back(static_cast<unsigned>(std::max(p, 2)));
  for (const algorithm a :
       {algorithm::knomial, algorithm::recursive_multiplying, algorithm::reduce_scatter_allgather})
    if (roam::coll::serves(a, what))
      for (unsigned k : radices) all.push_back({a, k});
  return all;
}

/// Mean µs per call of `call` over `reps` calls, the slowest rank's.
double time_us(const std::function<void()>& call, int reps) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < reps; ++i) call();
  double mine = (MPI_Wtime() - start) * 1e6 / reps, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/// Calls that take about 20 ms, from one timed call (the same on every rank).
int reps_for(const std::function<void()>& call) {
  const double once = time_us(call, 1);
  return std::clamp(static_cast<int>(20000.0 / std::max(once, 1.0)), 3, 2000);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::vector<long> sizes{8, 64, 512, 4096, 32768, 262144, 1048576};
  long runs = 5;
  roam_bench::options options("coll");
  options.flag("--json", json, "print one JSON object as the last line")
      .add("--sizes", sizes, "bytes per rank")
      .add("--runs", runs, "runs per measurement (the median is reported)");
  options.parse(argc, argv);
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const roam::coll::cost_model model = rc::measured_model(MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(
        "the probe's model: alpha %.3g µs, beta %.3g µs/byte (%.3g GB/s), gamma %.3g "
        "µs/byte (%.3g GB/s)\n",
        model.alpha_us, model.beta_us_per_byte, 1e-3 / model.beta_us_per_byte,
        model.gamma_us_per_byte, 1e-3 / model.gamma_us_per_byte);
  const collective measured[] = {collective::bcast, collective::reduce, collective::allgather,
                                 collective::allreduce};
  std::string out = "{\"bench\":\"coll\",\"ranks\":" + std::to_string(p) + ",\"collectives\":{";
  bool wrong = false;
  for (const collective what : measured) {
    series s;
    const std::string name(roam::coll::to_string(what));
    if (rank == 0)
      std::printf(
          "\n%s on %d ranks (µs per call, the slowest rank's; median of %ld runs)\n"
          "%10s %-28s %10s %10s %-28s %10s %7s\n",
          name.c_str(), p, runs, "bytes", "roam's choice", "roam", "best", "best algorithm", "MPI",
          "ratio");
    for (const long bytes : sizes) {
      const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / 8);
      // Whole numbers: sums are exact in any order, so roam's result must equal MPI's.
      std::vector<double> in(count), out_roam(count * (what == collective::allgather ? p : 1)),
          out_mpi(out_roam.size());
      for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<double>((rank + 1) * (i % 7));
      auto roam_call = [&](const choice& c) -> std::function<void()> {
        switch (what) {
          case collective::bcast:
            return [&, c] { rc::bcast(MPI_COMM_WORLD, in.data(), count, 0, c); };
          case collective::reduce:
            return [&, c] {
              rc::reduce(MPI_COMM_WORLD, in.data(), out_roam.data(), count, std::plus<>{}, 0, c);
            };
          case collective::allgather:
            return [&, c] { rc::allgather(MPI_COMM_WORLD, in.data(), out_roam.data(), count, c); };
          default:
            return [&, c] {
              rc::allreduce(MPI_COMM_WORLD, in.data(), out_roam.data(), count, std::plus<>{}, c);
            };
        }
      };
      const int n = static_cast<int>(count);
      std::function<void()> mpi_call;
      switch (what) {
        case collective::bcast:
          mpi_call = [&] { MPI_Bcast(in.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD); };
          break;
        case collective::reduce:
          mpi_call = [&] {
            MPI_Reduce(in.data(), out_mpi.data(), n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
          };
          break;
        case collective::allgather:
          mpi_call = [&] {
            MPI_Allgather(in.data(), n, MPI_DOUBLE, out_mpi.data(), n, MPI_DOUBLE, MPI_COMM_WORLD);
          };
          break;
        default:
          mpi_call = [&] {
            MPI_Allreduce(in.data(), out_mpi.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          };
      }
      // Correctness of the automatic choice against the library, once.
      roam_call({})();
      mpi_call();
      if (what != collective::bcast && (what != collective::reduce || rank == 0) &&
          out_roam != out_mpi)
        wrong = true;
      const auto automatic = roam_call({});
      const int reps_roam = reps_for(automatic), reps_mpi = reps_for(mpi_call);
      std::vector<double> roam_runs, mpi_runs;
      for (long r = 0; r < runs; ++r) {
        roam_runs.push_back(time_us(automatic, reps_roam));
        mpi_runs.push_back(time_us(mpi_call, reps_mpi));
      }
      double best = 1e300;
      std::string best_name;
      for (const choice& c : candidates(what, p)) {
        const auto call = roam_call(c);
        const int reps = reps_for(call);
        std::vector<double> times;
        for (long r = 0; r < runs; ++r) times.push_back(time_us(call, reps));
        const double t = roam_bench::median(times);
        if (t < best) {
          best = t;
          best_name = roam::coll::describe(c);
        }
      }
      const double roam_us = roam_bench::median(roam_runs), mpi_us = roam_bench::median(mpi_runs);
      s.sizes.push_back(static_cast<double>(bytes));
      s.roam_us.push_back(roam_us);
      s.best_us.push_back(best);
      s.best_alg.push_back(best_name);
      s.mpi_us.push_back(mpi_us);
      s.ratio.push_back(roam_us / mpi_us);
      const std::string chosen = roam::coll::describe(
          rc::detail::links_of(MPI_COMM_WORLD)
              .rules()
              .select(what, static_cast<std::uint64_t>(p),
                      rc::detail::links_of(MPI_COMM_WORLD).processes_per_node(),
                      static_cast<std::uint64_t>(bytes)));
      if (rank == 0)
        std::printf("%10ld %-28s %10.2f %10.2f %-28s %10.2f %7.2f\n", bytes, chosen.c_str(),
                    roam_us, best, best_name.c_str(), mpi_us, roam_us / mpi_us);
    }
    std::string algs = "[";
    for (std::size_t i = 0; i < s.best_alg.size(); ++i)
      algs += (i ? ",\"" : "\"") + s.best_alg[i] + "\"";
    algs += "]";
    out.append(what == measured[0] ? "\"" : ",\"").append(name);
    out.append("\":{\"sizes\":").append(roam_bench::array(s.sizes));
    out.append(",\"roam_us\":").append(roam_bench::array(s.roam_us));
    out.append(",\"best_us\":").append(roam_bench::array(s.best_us));
    out.append(",\"best_alg\":").append(algs);
    out.append(",\"mpi_us\":").append(roam_bench::array(s.mpi_us));
    out.append(",\"ratio\":").append(roam_bench::array(s.ratio)).append("}");
  }
  out += "}}";
  int any_wrong = wrong ? 1 : 0, wrong_anywhere = 0;
  MPI_Allreduce(&any_wrong, &wrong_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    if (wrong_anywhere) std::printf("WRONG: a result differs from the MPI library's\n");
    if (json) std::printf("%s\n", out.c_str());
  }
  MPI_Finalize();
  return wrong_anywhere;
}
