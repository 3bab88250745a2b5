// The algorithms themselves, one per file (knomial.cpp, recursive_multiplying.cpp,
// linear.cpp); collectives.cpp checks a call and picks one. Arguments as in
// include/roam/coll/detail/algorithms.hpp; `k` is checked (2 <= k) and capped at size().
#pragma once

#include "schedule.hpp"

#include <roam/coll/detail/reduction.hpp>

namespace roam::coll::detail {

void knomial_bcast(links& l, std::byte* data, std::size_t bytes, int root, unsigned k);
void knomial_reduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                    const reduction& r, int root, unsigned k);
void knomial_gather(links& l, const std::byte* in, std::byte* out, std::size_t bytes, int root,
                    unsigned k);
/// The root's `data` (cut as `b`, relative rank i's block at b.edge(i)) leaves each rank
/// holding its own block in place, along a k-nomial tree.
void knomial_scatter(links& l, std::byte* data, const blocks& b, int root, unsigned k);

/// Every rank holds its block of `data` (relative to `root`, cut as `b`); afterwards every
/// rank holds all of them.
void recursive_multiplying_allgather(links& l, std::byte* data, const blocks& b, int root,
                                     unsigned k);
void recursive_multiplying_allreduce(links& l, const std::byte* in, std::byte* out,
                                     std::size_t count, const reduction& r, unsigned k);

void linear_bcast(links& l, std::byte* data, std::size_t bytes, int root);
void linear_reduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                   const reduction& r, int root);
void linear_gather(links& l, const std::byte* in, std::byte* out, std::size_t bytes, int root);
void linear_allgather(links& l, const std::byte* in, std::byte* out, std::size_t bytes);
void linear_allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                      const reduction& r);

}  // namespace roam::coll::detail
