// The generalized collectives over MPI_COMM_WORLD against Open MPI's own, in one run:
// for bcast, reduce, allgather and allreduce at each message size, roam's automatic choice,
// the best algorithm and radix found by trying every one, and the MPI library's collective.
//   ./run bench coll [--ranks N] [--json] [--sizes B,...] [--runs R] [--target-ms T]
//   (N ranks, default 4; B bytes per rank, default 8 B ... 1 MiB; the median of R runs,
//   default 5, each the mean of enough calls to take about T ms, default 20, alternating
//   roam and MPI.)
// A call's time is the slowest rank's. The ratio is roam's choice over MPI's.
//
// Two more modes feed the autotuner (tools/coll_tune.py, docs/guide/collectives_tuning.md):
//   --grid [--collectives C,...] [--choices NAME[:K],...]: rank 0 prints, for each
//     collective and size, one line "grid {JSON}" per algorithm and radix (or those of
//     --choices), one for the MPI library's collective ("alg":"mpi") and one for roam's
//     automatic choice ("alg":"default", its "choice" described). The candidates' results
//     are checked against the library's (WRONG otherwise).
//   --default-choices (--model ALPHA,BETA,GAMMA[,OVERHEAD] | --rules FILE): no MPI; for
//     each line "COLLECTIVE RANKS PPN BYTES" of stdin, prints it followed by "ALG K": the
//     choice of rules_from(cost_model{ALPHA, BETA, GAMMA, OVERHEAD}), or of the rules file
//     FILE (which must load: a malformed file is its config_error, FILE:LINE, and status 1).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "coll_candidates.hpp"

#include <roam/base/error.hpp>
#include <roam/coll/detail/model_probe.hpp>
#include <roam/coll/mpi.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
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

