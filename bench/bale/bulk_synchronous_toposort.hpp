// bale toposort written by hand in bulk-synchronous MPI, the comparison for roam's
// version: per level, MPI_Allgather of the level's sizes, then two exchanges (MPI_Alltoall
// of counts, MPI_Alltoallv of items): the pivots to their columns' owners, then the
// removals to the rows' owners.
#pragma once

#include "../../examples/bale/toposort_problem.hpp"
#include "exchange.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace bale_mpi {

using toposort_pivot = bale::toposort_share::pivot;
struct toposort_removal {
  std::uint32_t row, column;
};

/// Runs on every rank of `comm`; leaves the rank's share of the result in `s` and returns
/// seconds.
inline double toposort(const bale::toposort_problem& m, bale::toposort_share& s, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  s = bale::toposort_share_of(m, static_cast<std::uint32_t>(rank),
                              static_cast<std::uint32_t>(ranks));
  bucket_exchange<toposort_pivot> pivots(comm, s.row_count.size());
  bucket_exchange<toposort_removal> removals(comm, s.row_count.size());
  std::vector<std::uint32_t> sizes(static_cast<std::size_t>(ranks));
  MPI_Barrier(comm);
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t placed = 0;
  for (;;) {
    const std::uint32_t mine = s.begin_level();
    MPI_Allgather(&mine, 1, MPI_UINT32_T, sizes.data(), 1, MPI_UINT32_T, comm);
    const std::uint32_t total = std::accumulate(sizes.begin(), sizes.end(), std::uint32_t{0});
    if (total == 0) break;
    const std::uint32_t first = bale::toposort_first_position(m.rows, placed, sizes, s.node);
    pivots.begin_round();
    for (std::size_t i = 0; i < s.level.size(); ++i) {
      const toposort_pivot p = s.place_row(i, first);
      pivots.add(s.owner(p.column), p);
    }
    removals.begin_round();
    for (const toposort_pivot& p : pivots.exchange())
      s.place_column(p, [&](std::uint32_t other) {
        removals.add(s.owner(other), {other, p.column});
      });
    for (const toposort_removal& r : removals.exchange()) s.remove(r.row, r.column);
    placed += total;
  }
  MPI_Barrier(comm);
  if (placed != m.rows) throw std::invalid_argument("bale: the matrix is not morally triangular");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace bale_mpi
