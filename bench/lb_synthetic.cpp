// PREMA's synthetic load-balancing benchmark, and more: mobile objects each carrying units
// of work (20 % of them heavy), placed so that the heavy ones crowd the first nodes, run
// once per load-balancing policy with the same seed. Per policy: makespan, ratio to the
// lower bound, per-worker busy time, balancing overhead, objects moved; one CSV per policy
// of every unit's (node, worker, start, end), from which tools/plot_lb.py draws the plots.
//
//   ./run bench lb_synthetic [--json] [--nodes 4] [--workers 4] [--objects-per-worker 10]
//       [--heavy-fraction 0.2] [--heavy-factor 2.5] [--unit-ms 20] [--work spin|sleep]
//       [--mode oneshot|iterative|adaptive] [--iterations 5] [--placement spread|node0]
//       [--out DIR]
//       [--policies none,diffusion,master_worker,greedy_refine]
//       [--roam-trace DIR/run.json]   one trace per policy: DIR/run_<mode>_<policy>.json
//
// In one process by default (--nodes virtual nodes); under mpiexec, one node per rank.
// `sleep` units block their worker (std::this_thread::sleep_for), so many virtual workers
// are meaningful on a 2-core machine; `spin` units compute.
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <roam/roam.hpp>

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct settings {
  std::uint32_t nodes = 4, workers = 4, objects_per_worker = 10, iterations = 5;
  double heavy_fraction = 0.2, heavy_factor = 2.5, unit_ms = 20, threshold = 0;
  bool sleep = true;
  std::string mode = "oneshot", placement = "spread", out = "build/lb_synthetic";
  std::vector<std::string> policies = {"none", "diffusion", "master_worker", "greedy_refine"};
};

// Process-wide: when this process's clock started for the current run, the unit length and
// the work kind (the same on every rank).
clock_type::time_point run_start;
std::atomic<bool> clock_started{false};
double unit_ms = 10;
bool sleep_work = true;

/// One executed unit of work.
struct record {
  std::uint32_t node = 0;
  std::int32_t worker = 0;
  double start_s = 0, end_s = 0, weight = 0;
  std::uint64_t object = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(node, worker, start_s, end_s, weight, object);
  }
};

void work_for(double milliseconds) {
  const auto until = clock_type::now() + std::chrono::duration<double, std::milli>(milliseconds);
  if (sleep_work) {
    // The kernel may end a sleep up to the thread's timer slack late (50 us by default: a
    // 20 ms unit lasted 85 us more on average, 0.45 % of the lower bound, for every policy).
    // 1 us keeps units to their length, so the ratio measures the placement.
    thread_local const bool precise = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
    (void)precise;
    std::this_thread::sleep_until(until);
    return;
  }
  volatile double sink = 0;
  while (clock_type::now() < until)
    for (int i = 0; i < 1000; ++i) sink = sink + i * 0.5;
}

struct work_object;
std::vector<roam::mobile_ptr<work_object>> all_objects;  // the same on every node
std::mutex all_objects_lock;

struct work_object {
  std::uint64_t index = 0;
  double weight = 1;
  bool persistent_weight = false;  // iterative mode: tell the balancer the next unit's weight
  std::vector<record> trace;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(index, weight, persistent_weight, trace);
  }
  double load() const { return persistent_weight ? weight : -1.0; }

  /// One unit of `weight` light units. In adaptive mode, a unit may create others, on
  /// objects and with weights drawn from `seed`, down to `depth` 0: the same tree whatever
  /// the policy.
  void compute(double unit_weight, std::uint64_t seed, int depth) {
    record r;
    r.node = roam::this_node();
    r.worker = roam::detail::worker_index();
    r.object = index;
    r.weight = unit_weight;
    r.start_s = std::chrono::duration<double>(clock_type::now() - run_start).count();
    work_for(unit_ms * unit_weight);
    r.end_s = std::chrono::duration<double>(clock_type::now() - run_start).count();
    trace.push_back(r);
    if (depth <= 0) return;
    std::mt19937_64 rng(seed);
    const int children = static_cast<int>(rng() % 3);
    for (int c = 0; c < children; ++c) {
      const auto& target = all_objects[rng() % all_objects.size()];
      const double w = (rng() % 5 == 0) ? 2.5 : 1.0;
      roam::send_cost cost(w);
      target.send<&work_object::compute>(w, rng(), depth - 1);
    }
  }
};

