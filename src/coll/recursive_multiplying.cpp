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

namespace roam::coll::detail {

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
    const std::uint64_t start = group_start(i, d, k);
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

bool fold_into_leader(links& l, const participants& parts, std::byte* out, std::size_t count,
                      const reduction& op) {
  const std::uint64_t v = static_cast<std::uint64_t>(l.rank());
  const std::uint64_t i = parts.range_of(v), leader = parts.first(i), end = parts.first(i + 1);
  const std::size_t bytes = count * op.element_size;
  if (v != leader) {
    l.send(static_cast<int>(leader), tag_of(phase::pre, 0), out, bytes);
    l.complete();
    return false;
  }
  scratch buffer;
  std::byte* const members = buffer.get((end - leader - 1) * bytes);
  for (std::uint64_t m = leader + 1; m < end; ++m)
    l.recv(static_cast<int>(m), tag_of(phase::pre, 0), members + (m - leader - 1) * bytes, bytes);
  l.complete();
  for (std::uint64_t m = leader + 1; m < end; ++m)
    op.combine(op.op, out, members + (m - leader - 1) * bytes, count);
  return true;
}

void combine_group(const reduction& op, std::byte* mine, std::uint64_t position, std::byte* others,
                   std::uint64_t k, std::size_t count) {
  if (count == 0) return;
  const std::size_t bytes = count * op.element_size;
  if (position == 0) {
    for (std::uint64_t slot = 0; slot + 1 < k; ++slot)
      op.combine(op.op, mine, others + slot * bytes, count);
    return;
  }
  // Member 0's part, received into `others`, takes the rest in member order.
  for (std::uint64_t j = 1, slot = 1; j < k; ++j)
    op.combine(op.op, others, j == position ? mine : others + slot++ * bytes, count);
  std::memcpy(mine, others, bytes);
}

void share_from_leader(links& l, const participants& parts, std::byte* out, std::size_t bytes) {
  const std::uint64_t v = static_cast<std::uint64_t>(l.rank());
  const std::uint64_t i = parts.range_of(v), leader = parts.first(i), end = parts.first(i + 1);
  if (v != leader) {
    l.recv(static_cast<int>(leader), tag_of(phase::post, 0), out, bytes);
  } else {
    for (std::uint64_t m = leader + 1; m < end; ++m)
      l.send(static_cast<int>(m), tag_of(phase::post, 0), out, bytes);
  }
  l.complete();
}

void recursive_multiplying_allreduce(links& l, const std::byte* in, std::byte* out,
                                     std::size_t count, const reduction& op, unsigned k) {
  const std::uint64_t p = static_cast<std::uint64_t>(l.size());
  const std::size_t bytes = count * op.element_size;
  if (bytes != 0 && in != out) std::memmove(out, in, bytes);
  if (p == 1 || bytes == 0) return;
  const participants parts(p, k);
  if (fold_into_leader(l, parts, out, count, op)) {
    const std::uint64_t i = parts.range_of(static_cast<std::uint64_t>(l.rank()));
    scratch received;
    std::byte* const others = received.get((k - 1) * bytes);
    int round = 0;
    for (std::uint64_t d = 1; d < parts.q; d *= k, ++round) {
      const std::uint64_t start = group_start(i, d, k);
      for (std::uint64_t j = 0, slot = 0; j < k; ++j) {
        const std::uint64_t peer = start + j * d;
        if (peer == i) continue;
        const int to = static_cast<int>(parts.first(peer));
        l.send(to, tag_of(phase::main, round), out, bytes);
        l.recv(to, tag_of(phase::main, round), others + slot++ * bytes, bytes);
      }
      l.complete();
      combine_group(op, out, i / d % k, others, k, count);
    }
  }
  share_from_leader(l, parts, out, bytes);
}

}  // namespace roam::coll::detail
