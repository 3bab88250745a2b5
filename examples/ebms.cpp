// Monte Carlo transport with energy-band memory servers (examples/gas/ebms.hpp): bands of the
// cross-section table on server nodes, read through the software cache by the nodes that
// track particles; the tallies checked against a serial run of the same particles.
//
//   ./build/default/examples/ebms --particles 20000 --roam-nodes 4
//   ./build/default/examples/ebms --servers 1 --mode prefetch --roam-nodes 3
//   mpiexec -n 2 ./build/default/examples/ebms --particles 50000
#include "gas/ebms.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "ebms: %s\nusage: ebms [--particles N] [--bands B] [--points P] [--nuclides K] "
      "[--servers S] [--mode bands|prefetch] [--reads cache|array] [--policy none|keep|lru] "
      "[--per-task N] "
      "[--seed S] "
      "[roam flags]\n",
      why.c_str());
  std::exit(2);
}

std::uint64_t number(const std::string& option, const std::string& v, std::uint64_t most) {
  const bool digits = !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == v.npos;
  if (!digits || std::stoull(v) > most) usage("not a valid value of " + option + ": " + v);
  return std::stoull(v);
}

}  // namespace

int main(int argc, char** argv) {
  roam::config cfg = roam::config::from_args(argc, argv);
  ebms::options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--particles")
      o.particles = number(a, v, std::uint64_t{1} << 40);
    else if (a == "--bands")
      o.bands = static_cast<std::uint32_t>(number(a, v, 1u << 20));
    else if (a == "--points")
      o.points_per_band = static_cast<std::uint32_t>(number(a, v, 1u << 30));
    else if (a == "--nuclides")
      o.nuclides = static_cast<std::uint32_t>(number(a, v, 1u << 16));
    else if (a == "--servers")
      o.servers = static_cast<std::uint32_t>(number(a, v, 1u << 30));
    else if (a == "--per-task")
      o.particles_per_task = static_cast<std::uint32_t>(number(a, v, 1u << 30));
    else if (a == "--seed")
      o.seed = number(a, v, UINT64_MAX);
    else if (a == "--mode" && (v == "bands" || v == "prefetch"))
      o.mode = v == "bands" ? ebms::tracking::bands : ebms::tracking::prefetch;
    else if (a == "--reads" && (v == "cache" || v == "array"))
      o.reads = v == "cache" ? ebms::band_reads::cache : ebms::band_reads::array;
    else if (a == "--policy" && v == "none")
      o.policy = roam::gas::cache_policy::none;
    else if (a == "--policy" && v == "keep")
      o.policy = roam::gas::cache_policy::keep;
    else if (a == "--policy" && v == "lru")
      o.policy = roam::gas::cache_policy::lru;
    else {
      std::string why = "unknown option or value: ";
      why.append(a).append(" ").append(v);
      usage(why);
    }
  }
  std::atomic<int> refused{0};  // every node validates alike, so all of them stop
  std::atomic<int> wrong{0};
  const int status = roam::run(cfg, [&] {
    try {
      o.validate(roam::num_nodes());
    } catch (const std::invalid_argument& e) {
      if (roam::this_node() == 0) std::fprintf(stderr, "%s\n", e.what());
      refused = 2;
      return;
    }
    const ebms::result r = ebms::transport(o);
    if (roam::this_node() != 0) return;
    const ebms::tallies reference = ebms::track_serial(o);
    const double difference = ebms::difference(r.totals, reference);
    std::printf(
        "ebms: %llu particles, %u bands of %llu bytes on %u %s, %u nodes, %s: %.3f s "
        "(%u passes)\n",
        static_cast<unsigned long long>(o.particles), o.bands,
        static_cast<unsigned long long>(o.band_bytes()), ebms::layout(o, roam::num_nodes()).servers,
        o.servers == 0 ? "hybrid nodes" : "servers", roam::num_nodes(),
        o.mode == ebms::tracking::bands ? "band passes" : "prefetch", r.seconds, r.passes);
    std::printf(
        "%llu collisions; %llu lookups of other nodes' bands, %llu fetches (%s, the "
        "prefetcher's included; none where this process reads directly), evicted %llu "
        "entries, %llu bytes fetched\n",
        static_cast<unsigned long long>(r.totals.total_collisions()),
        static_cast<unsigned long long>(r.lookups), static_cast<unsigned long long>(r.fetches),
        o.reads == ebms::band_reads::cache ? "cache misses" : "cached_array blocks",
        static_cast<unsigned long long>(r.evictions),
        static_cast<unsigned long long>(r.fetched_bytes));
    std::printf("tallies against a serial run: counts %s, largest relative difference %.1e: %s\n",
                difference < HUGE_VAL ? "equal" : "DIFFERENT", difference,
                difference <= 1e-9 ? "right" : "WRONG");
    wrong = difference <= 1e-9 ? 0 : 1;
  });
  return status != 0 ? status : refused != 0 ? refused.load() : wrong.load();
}
