// bale index-gather written by hand in bulk-synchronous MPI, the comparison for roam's
// version: in rounds of `batch` requests, bucket the requested slots by owner, exchange
// them (MPI_Alltoall of counts, MPI_Alltoallv of slots), look the values up, and send
// them back the same way.
#pragma once

#include "../../examples/bale/index_gather.hpp"
#include "exchange.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace bale_mpi {

/// Runs on every rank of `comm`; fills `gathered` and returns seconds.
inline double index_gather(const bale::index_gather_setup& s, std::vector<std::int64_t>& gathered,
                           MPI_Comm comm, std::uint64_t batch = 1 << 16) {
  bale::check_table_size(s.table_size);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const auto nodes = static_cast<std::uint32_t>(ranks);
  const std::vector<std::int64_t> table =
      bale::index_gather_table(static_cast<std::uint32_t>(rank), nodes, s.table_size);
  gathered.assign(s.requests, 0);
  bale::random_stream random(s.seed, static_cast<std::uint32_t>(rank));
  bucket_exchange<std::uint32_t> exchange(comm, batch);
  std::vector<std::int64_t> values;
  return timed_rounds(comm, s.requests, batch, [&](std::uint64_t done, std::uint64_t n) {
    bucket_random_slots(exchange, random, n, nodes, s.table_size);
    const std::vector<std::uint32_t>& asked = exchange.exchange();
    values.resize(asked.size());
    for (std::size_t i = 0; i < asked.size(); ++i) values[i] = table[asked[i]];
    const std::vector<std::int64_t> answers = exchange.answer(values);
    std::copy(answers.begin(), answers.end(), gathered.begin() + static_cast<std::ptrdiff_t>(done));
  });
}

}  // namespace bale_mpi