struct result {
  double makespan_s = 0, ratio = 0, busy_min_s = 0, busy_max_s = 0, overhead_s = 0;
  long migrations = 0;
  std::vector<double> iteration_s;
  double lower_bound_s = 0;
  std::size_t units_run = 0, units_expected = 0;  // every unit must run exactly once
};

/// Total work, unit count and the largest unit of the adaptive tree rooted at (weight,
/// seed, depth).
void adaptive_work(std::size_t objects, double weight, std::uint64_t seed, int depth, double& total,
                   std::size_t& units, double& largest) {
  total += weight;
  ++units;
  largest = std::max(largest, weight);
  if (depth <= 0) return;
  std::mt19937_64 rng(seed);
  const int children = static_cast<int>(rng() % 3);
  for (int c = 0; c < children; ++c) {
    (void)(rng() % objects);
    const double w = (rng() % 5 == 0) ? 2.5 : 1.0;
    adaptive_work(objects, w, rng(), depth - 1, total, units, largest);
  }
}

result run_policy(const settings& s, const std::string& policy, bool mpi,
                  const roam::config& flags) {
  roam::config cfg = flags;
  cfg.transport = mpi ? roam::transport_kind::mpi : roam::transport_kind::inproc;
  cfg.nodes = s.nodes;
  cfg.threads = s.workers;
  cfg.lend_app_thread = false;  // exactly `workers` threads run units on every node
  cfg.comm_thread = mpi;        // balancing requests reach nodes whose workers are all busy
  cfg.of<roam::lb::policy_settings>().policy = policy;
  // A node below this asks for work (default: two units per worker, so that it asks
  // before its workers run dry).
  cfg.of<roam::lb::policy_settings>().threshold = s.threshold > 0 ? s.threshold : 2.0 * s.workers;
  if (policy == "greedy_refine")
    cfg.of<roam::lb::policy_settings>().period_us = 5000;  // a global round costs more
  // --roam-trace run.json: one trace per policy, run_<mode>_<policy>.json.
  if (std::string& trace = cfg.of<roam::trace::trace_settings>().file; !trace.empty()) {
    const std::filesystem::path path(trace);
    trace = (path.parent_path() /
             (path.stem().string() + "_" + s.mode + "_" + policy + path.extension().string()))
                .string();
  }
  cfg.of<roam::lb::policy_settings>().tolerance = 0.05;
  unit_ms = s.unit_ms;
  sleep_work = s.sleep;
  clock_started = false;
  result res;
  roam::run(cfg, [&] {
    const roam::node_id nodes = roam::num_nodes(), me = roam::this_node();
    const std::size_t workers_total = static_cast<std::size_t>(nodes) * s.workers;
    const std::size_t count = workers_total * s.objects_per_worker;
    const auto heavy =
        static_cast<std::size_t>(std::lround(s.heavy_fraction * static_cast<double>(count)));
    // spread: object i lives on node i * nodes / count, so the heavy ones (the first) crowd
    // the first nodes, as when one region of a mesh refines. node0: every object is born
    // on node 0, as when one node reads the input.
    std::vector<roam::mobile_ptr<work_object>> objects;
    if (me == 0)
      for (std::size_t i = 0; i < count; ++i) {
        work_object o;
        o.index = i;
        o.weight = i < heavy ? s.heavy_factor : 1.0;
        o.persistent_weight = s.mode == "iterative";
        const auto where = s.placement == "node0" ? roam::node_id{0}
                                                  : static_cast<roam::node_id>(i * nodes / count);
        objects.push_back(roam::make_mobile<work_object>(roam::node(where), o));
      }
    objects = roam::broadcast_value(objects);
    {
      // The virtual nodes of one process share the global: the same value from each.
      const std::lock_guard guard(all_objects_lock);
      all_objects = objects;
    }
    if (me == 0) roam::wait_quiescence();  // every object exists where it was placed
    // One clock origin per process (the virtual nodes of one process share it).
    if (!clock_started.exchange(true)) run_start = clock_type::now();
    roam::barrier();
    const auto start = clock_type::now();
    const int rounds = s.mode == "iterative" ? static_cast<int>(s.iterations) : 1;
    const int depth = s.mode == "adaptive" ? 3 : 0;
    for (int round = 0; round < rounds; ++round) {
      const auto round_start = clock_type::now();
      if (me == 0)
        for (std::size_t i = 0; i < count; ++i) {
          const double w = i < heavy ? s.heavy_factor : 1.0;
          roam::send_cost cost(w);
          objects[i].send<&work_object::compute>(w, std::uint64_t{i * 7919 + 17}, depth);
        }
      if (me == 0) roam::wait_quiescence();
      roam::barrier();
      if (me == 0)
        res.iteration_s.push_back(
            std::chrono::duration<double>(clock_type::now() - round_start).count());
    }
    const double makespan = std::chrono::duration<double>(clock_type::now() - start).count();
    const auto stats = roam::lb::local_statistics();
    const double overhead = roam::allreduce(stats.balance_seconds, std::plus<>());
    const long moved = roam::allreduce(static_cast<long>(stats.objects_moved), std::plus<>());
    if (me != 0) {
      roam::barrier();
      return;
    }
    // Collect every unit's record (the objects are wherever the balancer left them).
    std::vector<record> records;
    for (auto& o : objects) {
      auto trace = o.call([](const work_object& w) { return w.trace; }).get();
      records.insert(records.end(), trace.begin(), trace.end());
    }
    double total_units = 0, largest = 0;
    std::size_t expected_records = count * static_cast<std::size_t>(rounds);
    if (s.mode == "adaptive") {
      expected_records = 0;
      for (std::size_t i = 0; i < count; ++i)
        adaptive_work(count, i < heavy ? s.heavy_factor : 1.0, i * 7919 + 17, depth, total_units,
                      expected_records, largest);
    } else {
      total_units =
          (static_cast<double>(heavy) * s.heavy_factor + static_cast<double>(count - heavy)) *
          rounds;
      largest = s.heavy_factor;
    }
    const double bound_per_round =
        std::max(total_units / rounds / static_cast<double>(workers_total), largest) * s.unit_ms /
        1000;
    std::map<std::pair<std::uint32_t, std::int32_t>, double> busy;
    for (roam::node_id n = 0; n < nodes; ++n)
      for (std::uint32_t w = 0; w < s.workers; ++w) busy[{n, static_cast<std::int32_t>(w)}] = 0;
    for (const auto& r : records) busy[{r.node, r.worker}] += r.end_s - r.start_s;
    res.makespan_s = makespan;
    res.lower_bound_s = bound_per_round * rounds;
    if (rounds > 1) {
      // After the first balancing step: the iterations after the first.
      const double later = std::accumulate(res.iteration_s.begin() + 1, res.iteration_s.end(), 0.0);
      res.ratio = later / (bound_per_round * (rounds - 1));
    } else {
      res.ratio = makespan / res.lower_bound_s;
    }
    res.busy_min_s = 1e300;
    for (auto& [key, b] : busy) {
      res.busy_min_s = std::min(res.busy_min_s, b);
      res.busy_max_s = std::max(res.busy_max_s, b);
    }
    res.overhead_s = overhead;
    res.migrations = moved;
    res.units_run = records.size();
    res.units_expected = expected_records;
    std::filesystem::create_directories(s.out);
    const std::string tag = s.placement == "spread" ? s.mode : s.mode + "_" + s.placement;
    std::ofstream csv(s.out + "/" + tag + "_" + policy + ".csv");
    csv << "policy,node,worker,start_s,end_s,object,weight\n";
    for (const auto& r : records)
      csv << policy << ',' << r.node << ',' << r.worker << ',' << r.start_s << ',' << r.end_s << ','
          << r.object << ',' << r.weight << '\n';
    roam::barrier();
  });
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  std::string work = "sleep";
  roam_bench::options_with_json command_line("lb_synthetic");
  command_line.add("--nodes", s.nodes, "virtual nodes (under mpiexec: one node per rank instead)")
      .add("--workers", s.workers, "workers per node")
      .add("--objects-per-worker", s.objects_per_worker, "mobile objects per worker")
      .add("--heavy-fraction", s.heavy_fraction, "fraction of the objects that are heavy")
      .add("--heavy-factor", s.heavy_factor, "a heavy object's unit, in light units")
      .add("--unit-ms", s.unit_ms, "milliseconds of work in one light unit")
      .choice("--work", work, {"sleep", "spin"}, "a unit sleeps (blocking its worker) or computes")
      .choice("--mode", s.mode, {"oneshot", "iterative", "adaptive"},
              "one round, rounds with persistent weights, or units that create units")
      .add("--iterations", s.iterations, "rounds of the iterative mode")
      .choice("--placement", s.placement, {"spread", "node0"},
              "objects in order over the nodes (heavy ones first), or all on node 0")
      .add("--threshold", s.threshold,
           "load under which a node asks for work; 0: two units per worker")
      .add("--out", s.out, "directory of the per-unit traces (CSV)")
      .add("--policies", s.policies, "load-balancing policies, run in this order")
      .parse(argc, argv);
  s.sleep = work != "spin";
  // Read once: every policy starts from the same roam flags (and the environment).
  roam::config flags;
  try {
    flags = roam::config::from_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (flags.help) return roam::run(flags, [] {});  // prints roam's settings, runs nothing
  const char* ranks = std::getenv("OMPI_COMM_WORLD_SIZE");
  const bool mpi = ranks && std::atoi(ranks) > 1;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool report = !rank || std::string(rank) == "0";
  if (mpi) s.nodes = static_cast<std::uint32_t>(std::atoi(ranks));

  std::vector<result> results;
  for (const auto& p : s.policies) results.push_back(run_policy(s, p, mpi, flags));
  if (!report) return 0;

  const std::uint32_t total_workers = s.nodes * s.workers;
  std::printf(
      "lb_synthetic: mode %s, placement %s, %u nodes x %u workers, %u objects per worker, %.0f "
      "%% heavy (x%.1f), %s units of %.1f ms\n",
      s.mode.c_str(), s.placement.c_str(), s.nodes, s.workers, s.objects_per_worker,
      100 * s.heavy_fraction, s.heavy_factor, s.sleep ? "sleep" : "spin", s.unit_ms);
  std::printf("%-14s %11s %8s %11s %11s %12s %10s\n", "policy", "makespan_s", "ratio", "busy_min_s",
              "busy_max_s", "overhead_s", "migrations");
  std::string policies_json;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    std::printf("%-14s %11.3f %8.3f %11.3f %11.3f %12.6f %10ld\n", s.policies[i].c_str(),
                r.makespan_s, r.ratio, r.busy_min_s, r.busy_max_s, r.overhead_s, r.migrations);
    if (r.iteration_s.size() > 1) {
      std::printf("%14s iterations:", "");
      for (double t : r.iteration_s) std::printf(" %.3f", t);
      std::printf(" s (lower bound %.3f s each)\n",
                  r.lower_bound_s / static_cast<double>(r.iteration_s.size()));
    }
    policies_json += (i ? "," : "") + std::string("\"") + s.policies[i] +
                     "\":{\"makespan_s\":" + roam_bench::number(r.makespan_s) +
                     ",\"ratio\":" + roam_bench::number(r.ratio) +
                     ",\"busy_min_s\":" + roam_bench::number(r.busy_min_s) +
                     ",\"busy_max_s\":" + roam_bench::number(r.busy_max_s) +
                     ",\"overhead_s\":" + roam_bench::number(r.overhead_s) +
                     ",\"migrations\":" + std::to_string(r.migrations) + "}";
  }
  std::printf("per-unit traces: %s/%s_<policy>.csv (plots: tools/plot_lb.py)\n", s.out.c_str(),
              s.mode.c_str());
  bool wrong = false;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].units_run != results[i].units_expected) {
      std::printf("WRONG: with %s, %zu units ran; the workload has %zu\n", s.policies[i].c_str(),
                  results[i].units_run, results[i].units_expected);
      wrong = true;
    }
  if (wrong) return 1;
  if (command_line.json)
    std::printf("{\"bench\":\"lb_synthetic\",\"mode\":\"%s\",\"workers\":%u,\"policies\":{%s}}\n",
                s.mode.c_str(), total_workers, policies_json.c_str());
  return 0;
}
