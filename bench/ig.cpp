// bale index-gather: roam channels against hand-written bulk-synchronous MPI, in one run.
//   ./run bench ig [--ranks N] [--json] [--requests Q] [--table T] [--rounds R]
//   (Q reads per rank, default 10^7, from T entries per rank, default 2^20; best of R runs
//   of each version, default 2)
#include "bale/bulk_synchronous_index_gather.hpp"
#include "bale/driver.hpp"

#include <algorithm>

int main(int argc, char** argv) {
  const bool json = roam_bench::wants_json(argc, argv);
  bale::index_gather_setup setup;
  setup.requests =
      static_cast<std::uint64_t>(roam_bench::option(argc, argv, "--requests", 10'000'000));
  setup.table_size = static_cast<std::uint64_t>(roam_bench::option(argc, argv, "--table", 1 << 20));
  const long rounds = std::max(1L, roam_bench::option(argc, argv, "--rounds", 2));
  int ranks = 1;
  const int rank = bale_bench::start_mpi(argc, argv, ranks);
  const auto expected = bale::index_gather_serial(setup, static_cast<std::uint32_t>(ranks),
                                                  static_cast<std::uint32_t>(rank));

  double mpi_seconds = 1e300;
  std::vector<std::int64_t> gathered;
  for (long r = 0; r < rounds; ++r)
    mpi_seconds = std::min(mpi_seconds, bale_mpi::index_gather(setup, gathered, MPI_COMM_WORLD));
  const bool mpi_ok = bale_bench::everywhere(gathered == expected);

  double roam_seconds = 1e300;
  bool roam_ok = false;
  roam::run(bale_bench::roam_settings(), [&] {
    for (long r = 0; r < rounds; ++r)
      roam_seconds = std::min(roam_seconds, bale::index_gather_roam(setup));
    roam_ok = bale::index_gather_nodes().mine().gathered == expected;
  });
  const int status = bale_bench::report(
      "ig", rank, ranks, static_cast<double>(setup.requests), bale_bench::slowest(roam_seconds),
      bale_bench::slowest(mpi_seconds), bale_bench::everywhere(roam_ok), mpi_ok, json);
  MPI_Finalize();
  return status;
}
