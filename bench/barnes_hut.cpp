// Barnes-Hut on global memory (examples/gas/barnes_hut.hpp): bodies per second for the cache
// policies none, keep and lru (a get per remote cell visit) and for a cached_array of each
// remote tree per phase ("array"), on 1 rank and 2 ranks (mpiexec, each rank bound to a core
// of its own: its worker and its application thread share it) and 4 virtual nodes of one
// process (whose other nodes' cells go through
// active messages and the cache: --roam-gas-path am, since read directly they would not be
// cached), with the share of remote cell visits the cache served (hit rate) and the bytes
// fetched. Each configuration runs as a process of its own; repetitions alternate them and
// the figures are medians.
//
//   ./run bench barnes_hut [--json] [--bodies N] [--repeat R]
#include "../examples/gas/barnes_hut.hpp"
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct figures {
  double bodies_per_second = 0, hit_rate = 0, remote_bytes = 0;
};

/// Runs one configuration as a child process (`launch` before the program, `flags` after)
/// and reads the line "result <bodies/s> <visits> <fetches> <bytes>" it prints.
figures run_child(const std::string& launch, const std::string& self, const std::string& flags) {
  const std::string command = launch + " " + self + " --child " + flags + " 2>&1";
  FILE* out = ::popen(command.c_str(), "r");
  if (!out) {
    std::fprintf(stderr, "barnes_hut: cannot start '%s'\n", command.c_str());
    std::exit(1);
  }
  figures f;
  bool found = false;
  char line[4096];
  std::string all;
  while (std::fgets(line, sizeof line, out)) {
    all += line;
    double bps = 0, visits = 0, fetches = 0, bytes = 0;
    if (std::sscanf(line, "result %lf %lf %lf %lf", &bps, &visits, &fetches, &bytes) == 4) {
      f = {bps, visits > 0 ? 1 - fetches / visits : 0, bytes};
      found = true;
    }
  }
  const int status = ::pclose(out);
  if (!found || status != 0) {
    std::fprintf(stderr, "barnes_hut: '%s' failed:\n%s", command.c_str(), all.c_str());
    std::exit(1);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t bodies = 4000;
  int repeat = 3;
  bool child = false;
  std::string policy = "lru";
  roam_bench::options_with_json command_line("barnes_hut");
  command_line.add("--bodies", bodies, "bodies simulated")
      .add("--repeat", repeat, "repetitions of every configuration; medians reported")
      .flag("--child", child, "(internal) run one configuration and print its result")
      .choice("--policy", policy, {"none", "keep", "lru", "array"},
              "(with --child) the cache policy of the configuration run")
      .parse(argc, argv);

  if (child) {
    barnes_hut::options o;
    o.bodies = bodies;
    o.policy = policy == "none"   ? roam::gas::cache_policy::none
               : policy == "keep" ? roam::gas::cache_policy::keep
                                  : roam::gas::cache_policy::lru;
    if (policy == "array") o.reads = barnes_hut::remote_reads::array;
    return roam::run(roam::config::from_environment(), [&] {
      const barnes_hut::result r = barnes_hut::simulate(o);
      if (roam::this_node() == 0)
        std::printf("result %.3f %llu %llu %llu\n", r.bodies_per_second,
                    static_cast<unsigned long long>(r.remote_visits),
                    static_cast<unsigned long long>(r.remote_fetches),
                    static_cast<unsigned long long>(r.remote_bytes));
    });
  }

  const std::string self = argv[0];
  const char* mpiexec_env = std::getenv("ROAM_MPIEXEC");
  const std::string mpiexec = mpiexec_env ? mpiexec_env : "mpiexec";
  const std::vector<std::string> policies = {"none", "keep", "lru", "array"};
  struct configuration {
    const char* name;
    std::string launch;
  };
  // One core per rank, so that 2 ranks against 1 rank measures the decomposition on twice
  // the cores. Both threads of a rank compute (the application thread runs its own
  // tasklets in joins whatever --roam-lend-app-thread says): unbound, one rank used both
  // cores of this machine and the ratio compared two cores with two. overload-allowed
  // (Open MPI) lets a machine with fewer cores than ranks run it, unbalanced.
  const std::string one_core = " ROAM_TRANSPORT=mpi ROAM_THREADS=1 " + mpiexec;
  const std::string bound = " --bind-to core:overload-allowed";
  const std::vector<configuration> configurations = {
      {"1 rank", "env" + one_core + " -n 1" + bound},
      {"2 ranks", "env" + one_core + " -n 2" + bound},
      {"4 vnodes", "env ROAM_TRANSPORT=inproc ROAM_NODES=4 ROAM_GAS_PATH=am"},
  };
  // runs[c][p][r]
  std::vector<std::vector<std::vector<figures>>> runs(
      configurations.size(), std::vector<std::vector<figures>>(policies.size()));
  for (int r = 0; r < repeat; ++r)
    for (std::size_t c = 0; c < configurations.size(); ++c)
      for (std::size_t p = 0; p < policies.size(); ++p)
        runs[c][p].push_back(
            run_child(configurations[c].launch, self,
                      "--bodies " + std::to_string(bodies) + " --policy " + policies[p]));

  std::vector<std::vector<double>> bps(configurations.size()), hit(configurations.size()),
      bytes(configurations.size());
  std::printf("%llu bodies, 5 force phases (4 steps); medians of %d runs\n",
              static_cast<unsigned long long>(bodies), repeat);
  std::printf("%-9s %-5s %14s %9s %14s\n", "config", "cache", "bodies/s", "hit rate",
              "remote bytes");
  for (std::size_t c = 0; c < configurations.size(); ++c)
    for (std::size_t p = 0; p < policies.size(); ++p) {
      std::vector<double> b, h, y;
      for (const figures& f : runs[c][p]) {
        b.push_back(f.bodies_per_second);
        h.push_back(f.hit_rate);
        y.push_back(f.remote_bytes);
      }
      bps[c].push_back(roam_bench::median(b));
      hit[c].push_back(roam_bench::median(h));
      bytes[c].push_back(roam_bench::median(y));
      std::printf("%-9s %-5s %14.0f %8.1f%% %14.0f\n", configurations[c].name, policies[p].c_str(),
                  bps[c].back(), 100 * hit[c].back(), bytes[c].back());
    }
  const double speedup = bps[1][3] / bps[0][3];
  std::printf("2 ranks / 1 rank (cached_array): %.2f\n", speedup);
  if (command_line.json) {
    auto rows = [](const std::vector<std::vector<double>>& v) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + roam_bench::array(v[i]);
      return s + "]";
    };
    std::printf(
        "{\"bench\":\"barnes_hut\",\"bodies\":%llu,\"configs\":[\"1 rank\",\"2 ranks\",\"4 "
        "vnodes\"],\"policies\":[\"none\",\"keep\",\"lru\",\"array\"],\"bodies_per_second\":%s,"
        "\"hit_rate\":%s,\"remote_bytes\":%s,\"speedup_2_ranks\":%s}\n",
        static_cast<unsigned long long>(bodies), rows(bps).c_str(), rows(hit).c_str(),
        rows(bytes).c_str(), roam_bench::number(speedup).c_str());
  }
  return 0;
}
