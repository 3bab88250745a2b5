// The algorithms themselves, one per file (knomial.cpp, recursive_multiplying.cpp,
// reduce_scatter_allgather.cpp, k_ring.cpp, linear.cpp); collectives.cpp checks a call and picks
// one. Arguments as in include/roam/coll/detail/algorithms.hpp; `k` is checked (2 <= k) and capped
// at size().
#pragma once

#include "schedule.hpp"

#include <roam/coll/detail/reduction.hpp>
#include <roam/coll/tuning_rules.hpp>

namespace roam::coll::detail {

// The entry points' checks and choice (collectives.cpp).
/// usage_error unless `root` is a rank of `l`.
void check_root(const links& l, int root, const char* what);
/// The choice to run: the caller's, or (automatic) the forced one or the rules' for
/// `bytes`; usage_error for a radix the algorithm does not take.
choice resolved(const links& l, collective what, std::size_t bytes, const choice& c);
/// The radix to run with (resolved() checked it): the algorithm's default for 0; more
/// than size() acts as size() (one level, one group).
unsigned radix(const links& l, const choice& c);
/// a x b bytes, or a usage_error when that does not fit in memory's address range.
std::size_t bytes_of(std::size_t a, std::size_t b, const char* what);
/// The usage_error for an algorithm without the collective `what`.
[[noreturn]] void not_offered(const choice& c, const char* what);
/// gather and allgather of blocks of `b` (absolute ranks; any sizes) with a resolved choice.
void gather_blocks(links& l, const std::byte* in, std::byte* out, const blocks& b, int root,
                   const choice& c);
void allgather_blocks(links& l, const std::byte* in, std::byte* out, const blocks& b,
                      const choice& c);

void knomial_bcast(links& l, std::byte* data, std::size_t bytes, int root, unsigned k);
void knomial_reduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                    const reduction& r, int root, unsigned k);
/// Every rank's block of `b` (cut in ranks relative to `root`) from `in` to the root's `out`,
/// where blocks are in rank order (absolute, not relative).
void knomial_gather(links& l, const std::byte* in, std::byte* out, const blocks& b, int root,
                    unsigned k);
/// The root's `data` (cut as `b`, relative rank i's block at b.edge(i)) leaves each rank
/// holding its own block in place, along a k-nomial tree.
void knomial_scatter(links& l, std::byte* data, const blocks& b, int root, unsigned k);

/// Every rank holds its block of `data` (relative to `root`, cut as `b`); afterwards every
/// rank holds all of them.
void recursive_multiplying_allgather(links& l, std::byte* data, const blocks& b, int root,
                                     unsigned k);
/// Recursive multiplying's stages around the main one, for reductions without a root:
/// a range's members hand their `out` to the range's leader, which combines them in rank
/// order into its own; returns whether this rank leads its range (takes part in the main
/// stage). share_from_leader then hands the leader's `out` to its members.
bool fold_into_leader(links& l, const participants& parts, std::byte* out, std::size_t count,
                      const reduction& op);
void share_from_leader(links& l, const participants& parts, std::byte* out, std::size_t bytes);
/// A group's k parts of `count` elements combined in member order into `mine`, member
/// `position`'s part; `others` holds the other members' parts in member order and is
/// overwritten. Every member computes the same expression, so that all get the same bits
/// (an operator that commutes mathematically may not bitwise: a max that keeps its first
/// NaN): in `mine` when this member's part comes first, else in member 0's part, copied to
/// `mine` at the end.
void combine_group(const reduction& op, std::byte* mine, std::uint64_t position, std::byte* others,
                   std::uint64_t k, std::size_t count);
void recursive_multiplying_allreduce(links& l, const std::byte* in, std::byte* out,
                                     std::size_t count, const reduction& r, unsigned k);

/// Allreduce as a reduce-scatter and an allgather, each by recursive multiplying over the
/// same groups (k = 2: Rabenseifner's recursive halving and doubling): each round moves
/// (k-1)/k of the current segment instead of all of it. For large vectors.
void reduce_scatter_allgather_allreduce(links& l, const std::byte* in, std::byte* out,
                                        std::size_t count, const reduction& r, unsigned k);

/// K-ring (k_ring.cpp): every rank holds its block of `data` (relative to `root`, cut as
/// `b`); afterwards every rank holds all of them. `k` (>= 1) is the ring groups' size.
void k_ring_allgather(links& l, std::byte* data, const blocks& b, int root, unsigned k);
/// A k-ring reduce-scatter then the k-ring allgather; usage_error unless `r` commutes.
void k_ring_allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                      const reduction& r, unsigned k);

void linear_bcast(links& l, std::byte* data, std::size_t bytes, int root);
void linear_reduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                   const reduction& r, int root);
/// Every rank's block of `b` (cut in absolute ranks) from `in` to the root's `out` (every
/// rank's when root < 0).
void linear_gather(links& l, const std::byte* in, std::byte* out, const blocks& b, int root);
void linear_allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                      const reduction& r);

}  // namespace roam::coll::detail
