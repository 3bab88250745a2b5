// roam — the generalized collectives over a plain MPI communicator: usable from any MPI
// program, with or without a roam runtime, so that the algorithms can be measured against
// the MPI library's own collectives on equal terms.
//
// Every rank of `comm` calls the same collective with the same count, root and choice,
// like an MPI collective; each call returns when this rank's part is done (its output
// complete, its input reusable). They use MPI_Isend/MPI_Irecv on a duplicate of `comm`
// made at the first call and kept with `comm` (freed when `comm` is freed, or at
// MPI_Finalize), so they never match the application's own messages. Call them from one
// thread per communicator at a time (MPI_THREAD_SERIALIZED suffices), between MPI_Init and
// MPI_Finalize. An MPI failure throws roam::error (errc::communication) naming the call,
// the peer and MPI's message; the call's transfers are withdrawn first.
#pragma once

#include <roam/base/error.hpp>
#include <roam/coll/algorithm.hpp>
#include <roam/coll/commutative.hpp>
#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/typed_collectives.hpp>

#include <mpi.h>

#include <cstddef>
#include <string>
#include <type_traits>

namespace roam::coll::mpi {

namespace detail {
/// The links of `comm` (its duplicate, made once).
roam::coll::detail::links& links_of(MPI_Comm comm);
}  // namespace detail

/// The cost model behind `comm`'s automatic choices (unless ROAM_COLL_TUNING names a rules
/// file): α, β and the overhead o from ping-pongs of rank 0 with rank P/2, γ from rank 0
/// summing doubles, measured at the first automatic call on `comm` (or this call, whichever
/// comes first: collective), or ROAM_COLL_MODEL="alpha,beta,gamma[,overhead]" (µs, µs per
/// byte, µs per byte, µs). Every rank gets
/// rank 0's values, so that every rank chooses alike.
cost_model measured_model(MPI_Comm comm);

/// The root's `count` elements at `data` reach every rank's `data`.
template <class T>
void bcast(MPI_Comm comm, T* data, std::size_t count, int root, const choice& c = {}) {
  roam::coll::detail::bcast_of(detail::links_of(comm), data, count, root, c);
}

/// `count` elements of `in` on every rank combined by `op` into the root's `out` (in rank
/// order unless `op` is commutative: roam/coll/commutative.hpp). `out` may be `in`.
template <class T, class Op>
void reduce(MPI_Comm comm, const T* in, T* out, std::size_t count, const Op& op, int root,
            const choice& c = {}) {
  roam::coll::detail::reduce_of(detail::links_of(comm), in, out, count, op, root, c);
}

/// reduce, with the result in every rank's `out`.
template <class T, class Op>
void allreduce(MPI_Comm comm, const T* in, T* out, std::size_t count, const Op& op,
               const choice& c = {}) {
  roam::coll::detail::allreduce_of(detail::links_of(comm), in, out, count, op, c);
}

/// Every rank's `count` elements at `in` reach the root's `out` (size x count, rank order).
template <class T>
void gather(MPI_Comm comm, const T* in, T* out, std::size_t count, int root, const choice& c = {}) {
  roam::coll::detail::gather_of(detail::links_of(comm), in, out, count, root, c);
}

/// gather, with the result in every rank's `out`.
template <class T>
void allgather(MPI_Comm comm, const T* in, T* out, std::size_t count, const choice& c = {}) {
  roam::coll::detail::allgather_of(detail::links_of(comm), in, out, count, c);
}

}  // namespace roam::coll::mpi
