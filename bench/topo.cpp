// bale toposort: roam channels against hand-written bulk-synchronous MPI, in one run.
//   ./run bench topo [--ranks N] [--json] [--rows R] [--off-diagonal Z] [--rounds K]
//   (R rows per rank, default 2^18; Z nonzeros per row besides the diagonal on average,
//   default 5; best of K runs of each version, default 2). The rate counts the matrix's
//   nonzeros per rank: each is one removal (or one pivot) to make.
#include "bale/bulk_synchronous_toposort.hpp"
#include "bale/driver.hpp"

#include "../examples/bale/toposort.hpp"

int main(int argc, char** argv) {
  bale::toposort_setup setup;
  setup.rows_per_node = 1 << 18;
  long off_diagonal = 5;  // a whole number, as it always was
  bale_bench::common_options common;
  roam_bench::options options("topo");
  options.add("--rows", setup.rows_per_node, "matrix rows per rank")
      .add("--off-diagonal", off_diagonal, "nonzeros per row besides the diagonal, on average");
  common.declare(options).parse(argc, argv);
  setup.off_diagonal = static_cast<double>(off_diagonal);
  int ranks = 1;
  const int rank = bale_bench::start_mpi(argc, argv, ranks);
  const auto nodes = static_cast<std::uint32_t>(ranks);
  const bale::toposort_problem matrix = bale::toposort_matrix(setup, nodes);
  const bale::toposort_result expected = bale::toposort_serial(matrix, nodes);
  bale::toposort_share share;
  return bale_bench::compare(
      "topo", common, rank, ranks, static_cast<double>(matrix.nonzeros()) / ranks,
      [&] { return bale_mpi::toposort(matrix, share, MPI_COMM_WORLD); },
      [&] { return bale::toposort_share_equals(share, expected); },
      [&] { return bale::toposort_roam(matrix); },
      [&] { return bale::toposort_share_equals(bale::toposort_state.local(), expected); });
}