/// Whether --choices (NAME or NAME:K each; empty: all) keeps `c`.
bool chosen(const std::vector<std::string>& filter, const choice& c) {
  if (filter.empty()) return true;
  const std::string name(roam::coll::to_string(c.alg));
  for (const std::string& f : filter) {
    const std::size_t colon = f.find(':');
    if (f.substr(0, colon) != name) continue;
    if (colon == std::string::npos || std::to_string(c.k) == f.substr(colon + 1)) return true;
  }
  return false;
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

/// Calls that take about `target_ms` (20 ms by default), from one timed call (the same on
/// every rank).
int reps_for(const std::function<void()>& call, double target_ms) {
  const double once = time_us(call, 1);
  return std::clamp(static_cast<int>(target_ms * 1000.0 / std::max(once, 1.0)), 3, 2000);
}

/// One collective's buffers at one size, and its calls: roam's with a choice, and MPI's.
/// Whole numbers: sums are exact in any order, so roam's results must equal MPI's.
struct calls {
  collective what;
  int rank, p;
  std::size_t count;
  std::vector<double> in, out_roam, out_mpi;

  calls(collective w, long bytes, int r, int ranks)
      : what(w),
        rank(r),
        p(ranks),
        count(std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / 8)),
        in(count),
        out_roam(count * (w == collective::allgather || w == collective::gather ? ranks : 1)),
        out_mpi(out_roam.size()) {
    reset();
  }

  /// This rank's own input (a bcast overwrites it).
  void reset() {
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<double>((rank + 1) * (i % 7));
  }

  std::function<void()> roam(const choice& c) {
    switch (what) {
      case collective::bcast:
        return [this, c] { rc::bcast(MPI_COMM_WORLD, in.data(), count, 0, c); };
      case collective::reduce:
        return [this, c] {
          rc::reduce(MPI_COMM_WORLD, in.data(), out_roam.data(), count, std::plus<>{}, 0, c);
        };
      case collective::gather:
        return [this, c] { rc::gather(MPI_COMM_WORLD, in.data(), out_roam.data(), count, 0, c); };
      case collective::allgather:
        return [this, c] { rc::allgather(MPI_COMM_WORLD, in.data(), out_roam.data(), count, c); };
      default:
        return [this, c] {
          rc::allreduce(MPI_COMM_WORLD, in.data(), out_roam.data(), count, std::plus<>{}, c);
        };
    }
  }

  std::function<void()> mpi() {
    const int n = static_cast<int>(count);
    switch (what) {
      case collective::bcast:
        return [this, n] { MPI_Bcast(in.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD); };
      case collective::reduce:
        return [this, n] {
          MPI_Reduce(in.data(), out_mpi.data(), n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        };
      case collective::gather:
        return [this, n] {
          MPI_Gather(in.data(), n, MPI_DOUBLE, out_mpi.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        };
      case collective::allgather:
        return [this, n] {
          MPI_Allgather(in.data(), n, MPI_DOUBLE, out_mpi.data(), n, MPI_DOUBLE, MPI_COMM_WORLD);
        };
      default:
        return [this, n] {
          MPI_Allreduce(in.data(), out_mpi.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        };
    }
  }

  /// Whether this rank's result of the last calls differs from the library's. A bcast
  /// from rank 0 leaves rank 0's values everywhere.
  bool wrong() const {
    switch (what) {
      case collective::bcast:
        for (std::size_t i = 0; i < count; ++i)
          if (in[i] != static_cast<double>(i % 7)) return true;
        return false;
      case collective::reduce:
      case collective::gather:
        return rank == 0 && out_roam != out_mpi;
      default:
        return out_roam != out_mpi;
    }
  }
};

/// --grid: every candidate at every size of every collective, one "grid " line each.
bool run_grid(const std::vector<collective>& which, const std::vector<long>& sizes, long runs,
              double target_ms, const std::vector<std::string>& filter, int rank, int p) {
  auto& links = rc::detail::links_of(MPI_COMM_WORLD);
  const std::uint64_t ppn = links.processes_per_node();
  bool wrong = false;
  for (const collective what : which) {
    std::vector<choice> measured;
    for (const choice& c : roam_bench::grid_candidates(what, p))
      if (chosen(filter, c)) measured.push_back(c);
    for (const long bytes : sizes) {
      calls at(what, bytes, rank, p);
      // Each candidate's result against the library's, once.
      at.mpi()();
      for (const choice& c : measured) {
        at.reset();
        at.roam(c)();
        if (at.wrong()) wrong = true;
      }
      // Entry 0 is MPI's, 1 roam's automatic choice, then the candidates; the runs
      // alternate between them, so that a slow moment of the machine spreads over all.
      std::vector<std::function<void()>> entries{at.mpi(), at.roam({})};
      for (const choice& c : measured) entries.push_back(at.roam(c));
      std::vector<int> reps;
      reps.reserve(entries.size());
      for (const auto& call : entries) reps.push_back(reps_for(call, target_ms));
      std::vector<std::vector<double>> times(entries.size());
      for (long r = 0; r < runs; ++r)
        for (std::size_t e = 0; e < entries.size(); ++e)
          times[e].push_back(time_us(entries[e], reps[e]));
      if (rank != 0) continue;
      const std::string head =
          "grid {\"collective\":\"" + std::string(roam::coll::to_string(what)) +
          "\",\"ranks\":" + std::to_string(p) + ",\"ppn\":" + std::to_string(ppn) +
          ",\"bytes\":" + std::to_string(bytes) + ",\"alg\":\"";
      const choice automatic = links.rules().select(what, static_cast<std::uint64_t>(p), ppn,
                                                    static_cast<std::uint64_t>(bytes));
      for (std::size_t e = 0; e < entries.size(); ++e) {
        std::string line = head;
        if (e == 0) {
          line += "mpi\",\"k\":0";
        } else if (e == 1) {
          line += "default\",\"k\":0,\"choice\":\"" + roam::coll::describe(automatic) + "\"";
        } else {
          const choice& c = measured[e - 2];
          line += std::string(roam::coll::to_string(c.alg)) + "\",\"k\":" + std::to_string(c.k);
        }
        line += ",\"us\":" + roam_bench::number(roam_bench::median(times[e])) + "}";
        std::printf("%s\n", line.c_str());
      }
      std::fflush(stdout);
    }
  }
  return wrong;
}

/// --default-choices: the rules' choice for each query line of stdin, without MPI.
int print_default_choices(const std::string& model, const std::string& rules_file) {
  std::optional<roam::coll::tuning_rules> rules;
  try {
    if (!rules_file.empty()) {
      rules = roam::coll::tuning_rules::load(rules_file);
    } else if (!model.empty()) {
      rules = roam::coll::rules_from(roam::coll::detail::parse_cost_model(model, "--model"));
    } else {
      std::fprintf(stderr,
                   "bench_coll: --default-choices needs --model ALPHA,BETA,GAMMA[,OVERHEAD] "
                   "(µs, µs per byte, µs per byte, µs) or --rules FILE\n");
      return 2;
    }
  } catch (const roam::config_error& e) {
    std::fprintf(stderr, "bench_coll: %s\n", e.what());
    return 1;
  }
  std::string line;
  int number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    std::istringstream fields(line);
    std::string name;
    std::uint64_t ranks = 0, ppn = 0, bytes = 0;
    if (!(fields >> name)) continue;  // a blank line
    const std::optional<collective> what = roam_bench::collective_named(name);
    if (!what || !(fields >> ranks >> ppn >> bytes)) {
      std::fprintf(stderr,
                   "bench_coll: stdin line %d: expected \"COLLECTIVE RANKS PPN BYTES\" "
                   "(COLLECTIVE one of bcast, reduce, gather, allgather, allreduce), not "
                   "\"%s\"\n",
                   number, line.c_str());
      return 2;
    }
    const choice c = rules->select(*what, ranks, ppn, bytes);
    std::printf("%s %llu %llu %llu %s %u\n", name.c_str(), static_cast<unsigned long long>(ranks),
                static_cast<unsigned long long>(ppn), static_cast<unsigned long long>(bytes),
                std::string(roam::coll::to_string(c.alg)).c_str(), c.k);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false, grid = false, default_choices = false;
  std::vector<long> sizes{8, 64, 512, 4096, 32768, 262144, 1048576};
  long runs = 5;
  double target_ms = 20;
  std::vector<std::string> collective_names{"bcast", "reduce", "allgather", "allreduce"}, filter;
  std::string model;
  std::string rules_file;
  roam_bench::options options("coll");
  options.flag("--json", json, "print one JSON object as the last line")
      .add("--sizes", sizes, "bytes per rank")
      .add("--runs", runs, "runs per measurement (the median is reported)")
      .add("--target-ms", target_ms, "ms of calls per run (their mean is the run's time)")
      .flag("--grid", grid, "print a \"grid {JSON}\" line per algorithm, radix and size")
      .add("--collectives", collective_names, "--grid: the collectives measured")
      .add("--choices", filter, "--grid: only these (NAME or NAME:K; default all)")
      .flag("--default-choices", default_choices,
            "no MPI: the rules' choice for each \"COLLECTIVE RANKS PPN BYTES\" line of stdin")
      .add("--model", model,
           "--default-choices: rules from the cost model ALPHA,BETA,GAMMA[,OVERHEAD]")
      .add("--rules", rules_file, "--default-choices: rules from this rules file");
  options.parse(argc, argv);
  if (default_choices) return print_default_choices(model, rules_file);
  std::vector<collective> grid_collectives;
  for (const std::string& name : collective_names) {
    const std::optional<collective> what = roam_bench::collective_named(name);
    if (!what) {
      std::fprintf(stderr,
                   "bench_coll: unknown collective '%s' in --collectives (bcast, reduce, "
                   "gather, allgather, allreduce)\n",
                   name.c_str());
      return 2;
    }
    grid_collectives.push_back(*what);
  }
  if (runs < 1 || !(target_ms > 0)) {
    std::fprintf(stderr, "bench_coll: --runs must be at least 1 and --target-ms above 0\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const roam::coll::cost_model model_used = rc::measured_model(MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(
        "the probe's model: alpha %.3g µs, beta %.3g µs/byte (%.3g GB/s), gamma %.3g "
        "µs/byte (%.3g GB/s), overhead %.3g µs per further message\n",
        model_used.alpha_us, model_used.beta_us_per_byte, 1e-3 / model_used.beta_us_per_byte,
        model_used.gamma_us_per_byte, 1e-3 / model_used.gamma_us_per_byte, model_used.overhead_us);
  if (grid) {
    const int any_wrong = run_grid(grid_collectives, sizes, runs, target_ms, filter, rank, p);
    int wrong_anywhere = 0;
    MPI_Allreduce(&any_wrong, &wrong_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && wrong_anywhere)
      std::printf("WRONG: a result differs from the MPI library's\n");
    MPI_Finalize();
    return wrong_anywhere;
  }
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
      calls at(what, bytes, rank, p);
      const auto mpi_call = at.mpi();
      // Correctness of the automatic choice against the library, once.
      at.roam({})();
      mpi_call();
      if (what != collective::bcast && at.wrong()) wrong = true;
      const auto automatic = at.roam({});
      const int reps_roam = reps_for(automatic, target_ms),
                reps_mpi = reps_for(mpi_call, target_ms);
      std::vector<double> roam_runs, mpi_runs;
      for (long r = 0; r < runs; ++r) {
        roam_runs.push_back(time_us(automatic, reps_roam));
        mpi_runs.push_back(time_us(mpi_call, reps_mpi));
      }
      double best = 1e300;
      std::string best_name;
      for (const choice& c : candidates(what, p)) {
        const auto call = at.roam(c);
        const int reps = reps_for(call, target_ms);
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
