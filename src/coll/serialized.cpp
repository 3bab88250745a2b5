// The collectives on values of any size (algorithms.hpp): a bcast sends the size first; a
// gather or allgather exchanges every rank's size, then moves the bytes as blocks of those
// sizes with the chosen algorithm; a reduction runs a k-nomial tree (or the linear
// algorithm) in which each transfer's size goes ahead of it, since combining two values
// changes their size.
#include "kernels.hpp"

#include <roam/base/error.hpp>
#include <roam/coll/detail/algorithms.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

namespace roam::coll::detail {

namespace {

using bytes = std::vector<std::byte>;

/// Every rank's size, the edges of their blocks (absolute ranks), and the total.
struct sized_blocks {
  std::vector<std::size_t> edges;
  blocks cut;
};

sized_blocks sizes_of(links& l, std::size_t mine, const char* what) {
  const auto p = static_cast<std::size_t>(l.size());
  std::vector<std::uint64_t> sizes(p);
  const std::uint64_t own = mine;
  allgather(l, reinterpret_cast<const std::byte*>(&own), reinterpret_cast<std::byte*>(sizes.data()),
            sizeof own, {});
  sized_blocks s;
  s.edges.resize(p + 1);
  for (std::size_t i = 0; i < p; ++i) {
    if (sizes[i] > std::numeric_limits<std::size_t>::max() - s.edges[i])
      throw usage_error(std::string("roam::coll::") + what +
                        ": the values' sizes overflow the address space");
    s.edges[i + 1] = s.edges[i] + sizes[i];
  }
  s.cut = {s.edges[p], static_cast<std::uint64_t>(p), 0, s.edges.data()};
  return s;
}

std::vector<bytes> split(const bytes& all, const sized_blocks& s) {
  std::vector<bytes> values(s.edges.size() - 1);
  for (std::size_t i = 0; i + 1 < s.edges.size(); ++i)
    values[i].assign(all.begin() + static_cast<std::ptrdiff_t>(s.edges[i]),
                     all.begin() + static_cast<std::ptrdiff_t>(s.edges[i + 1]));
  return values;
}

/// The algorithm a reduction of serialized values runs: linear or k-nomial. An automatic
/// choice is made for the largest value, which every rank learns first: values differ in
/// size from rank to rank, and the rules must give every rank the same answer.
choice reducing(links& l, collective what, std::size_t size, const choice& asked) {
  std::uint64_t largest = size;
  if (asked.alg == algorithm::automatic) {
    const std::uint64_t mine = size;
    const auto most = [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); };
    allreduce(l, reinterpret_cast<const std::byte*>(&mine), reinterpret_cast<std::byte*>(&largest),
              1, reduction_of<std::uint64_t>(commutative{most}), {algorithm::knomial, 0});
  }
  const choice c = resolved(l, what, static_cast<std::size_t>(largest), asked);
  if (c.alg == algorithm::linear || c.alg == algorithm::knomial) return c;
  if (asked.alg != algorithm::automatic)
    throw usage_error(std::string("roam::coll::") + std::string(to_string(what)) + ": the " +
                      std::string(to_string(c.alg)) +
                      " algorithm cannot combine serialized values, whose size changes as they "
                      "combine: choose linear or knomial");
  return {algorithm::knomial, c.k >= 2 ? c.k : 2u};
}

/// Sends `value` with its size ahead of it.
void send_sized(links& l, int peer, int round, const bytes& value) {
  const std::uint64_t size = value.size();  // lives until complete() below
  l.send(peer, tag_of(phase::pre, round), reinterpret_cast<const std::byte*>(&size), sizeof size);
  send_bytes(l, peer, tag_of(phase::main, round), value.data(), value.size());
  l.complete();
}

void combine_in_order(std::vector<bytes>& values, bytes& out, const serialized_reduction& r) {
  out = std::move(values.front());
  for (std::size_t i = 1; i < values.size(); ++i) r.combine(r.op, out, values[i]);
}

/// The k-nomial reduction to `root` (rooted at rank 0 and forwarded for an operator that
/// may not commute: children hold later ranks, so combining them in order keeps rank order).
void knomial_reduce_sized(links& l, bytes& value, const serialized_reduction& r, int root,
                          unsigned k) {
  const int tree_root = r.commutative ? root : 0;
  const ranks g{l.size(), tree_root};
  const std::uint64_t p = g.size, v = g.relative(l.rank());
  std::vector<std::uint64_t> sizes(k - 1);
  std::vector<bytes> children(k - 1);
  int level = 0;
  for (std::uint64_t d = 1; d < p; d *= k, ++level) {
    if (v % (d * k) != 0) {
      send_sized(l, g.absolute(static_cast<int>(v - v % (d * k))), level, value);
      break;
    }
    std::uint64_t arrived = 0;
    for (std::uint64_t j = 1; j < k && v + j * d < p; ++j, ++arrived)
      l.recv(g.absolute(static_cast<int>(v + j * d)), tag_of(phase::pre, level),
             reinterpret_cast<std::byte*>(&sizes[j - 1]), sizeof(std::uint64_t));
    l.complete();
    for (std::uint64_t j = 0; j < arrived; ++j) {
      children[j].resize(sizes[j]);
      recv_bytes(l, g.absolute(static_cast<int>(v + (j + 1) * d)), tag_of(phase::main, level),
                 children[j].data(), children[j].size());
    }
    l.complete();
    for (std::uint64_t j = 0; j < arrived; ++j) r.combine(r.op, value, children[j]);
  }
  if (tree_root == root) return;
  if (l.rank() == tree_root) send_sized(l, root, 63, value);
  if (l.rank() == root) {
    std::uint64_t size = 0;
    l.recv(tree_root, tag_of(phase::pre, 63), reinterpret_cast<std::byte*>(&size), sizeof size);
    l.complete();
    value.resize(size);
    recv_bytes(l, tree_root, tag_of(phase::main, 63), value.data(), value.size());
    l.complete();
  }
}

}  // namespace

