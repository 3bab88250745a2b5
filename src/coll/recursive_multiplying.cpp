// Recursive multiplying (Wilkins, thesis 4.3; k = 2 is recursive doubling). The P ranks
// are cut into q = k^m contiguous ranges of one to k ranks (q the largest power of k
// not above P): only each range's first rank takes part in the main stage. Before it, the
// range's other ranks hand it their data; after it, they get the result. In round i of the
// main stage a participant exchanges with the k-1 others of its group of k^(i+1) that lie
// k^i apart. Every participant's data covers a contiguous run of ranks, and runs are
// combined in rank order, so non-commutative reductions come out in rank order too.
//
// Non-uniform ranges rather than MPICH's "ranks >= q fold into rank mod q" pre-stage:
// that fold breaks rank order, and ranges keep it at the same cost (a range sends its
// first rank at most k-1 messages, as the fold's busiest rank receives).
#include "kernels.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace roam::coll::detail {

namespace {

/// The participants' ranges over the relative ranks.
struct participants {
  std::uint64_t p, q;
  explicit participants(std::uint64_t size, std::uint64_t k) : p(size), q(1) {
    while (q * k <= p) q *= k;
  }
  /// First relative rank of range i (i <= q; first(q) == p).
  std::uint64_t first(std::uint64_t i) const noexcept { return i * p / q; }
  /// The range holding relative rank v: the largest i with first(i) <= v.
  std::uint64_t range_of(std::uint64_t v) const noexcept { return ((v + 1) * q - 1) / p; }
};

}  // namespace

void recursive_multiplying_allgather(links& l, std::byte* data, const blocks& b, int root,
                                     unsigned k) {
  const ranks g{l.size(), root};
  const std::uint64_t p = g.size, v = g.relative(l.rank());
  if (p == 1) return;
  const participants parts(p, k);
  const std::uint64_t i = parts.range_of(v), leader = parts.first(i);
  const std::uint64_t range_end = parts.first(i + 1);
  // Bytes of the runs of ranges [a, c).
  auto run = [&](std::uint64_t a, std::uint64_t c) {
    const std::size_t from = b.edge(parts.first(a));
    return std::pair{from, b.edge(parts.first(c)) - from};
  };
  if (v != leader) {
    send_bytes(l, g.absolute(static_cast<int>(leader)), tag_of(phase::pre, 0), data + b.edge(v),
               b.edge(v + 1) - b.edge(v));
    l.complete();
    recv_bytes(l, g.absolute(static_cast<int>(leader)), tag_of(phase::post, 0), data, b.total);
    l.complete();
    return;
  }
  for (std::uint64_t m = leader + 1; m < range_end; ++m)
    recv_bytes(l, g.absolute(static_cast<int>(m)), tag_of(phase::pre, 0), data + b.edge(m),
               b.edge(m + 1) - b.edge(m));
  l.complete();
  int round = 0;
  for (std::uint64_t d = 1; d < parts.q; d *= k, ++round) {
    const std::uint64_t start = i / (d * k) * (d * k) + i % d;
    const auto [mine_at, mine_size] = run(i / d * d, i / d * d + d);
    for (std::uint64_t j = 0; j < k; ++j) {
      const std::uint64_t peer = start + j * d;
      if (peer == i) continue;
      const int to = g.absolute(static_cast<int>(parts.first(peer)));
      send_bytes(l, to, tag_of(phase::main, round), data + mine_at, mine_size);
      const auto [at, size] = run(peer / d * d, peer / d * d + d);
      recv_bytes(l, to, tag_of(phase::main, round), data + at, size);
    }
    l.complete();
  }
  for (std::uint64_t m = leader + 1; m < range_end; ++m)
    send_bytes(l, g.absolute(static_cast<int>(m)), tag_of(phase::post, 0), data, b.total);
  l.complete();
}

void recursive_multiplying_allreduce(links& l, const std::byte* in, std::byte* out,
                                     std::size_t count, const reduction& op, unsigned k) {
  const std::uint64_t p = static_cast<std::uint64_t>(l.size()), v = l.rank();
  const std::size_t bytes = count * op.element_size;
  if (bytes != 0 && in != out) std::memmove(out, in, bytes);
  if (p == 1 || bytes == 0) return;
  const participants parts(p, k);
  const std::uint64_t i = parts.range_of(v), leader = parts.first(i);
  const std::uint64_t range_end = parts.first(i + 1);
  const int tag_pre = tag_of(phase::pre, 0), tag_post = tag_of(phase::post, 0);
  if (v != leader) {
    l.send(static_cast<int>(leader), tag_pre, out, bytes);
    l.complete();
    l.recv(static_cast<int>(leader), tag_post, out, bytes);
    l.complete();
    return;
  }
  std::vector<std::byte> others((std::max<std::uint64_t>(range_end - leader, k) - 1) * bytes);
  for (std::uint64_t m = leader + 1; m < range_end; ++m)
    l.recv(static_cast<int>(m), tag_pre, others.data() + (m - leader - 1) * bytes, bytes);
  l.complete();
  for (std::uint64_t m = leader + 1; m < range_end; ++m)
    op.combine(op.op, out, others.data() + (m - leader - 1) * bytes, count);
  std::vector<std::byte> result(bytes);
  int round = 0;
  for (std::uint64_t d = 1; d < parts.q; d *= k, ++round) {
    const std::uint64_t start = i / (d * k) * (d * k) + i % d;
    for (std::uint64_t j = 0, slot = 0; j < k; ++j) {
      const std::uint64_t peer = start + j * d;
      if (peer == i) continue;
      const int to = static_cast<int>(parts.first(peer));
      l.send(to, tag_of(phase::main, round), out, bytes);
      l.recv(to, tag_of(phase::main, round), others.data() + slot++ * bytes, bytes);
    }
    l.complete();
    // The group's runs in rank order: peer j's, with this rank's own in its place.
    bool first = true;
    for (std::uint64_t j = 0, slot = 0; j < k; ++j) {
      const std::byte* part = start + j * d == i ? out : others.data() + slot++ * bytes;
      if (first) {
        std::memcpy(result.data(), part, bytes);
        first = false;
      } else {
        op.combine(op.op, result.data(), part, count);
      }
    }
    std::memcpy(out, result.data(), bytes);
  }
  for (std::uint64_t m = leader + 1; m < range_end; ++m)
    l.send(static_cast<int>(m), tag_post, out, bytes);
  l.complete();
}

}  // namespace roam::coll::detail
