// roam — the collectives on bytes, over any binding's links. Every rank of `l` calls the
// same function with the same root, choice and sizes; each returns when its own part is
// done (its output complete, its input reusable).
#pragma once

#include <roam/coll/algorithm.hpp>
#include <roam/coll/detail/links.hpp>
#include <roam/coll/detail/reduction.hpp>

#include <cstddef>

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

}  // namespace roam::coll::detail