void bcast_serialized(links& l, bytes& data, int root, const choice& c) {
  check_root(l, root, "bcast");
  std::uint64_t size = data.size();
  bcast(l, reinterpret_cast<std::byte*>(&size), sizeof size, root, {});
  if (size > std::numeric_limits<std::size_t>::max())
    throw usage_error("roam::coll::bcast: a value of " + std::to_string(size) +
                      " bytes does not fit in this process's memory");
  if (l.rank() != root) data.resize(static_cast<std::size_t>(size));
  bcast(l, data.data(), data.size(), root, c);
}

std::vector<bytes> gather_serialized(links& l, const bytes& in, int root, const choice& asked) {
  check_root(l, root, "gather");
  const sized_blocks s = sizes_of(l, in.size(), "gather");
  const choice c = resolved(l, collective::gather, s.cut.total / s.cut.parts, asked);
  bytes all(l.rank() == root ? s.cut.total : 0);
  gather_blocks(l, in.data(), all.data(), s.cut, root, c);
  return l.rank() == root ? split(all, s) : std::vector<bytes>{};
}

std::vector<bytes> allgather_serialized(links& l, const bytes& in, const choice& asked) {
  const sized_blocks s = sizes_of(l, in.size(), "allgather");
  const choice c = resolved(l, collective::allgather, s.cut.total / s.cut.parts, asked);
  bytes all(s.cut.total);
  allgather_blocks(l, in.data(), all.data(), s.cut, c);
  return split(all, s);
}

void reduce_serialized(links& l, bytes& value, const serialized_reduction& r, int root,
                       const choice& asked) {
  check_root(l, root, "reduce");
  const choice c = reducing(l, collective::reduce, value.size(), asked);
  if (c.alg == algorithm::linear) {
    std::vector<bytes> all = gather_serialized(l, value, root, c);
    if (l.rank() == root) combine_in_order(all, value, r);
    return;
  }
  knomial_reduce_sized(l, value, r, root, radix(l, c));
}

void allreduce_serialized(links& l, bytes& value, const serialized_reduction& r,
                          const choice& asked) {
  const choice c = reducing(l, collective::allreduce, value.size(), asked);
  if (c.alg == algorithm::linear) {
    std::vector<bytes> all = allgather_serialized(l, value, c);
    return combine_in_order(all, value, r);
  }
  const unsigned k = radix(l, c);
  knomial_reduce_sized(l, value, r, 0, k);
  bcast_serialized(l, value, 0, {algorithm::knomial, k});
}

}  // namespace roam::coll::detail
