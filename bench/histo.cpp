// bale histogram: roam channels against hand-written bulk-synchronous MPI, in one run.
//   ./run bench histo [--ranks N] [--json] [--updates U] [--table T] [--rounds R]
//   (U updates per rank, default 10^7, into T slots per rank, default 2^20; best of R runs
//   of each version, default 2)
#include "bale/bulk_synchronous_histogram.hpp"
#include "bale/driver.hpp"

int main(int argc, char** argv) {
  bale::histogram_setup setup;
  setup.updates = 10'000'000;
  setup.table_size = 1 << 20;
  bale_bench::common_options common;
  roam_bench::options options("histo");
  options.add("--updates", setup.updates, "updates per rank")
      .add("--table", setup.table_size, "table slots per rank");
  common.declare(options).parse(argc, argv);
  int ranks = 1;
  const int rank = bale_bench::start_mpi(argc, argv, ranks);
  const auto expected = bale::histogram_serial(setup, static_cast<std::uint32_t>(ranks),
                                               static_cast<std::uint32_t>(rank));
  std::vector<std::int64_t> table;
  return bale_bench::compare(
      "histo", common, rank, ranks, static_cast<double>(setup.updates),
      [&] { return bale_mpi::histogram(setup, table, MPI_COMM_WORLD); },
      [&] { return table == expected; }, [&] { return bale::histogram_roam(setup); },
      [&] { return bale::histogram_table.local() == expected; });
}
