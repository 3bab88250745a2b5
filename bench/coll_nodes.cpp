// The generalized collectives over roam nodes (in-process virtual nodes by default, or the
// ranks of an mpiexec run): for bcast, reduce, allgather and allreduce at each message
// size, roam's automatic choice, the best algorithm and radix found by trying every one,
// and the binomial tree (knomial k=2, the only algorithm roam's node collectives had).
//   ./run bench coll --nodes N [--json] [--sizes B,...] [--runs R] [--target-ms T]
//   (N virtual nodes, default 4; B bytes per node, default 8 B ... 1 MiB; the median of R
//   runs, default 5, each the mean of enough calls to take about T ms, default 20.)
// A call's time is the slowest node's. The ratio is roam's choice over the binomial tree.
//   --grid [--collectives C,...]: node 0 prints one "grid {JSON}" line per algorithm,
//     radix, collective and size, and one for roam's automatic choice ("alg":"default"),
//     in the format of bench_coll --grid (tools/coll_tune.py reads both).
// Every result is checked against the serial answer (WRONG otherwise).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "coll_candidates.hpp"

#include <roam/roam.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

using roam::coll::algorithm;
using roam::coll::choice;
using roam::coll::collective;

/// Mean µs per call of `call` over `reps` calls, the slowest node's.
double time_us(const std::function<void()>& call, int reps) {
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) call();
  const double mine =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      reps;
  return roam::allreduce(mine, [](double a, double b) { return std::max(a, b); });
}

/// Calls that take about `target_ms`, from one timed call (the same on every node).
int reps_for(const std::function<void()>& call, double target_ms) {
  const double once = time_us(call, 1);
  return std::clamp(static_cast<int>(target_ms * 1000.0 / std::max(once, 1.0)), 3, 2000);
}

/// One collective at one size on this node: its buffers and calls.
struct calls {
  collective what;
  std::size_t count;
  roam::node_id me, p;
  std::vector<double> in, out;
  calls(collective w, long bytes, roam::node_id rank, roam::node_id nodes)
      : what(w),
        count(std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / 8)),
        me(rank),
        p(nodes),
        in(count),
        out(count * (w == collective::allgather ? nodes : 1)) {
    reset();
  }
  void reset() {
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<double>((me + 1) * (i % 7));
    std::fill(out.begin(), out.end(), -1.0);
  }
  std::function<void()> with(const choice& c) {
    switch (what) {
      case collective::bcast:
        return [this, c] { roam::broadcast_values(in.data(), count, 0, c); };
      case collective::reduce:
        return [this, c] { roam::reduce(in.data(), out.data(), count, std::plus<>{}, 0, c); };
      case collective::allgather:
        return [this, c] { roam::allgather(in.data(), out.data(), count, c); };
      default:
        return [this, c] { roam::allreduce(in.data(), out.data(), count, std::plus<>{}, c); };
    }
  }
  /// Whether the last call's result is wrong (sums of whole numbers are exact).
  bool wrong() const {
    for (std::size_t i = 0; i < count; ++i) {
      const double x = static_cast<double>(i % 7);
      switch (what) {
        case collective::bcast:
          if (in[i] != x) return true;
          break;
        case collective::reduce:
          if (me == 0 && out[i] != x * p * (p + 1) / 2) return true;
          break;
        case collective::allreduce:
          if (out[i] != x * p * (p + 1) / 2) return true;
          break;
        case collective::allgather:
          for (roam::node_id r = 0; r < p; ++r)
            if (out[r * count + i] != x * (r + 1)) return true;
          break;
        default:
          break;
      }
    }
    return false;
  }
};

struct series {
  std::vector<double> sizes, roam_us, best_us, binomial_us, ratio;
  std::vector<std::string> best_alg;
};

struct settings {
  bool json = false, grid = false;
  std::vector<long> sizes{8, 64, 512, 4096, 32768, 262144, 1048576};
  std::vector<std::string> collectives{"bcast", "reduce", "allgather", "allreduce"};
  long runs = 5;
  double target_ms = 20;
};

