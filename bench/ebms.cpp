// Monte Carlo transport with energy-band memory servers (examples/gas/ebms.hpp): roam's
// versions (band passes, and persistent tasks with prefetch; bands read through the
// software cache) against the bulk-synchronous MPI version (rounds of all-to-all band
// requests) in the same run, all checked against a serial run. Repetitions alternate the
// three; medians and ranges reported. Run with `./run bench ebms [--ranks N] [--json]`.
#include "../examples/gas/ebms.hpp"
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  ebms::options o;
  std::uint64_t particles = 100000;
  std::uint32_t servers = 0, points = 512, per_task = 32;
  std::string reads = "cache";
  int repeat = 5;
  roam_bench::options_with_json command_line("ebms");
  command_line.add("--particles", particles, "particles tracked")
      .add("--points", points, "energy points per band (10 bands)")
      .add("--servers", servers, "ranks holding the bands, the others track (0: all do both)")
      .add("--per-task", per_task, "particles per task (roam)")
      .choice("--reads", reads, {"cache", "array"},
              "roam reads remote bands through the cache (a get per lookup) or cached_arrays")
      .add("--repeat", repeat, "repetitions (alternating the versions); medians reported")
      .parse(argc, argv);
  o.particles = particles;
  o.points_per_band = points;
  o.servers = servers;
  o.particles_per_task = per_task;
  o.reads = reads == "cache" ? ebms::band_reads::cache : ebms::band_reads::array;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  try {
    o.validate(static_cast<std::uint32_t>(ranks));
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "%s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  const ebms::tallies reference = ebms::track_serial(o);

  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  std::vector<double> mpi_s, bands_s, prefetch_s, hit_rate;
  std::uint32_t mpi_passes = 0, roam_passes = 0;
  std::uint64_t transfers = 0, fetched = 0;
  double worst = 0;
  for (int r = 0; r < repeat; ++r) {
    const ebms::mpi_result m = ebms::transport_mpi(o, MPI_COMM_WORLD);
    mpi_s.push_back(m.seconds);
    mpi_passes = m.passes;
    transfers = m.band_transfers;
    worst = std::max(worst, ebms::difference(m.totals, reference));
    for (ebms::tracking mode : {ebms::tracking::bands, ebms::tracking::prefetch}) {
      ebms::options run = o;
      run.mode = mode;
      roam::run(cfg, [&] {
        const ebms::result x = ebms::transport(run);
        if (roam::this_node() != 0) return;
        worst = std::max(worst, ebms::difference(x.totals, reference));
        if (mode == ebms::tracking::bands) {
          bands_s.push_back(x.seconds);
          roam_passes = x.passes;
          fetched = x.fetched_bytes;
          hit_rate.push_back(x.hit_rate());
        } else {
          prefetch_s.push_back(x.seconds);
        }
      });
    }
  }
  const bool right = worst <= 1e-9;
  if (rank == 0) {
    auto range = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      char text[64];
      std::snprintf(text, sizeof text, "%.3f .. %.3f", v.front(), v.back());
      return std::string(text);
    };
    const double mpi = roam_bench::median(mpi_s), bands = roam_bench::median(bands_s),
                 prefetch = roam_bench::median(prefetch_s);
    std::printf("%llu particles, 10 bands of %llu bytes, %d ranks (%s); medians of %d\n",
                static_cast<unsigned long long>(o.particles),
                static_cast<unsigned long long>(o.band_bytes()), ranks,
                servers == 0 ? "every rank serves and tracks" : "servers apart", repeat);
    std::printf("%-34s %9s %18s\n", "version", "seconds", "range");
    std::printf("%-34s %9.3f %18s  %u passes, %llu band transfers\n", "MPI (all-to-all rounds)",
                mpi, range(mpi_s).c_str(), mpi_passes, static_cast<unsigned long long>(transfers));
    std::printf("%-34s %9.3f %18s  %u passes, hit rate %.1f%%, %llu bytes fetched\n",
                ("roam (band passes, " + reads + ")").c_str(), bands, range(bands_s).c_str(),
                roam_passes, 100 * roam_bench::median(hit_rate),
                static_cast<unsigned long long>(fetched));
    std::printf("%-34s %9.3f %18s\n", ("roam (particle tasks, prefetch, " + reads + ")").c_str(),
                prefetch, range(prefetch_s).c_str());
    std::printf("MPI time / roam time: band passes %.2f, prefetch %.2f\n", mpi / bands,
                mpi / prefetch);
    std::printf("tallies against a serial run: largest relative difference %.1e: %s\n", worst,
                right ? "right" : "WRONG");
    if (command_line.json)
      std::printf(
          "{\"bench\":\"ebms\",\"particles\":%llu,\"ranks\":%d,\"mpi_s\":%s,\"roam_s\":%s,"
          "\"roam_prefetch_s\":%s,\"speedup\":%s,\"speedup_prefetch\":%s,\"hit_rate\":%s}\n",
          static_cast<unsigned long long>(o.particles), ranks, roam_bench::number(mpi).c_str(),
          roam_bench::number(bands).c_str(), roam_bench::number(prefetch).c_str(),
          roam_bench::number(mpi / bands).c_str(), roam_bench::number(mpi / prefetch).c_str(),
          roam_bench::number(roam_bench::median(hit_rate)).c_str());
  }
  MPI_Finalize();
  return right ? 0 : 1;
}
