// bale index-gather written by hand in bulk-synchronous MPI, the comparison for roam's
// version: in rounds of `batch` requests, bucket the requested slots by owner, exchange
// them (MPI_Alltoall of counts, MPI_Alltoallv of slots), look the values up, and send
// them back the same way.
#pragma once

#include "../../examples/bale/index_gather.hpp"
#include "exchange.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
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
  std::vector<std::int64_t> table(s.table_size);
  for (std::uint32_t slot = 0; slot < s.table_size; ++slot)
    table[slot] = bale::table_value({static_cast<std::uint32_t>(rank), slot}, nodes);
  gathered.assign(s.requests, 0);
  bale::random_stream random(s.seed, static_cast<std::uint32_t>(rank));
  bucket_exchange<std::uint32_t> exchange(comm, batch);
  std::vector<std::int64_t> values;
  MPI_Barrier(comm);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t done = 0; done < s.requests;) {
    const std::uint64_t n = std::min<std::uint64_t>(batch, s.requests - done);
    exchange.begin_round();
    for (std::uint64_t i = 0; i < n; ++i) {
      const bale::position p = bale::position_of(random.next(), nodes, s.table_size);
      exchange.add(p.owner, p.slot);
    }
    const std::vector<std::uint32_t>& asked = exchange.exchange();
    values.resize(asked.size());
    for (std::size_t i = 0; i < asked.size(); ++i) values[i] = table[asked[i]];
    const std::vector<std::int64_t> answers = exchange.answer(values);
    std::copy(answers.begin(), answers.end(), gathered.begin() + static_cast<std::ptrdiff_t>(done));
    done += n;
  }
  MPI_Barrier(comm);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace bale_mpi
