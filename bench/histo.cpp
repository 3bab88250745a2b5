// bale histogram: roam channels against hand-written bulk-synchronous MPI, in one run.
//   ./run bench histo [--ranks N] [--json] [--updates U] [--table T] [--rounds R]
//   (U updates per rank, default 10^7, into T slots per rank, default 2^20; best of R runs
//   of each version, default 2)
#include "bale/bulk_synchronous_histogram.hpp"
#include "bale/driver.hpp"

#include <algorithm>

int main(int argc, char** argv) {
  const bool json = roam_bench::wants_json(argc, argv);
  bale::histogram_setup setup;
  setup.updates =
      static_cast<std::uint64_t>(roam_bench::option(argc, argv, "--updates", 10'000'000));
  setup.table_size = static_cast<std::uint64_t>(roam_bench::option(argc, argv, "--table", 1 << 20));
  const long rounds = std::max(1L, roam_bench::option(argc, argv, "--rounds", 2));
  int ranks = 1;
  const int rank = bale_bench::start_mpi(argc, argv, ranks);
  const auto expected = bale::histogram_serial(setup, static_cast<std::uint32_t>(ranks),
                                               static_cast<std::uint32_t>(rank));

  double mpi_seconds = 1e300;
  std::vector<std::int64_t> table;
  for (long r = 0; r < rounds; ++r)
    mpi_seconds = std::min(mpi_seconds, bale_mpi::histogram(setup, table, MPI_COMM_WORLD));
  const bool mpi_ok = bale_bench::everywhere(table == expected);

  double roam_seconds = 1e300;
  bool roam_ok = false;
  roam::run(bale_bench::roam_settings(), [&] {
    for (long r = 0; r < rounds; ++r)
      roam_seconds = std::min(roam_seconds, bale::histogram_roam(setup));
    roam_ok = bale::histogram_tables().mine() == expected;
  });
  const int status = bale_bench::report(
      "histo", rank, ranks, static_cast<double>(setup.updates), bale_bench::slowest(roam_seconds),
      bale_bench::slowest(mpi_seconds), bale_bench::everywhere(roam_ok), mpi_ok, json);
  MPI_Finalize();
  return status;
}
