// The bulk-synchronous step of the MPI versions of the bale kernels: items bucketed by
// destination rank, then one MPI_Alltoall of counts and one MPI_Alltoallv of the items.
#pragma once

#include "../../examples/bale/random_stream.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>

#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

namespace bale_mpi {

template <class T>
class bucket_exchange {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  bucket_exchange(MPI_Comm comm, std::uint64_t batch) : comm_(comm) {
    MPI_Comm_size(comm, &ranks_);
    const auto r = static_cast<std::size_t>(ranks_);
    counts_.resize(r);
    received_counts_.resize(r);
    displacements_.resize(r);
    received_displacements_.resize(r);
    fill_.resize(r);
    items_.reserve(batch);
    owners_.reserve(batch);
  }

  void begin_round() {
    items_.clear();
    owners_.clear();
    std::fill(counts_.begin(), counts_.end(), 0);
  }
  /// Queues `item` for rank `owner` in this round.
  void add(std::uint32_t owner, const T& item) {
    items_.push_back(item);
    owners_.push_back(owner);
    ++counts_[owner];
  }
  /// Exchanges this round's items; returns what every rank sent here, grouped by source
  /// rank. Source order is what a rank needs to send answers back (see answer()).
  const std::vector<T>& exchange() {
    std::exclusive_scan(counts_.begin(), counts_.end(), displacements_.begin(), 0);
    fill_ = displacements_;
    sorted_.resize(items_.size());
    for (std::size_t i = 0; i < items_.size(); ++i) sorted_[fill_[owners_[i]]++] = items_[i];
    MPI_Alltoall(counts_.data(), 1, MPI_INT, received_counts_.data(), 1, MPI_INT, comm_);
    std::exclusive_scan(received_counts_.begin(), received_counts_.end(),
                        received_displacements_.begin(), 0);
    received_.resize(
        static_cast<std::size_t>(received_displacements_.back() + received_counts_.back()));
    MPI_Alltoallv(sorted_.data(), counts_.data(), displacements_.data(), byte_type(),
                  received_.data(), received_counts_.data(), received_displacements_.data(),
                  byte_type(), comm_);
    return received_;
  }

  /// Sends one answer per received item back to its source (answers[i] for received[i]);
  /// returns the answers to this rank's items in the order they were added.
  template <class A>
  std::vector<A> answer(const std::vector<A>& answers) {
    std::vector<A> sorted(items_.size()), result(items_.size());
    MPI_Datatype type;
    MPI_Type_contiguous(sizeof(A), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    MPI_Alltoallv(answers.data(), received_counts_.data(), received_displacements_.data(), type,
                  sorted.data(), counts_.data(), displacements_.data(), type, comm_);
    MPI_Type_free(&type);
    fill_ = displacements_;
    for (std::size_t i = 0; i < items_.size(); ++i) result[i] = sorted[fill_[owners_[i]]++];
    return result;
  }

 private:
  MPI_Datatype byte_type() {
    if (type_ == MPI_DATATYPE_NULL) {
      MPI_Type_contiguous(sizeof(T), MPI_BYTE, &type_);
      MPI_Type_commit(&type_);
    }
    return type_;
  }

 public:
  ~bucket_exchange() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  bucket_exchange(const bucket_exchange&) = delete;
  bucket_exchange& operator=(const bucket_exchange&) = delete;

 private:
  MPI_Comm comm_;
  int ranks_ = 1;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::vector<int> counts_, received_counts_, displacements_, received_displacements_, fill_;
  std::vector<T> items_, sorted_, received_;
  std::vector<std::uint32_t> owners_;
};

/// Starts a round of `n` operations on random positions (the rank's stream `random`): each
/// position's slot goes to its owner.
inline void bucket_random_slots(bucket_exchange<std::uint32_t>& exchange,
                                bale::random_stream& random, std::uint64_t n, std::uint32_t ranks,
                                std::uint64_t table_size) {
  exchange.begin_round();
  for (std::uint64_t i = 0; i < n; ++i) {
    const bale::position p = bale::position_of(random.next(), ranks, table_size);
    exchange.add(p.owner, p.slot);
  }
}

/// Runs `total` operations in rounds of at most `batch` (`round(done, n)` does one round
/// of `n`, after `done`), between two barriers; returns the seconds in between.
template <class Round>
double timed_rounds(MPI_Comm comm, std::uint64_t total, std::uint64_t batch, Round round) {
  MPI_Barrier(comm);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t done = 0; done < total;) {
    const std::uint64_t n = std::min<std::uint64_t>(batch, total - done);
    round(done, n);
    done += n;
  }
  MPI_Barrier(comm);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace bale_mpi
