// roam — the collectives on bytes, over any binding's links. Every rank of `l` calls the
// same function with the same root, choice and sizes; each returns when its own part is
// done (its output complete, its input reusable).
#pragma once

#include <roam/coll/algorithm.hpp>
#include <roam/coll/detail/links.hpp>
#include <roam/coll/detail/reduction.hpp>

#include <cstddef>
#include <vector>

namespace roam::coll::detail {

/// The root's `bytes` at `data` reach every rank's `data`.
void bcast(links& l, std::byte* data, std::size_t bytes, int root, const choice& c);
/// `count` elements of `in` on every rank combine by `r` into the root's `out` (other ranks'
/// `out` is not touched and may be null). `in` and `out` may be the same buffer.
void reduce(links& l, const std::byte* in, std::byte* out, std::size_t count, const reduction& r,
            int root, const choice& c);
/// reduce, with the result in every rank's `out`.
void allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count, const reduction& r,
               const choice& c);
/// Every rank's `bytes` at `in` reach the root's `out`, in rank order (size() x bytes).
void gather(links& l, const std::byte* in, std::byte* out, std::size_t bytes, int root,
            const choice& c);
/// gather, with the result in every rank's `out`.
void allgather(links& l, const std::byte* in, std::byte* out, std::size_t bytes, const choice& c);

// Values of any size (serialized by a binding's typed calls: roam's node collectives on
// values that do not go by memcpy). Sizes travel first; the bytes then go by the chosen
// algorithm. Reductions run a k-nomial tree (or linear) whose transfers carry their size,
// since combining changes it; an automatic choice of another algorithm runs the k-nomial
// tree, an explicit one is a usage_error.

/// A reduction of serialized values.
struct serialized_reduction {
  /// acc = acc op next.
  void (*combine)(const void* op, std::vector<std::byte>& acc,
                  const std::vector<std::byte>& next) = nullptr;
  const void* op = nullptr;
  bool commutative = false;
};

/// The root's `data` reaches every rank's `data` (resized to it).
void bcast_serialized(links& l, std::vector<std::byte>& data, int root, const choice& c);
/// Every rank's `in`, in rank order, at the root (empty elsewhere).
std::vector<std::vector<std::byte>> gather_serialized(links& l, const std::vector<std::byte>& in,
                                                      int root, const choice& c);
/// gather_serialized, with the result on every rank.
std::vector<std::vector<std::byte>> allgather_serialized(links& l, const std::vector<std::byte>& in,
                                                         const choice& c);
/// Every rank's `value` combined by `r` (rank order unless it commutes) into the root's
/// `value`; other ranks' `value` is left unspecified.
void reduce_serialized(links& l, std::vector<std::byte>& value, const serialized_reduction& r,
                       int root, const choice& c);
/// reduce_serialized, with the result in every rank's `value`.
void allreduce_serialized(links& l, std::vector<std::byte>& value, const serialized_reduction& r,
                          const choice& c);

}  // namespace roam::coll::detail