/// The body of the job: every node runs it; node 0 prints.
bool measure(const settings& s) {
  const roam::node_id me = roam::this_node(), p = roam::num_nodes();
  auto& node = roam::detail::require_node("bench_coll_nodes");
  const choice cfg_forced = roam::detail::settings_of(node).of<roam::coll::coll_settings>().forced;
  const std::uint64_t ppn = roam::detail::node_processes_per_node(node);
  bool wrong = false;
  std::string out = "{\"bench\":\"coll\",\"nodes\":" + std::to_string(p) + ",\"collectives\":{";
  bool first = true;
  for (const std::string& name : s.collectives) {
    const collective what = *roam_bench::collective_named(name);
    const std::vector<choice> candidates = roam_bench::grid_candidates(what, static_cast<int>(p));
    if (me == 0 && !s.grid)
      std::printf(
          "\n%s on %u nodes (µs per call, the slowest node's; median of %ld runs)\n"
          "%10s %-26s %10s %10s %-26s %10s %7s\n",
          name.c_str(), p, s.runs, "bytes", "roam's choice", "roam", "best", "best algorithm",
          "binomial", "ratio");
    series row;
    for (const long bytes : s.sizes) {
      calls at(what, bytes, me, p);
      for (const choice& c : candidates) {  // each candidate's result, once
        at.reset();
        at.with(c)();
        wrong = wrong || at.wrong();
      }
      // Entry 0 is roam's automatic choice, 1 the binomial tree, then the candidates; the
      // runs alternate between them, so that a slow moment of the machine spreads over all.
      std::vector<std::function<void()>> entries{at.with({}), at.with({algorithm::knomial, 2})};
      for (const choice& c : candidates) entries.push_back(at.with(c));
      std::vector<int> reps(entries.size());
      for (std::size_t e = 0; e < entries.size(); ++e) reps[e] = reps_for(entries[e], s.target_ms);
      std::vector<std::vector<double>> times(entries.size());
      for (long r = 0; r < s.runs; ++r)
        for (std::size_t e = 0; e < entries.size(); ++e)
          times[e].push_back(time_us(entries[e], reps[e]));
      if (me != 0) continue;
      const choice forced = cfg_forced;
      const choice automatic =
          forced.alg != algorithm::automatic && roam::coll::serves(forced.alg, what)
              ? forced
              : roam::detail::node_rules(node).select(what, p, ppn,
                                                      static_cast<std::uint64_t>(bytes));
      std::size_t best = 2;
      for (std::size_t e = 2; e < entries.size(); ++e)
        if (roam_bench::median(times[e]) < roam_bench::median(times[best])) best = e;
      if (s.grid) {
        const std::string head = "grid {\"collective\":\"" + name +
                                 "\",\"ranks\":" + std::to_string(p) +
                                 ",\"ppn\":" + std::to_string(ppn) +
                                 ",\"bytes\":" + std::to_string(bytes) + ",\"alg\":\"";
        std::printf("%sdefault\",\"k\":0,\"choice\":\"%s\",\"us\":%s}\n", head.c_str(),
                    roam::coll::describe(automatic).c_str(),
                    roam_bench::number(roam_bench::median(times[0])).c_str());
        for (std::size_t e = 2; e < entries.size(); ++e)
          std::printf("%s%s\",\"k\":%u,\"us\":%s}\n", head.c_str(),
                      std::string(roam::coll::to_string(candidates[e - 2].alg)).c_str(),
                      candidates[e - 2].k,
                      roam_bench::number(roam_bench::median(times[e])).c_str());
        std::fflush(stdout);
        continue;
      }
      row.sizes.push_back(static_cast<double>(bytes));
      row.roam_us.push_back(roam_bench::median(times[0]));
      row.binomial_us.push_back(roam_bench::median(times[1]));
      row.best_us.push_back(roam_bench::median(times[best]));
      row.best_alg.push_back(roam::coll::describe(candidates[best - 2]));
      row.ratio.push_back(row.roam_us.back() / row.binomial_us.back());
      std::printf("%10ld %-26s %10.2f %10.2f %-26s %10.2f %7.2f\n", bytes,
                  roam::coll::describe(automatic).c_str(), row.roam_us.back(), row.best_us.back(),
                  row.best_alg.back().c_str(), row.binomial_us.back(), row.ratio.back());
    }
    if (me != 0 || s.grid) continue;
    std::string algs = "[";
    for (std::size_t i = 0; i < row.best_alg.size(); ++i)
      algs += (i ? ",\"" : "\"") + row.best_alg[i] + "\"";
    out.append(first ? "\"" : ",\"").append(name);
    out.append("\":{\"sizes\":").append(roam_bench::array(row.sizes));
    out.append(",\"roam_us\":").append(roam_bench::array(row.roam_us));
    out.append(",\"best_us\":").append(roam_bench::array(row.best_us));
    out.append(",\"best_alg\":").append(algs).append("]");
    out.append(",\"binomial_us\":").append(roam_bench::array(row.binomial_us));
    out.append(",\"ratio\":").append(roam_bench::array(row.ratio)).append("}");
    first = false;
  }
  const bool wrong_anywhere = roam::allreduce(wrong, [](bool a, bool b) { return a || b; });
  if (me == 0) {
    if (wrong_anywhere) std::printf("WRONG: a result differs from the serial answer\n");
    if (s.json && !s.grid) std::printf("%s}}\n", out.c_str());
  }
  return wrong_anywhere;
}

}  // namespace

int main(int argc, char** argv) {
  roam::config cfg = roam::config::from_args(argc, argv);
  settings s;
  long nodes = 0;
  roam_bench::options options("coll_nodes");
  options.flag("--json", s.json, "print one JSON object as the last line")
      .flag("--grid", s.grid, "print a \"grid {JSON}\" line per algorithm, radix and size")
      .add("--nodes", nodes, "virtual nodes in this process (default: ROAM_NODES, or 4)")
      .add("--sizes", s.sizes, "bytes per node")
      .add("--collectives", s.collectives, "bcast, reduce, allgather, allreduce")
      .add("--runs", s.runs, "runs per measurement (the median is reported)")
      .add("--target-ms", s.target_ms, "milliseconds each timed run lasts, about");
  options.parse(argc, argv);
  for (const std::string& name : s.collectives)
    if (!roam_bench::collective_named(name) || name == "gather") {
      std::fprintf(stderr, "bench_coll_nodes: unknown collective '%s'\n", name.c_str());
      return 2;
    }
  if (nodes < 0 || nodes > 4096) {
    std::fprintf(stderr, "bench_coll_nodes: --nodes takes 1 ... 4096\n");
    return 2;
  }
  if (nodes > 0) cfg.nodes = static_cast<std::uint32_t>(nodes);
  bool wrong = false;
  const int status = roam::run(cfg, [&] { wrong = measure(s); });
  return status != 0 ? status : (wrong ? 1 : 0);
}
