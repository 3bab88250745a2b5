// bale histogram written by hand in bulk-synchronous MPI, the comparison for roam's
// version: in rounds of `batch` updates, bucket the slots by owner, exchange the counts
// (MPI_Alltoall) and the slots (MPI_Alltoallv), apply what arrived.
#pragma once

#include "../../examples/bale/histogram.hpp"
#include "exchange.hpp"

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace bale_mpi {

/// Runs on every rank of `comm`; fills `table` (this rank's slots) and returns seconds.
inline double histogram(const bale::histogram_setup& s, std::vector<std::int64_t>& table,
                        MPI_Comm comm, std::uint64_t batch = 1 << 16) {
  bale::check_table_size(s.table_size);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  table.assign(s.table_size, 0);
  bale::random_stream random(s.seed, static_cast<std::uint32_t>(rank));
  bucket_exchange<std::uint32_t> exchange(comm, batch);
  return timed_rounds(comm, s.updates, batch, [&](std::uint64_t, std::uint64_t n) {
    bucket_random_slots(exchange, random, n, static_cast<std::uint32_t>(ranks), s.table_size);
    for (std::uint32_t slot : exchange.exchange()) ++table[slot];
  });
}

}  // namespace bale_mpi
