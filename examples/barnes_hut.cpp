// Barnes-Hut on global memory (examples/gas/barnes_hut.hpp): Plummer bodies, 4 leapfrog steps
// of dt 0.025, opening angle 0.5, remote tree cells through the software cache. With --check
// the first accelerations are compared with a direct O(N^2) sum.
//
//   ./build/default/examples/barnes_hut --bodies 4096 --policy lru --check --roam-nodes 4
//   mpiexec -n 2 ./build/default/examples/barnes_hut --bodies 20000
#include "gas/barnes_hut.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

/// The bounds --check holds the tree's accelerations to, relative to a direct sum (opening
/// angle 0.5, monopoles only: bodies whose pulls nearly cancel have the largest errors).
constexpr double max_error_bound = 0.1, mean_error_bound = 0.01;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "barnes_hut: %s\nusage: barnes_hut [--bodies N] [--steps S] [--policy "
               "none|keep|lru|array] [--seed S] [--check] [roam flags]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  roam::config cfg = roam::config::from_args(argc, argv);
  barnes_hut::options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return std::string(argv[++i]);
    };
    if (a == "--bodies")
      o.bodies = std::stoull(value());
    else if (a == "--steps")
      o.steps = std::stoi(value());
    else if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--check")
      o.check = true;
    else if (a == "--policy") {
      const std::string p = value();
      if (p == "none")
        o.policy = roam::gas::cache_policy::none;
      else if (p == "keep")
        o.policy = roam::gas::cache_policy::keep;
      else if (p == "lru")
        o.policy = roam::gas::cache_policy::lru;
      else if (p == "array")
        o.reads = barnes_hut::remote_reads::array;
      else
        usage(("unknown policy " + p).c_str());
    } else
      usage(("unknown option " + a).c_str());
  }
  return roam::run(cfg, [&] {
    const barnes_hut::result r = barnes_hut::simulate(o);
    if (roam::this_node() != 0) return;
    std::printf(
        "barnes_hut: %llu bodies on %u nodes, %d steps: %.0f bodies/s, energy %.6f -> %.6f "
        "(drift %.2e)\n",
        static_cast<unsigned long long>(o.bodies), roam::num_nodes(), o.steps, r.bodies_per_second,
        r.energy_start, r.energy_end, std::abs((r.energy_end - r.energy_start) / r.energy_start));
    std::printf(
        "remote cells: %llu visits, %llu fetched (%.1f%% served by the cache), %llu bytes\n",
        static_cast<unsigned long long>(r.remote_visits),
        static_cast<unsigned long long>(r.remote_fetches),
        r.remote_visits ? 100.0 * (1 - double(r.remote_fetches) / double(r.remote_visits)) : 0.0,
        static_cast<unsigned long long>(r.remote_bytes));
    if (o.check) {
      const bool ok =
          r.max_relative_error <= max_error_bound && r.mean_relative_error <= mean_error_bound;
      std::printf("accelerations against a direct sum: max relative error %.2e, mean %.2e: %s\n",
                  r.max_relative_error, r.mean_relative_error,
                  ok ? "within the bounds (max 1e-1, mean 1e-2)"
                     : "WRONG (beyond the bounds: max 1e-1, mean 1e-2)");
    }
  });
}
