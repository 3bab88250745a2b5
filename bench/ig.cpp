// bale index-gather: roam channels against hand-written bulk-synchronous MPI, in one run.
//   ./run bench ig [--ranks N] [--json] [--requests Q] [--table T] [--rounds R]
//   (Q reads per rank, default 10^7, from T entries per rank, default 2^20; best of R runs
//   of each version, default 2)
#include "bale/bulk_synchronous_index_gather.hpp"
#include "bale/driver.hpp"

int main(int argc, char** argv) {
  bale::index_gather_setup setup;
  setup.requests = 10'000'000;
  setup.table_size = 1 << 20;
  bale_bench::common_options common;
  roam_bench::options options("ig");
  options.add("--requests", setup.requests, "reads per rank")
      .add("--table", setup.table_size, "table entries per rank");
  common.declare(options).parse(argc, argv);
  int ranks = 1;
  const int rank = bale_bench::start_mpi(argc, argv, ranks);
  const auto expected = bale::index_gather_serial(setup, static_cast<std::uint32_t>(ranks),
                                                  static_cast<std::uint32_t>(rank));
  std::vector<std::int64_t> gathered;
  return bale_bench::compare(
      "ig", common, rank, ranks, static_cast<double>(setup.requests),
      [&] { return bale_mpi::index_gather(setup, gathered, MPI_COMM_WORLD); },
      [&] { return gathered == expected; }, [&] { return bale::index_gather_roam(setup); },
      [&] { return bale::index_gather_state.local().gathered == expected; });
}
