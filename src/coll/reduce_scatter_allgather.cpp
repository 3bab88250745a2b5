// Allreduce as a reduce-scatter then an allgather, both over recursive multiplying's groups
// (recursive_multiplying.cpp; k = 2 is Rabenseifner's algorithm). In round s of the
// reduce-scatter the group at distance k^s shares one segment of the vector: member j
// keeps the j-th of its k parts, sends the others to their keepers and combines what it
// receives in member order, which is rank order (members' data are consecutive runs of
// ranks). The allgather retraces the rounds backwards and reassembles the segments.
#include "kernels.hpp"

#include <cstring>
#include <vector>

namespace roam::coll::detail {

namespace {

/// Elements [first, first + count) of the vector.
struct segment {
  std::size_t first = 0, count = 0;
  /// Part j of k, cut as evenly as elements allow.
  segment part(std::uint64_t j, std::uint64_t k) const noexcept {
    const blocks cut{count, k, 0};
    return {first + cut.edge(j), cut.edge(j + 1) - cut.edge(j)};
  }
};

}  // namespace

void reduce_scatter_allgather_allreduce(links& l, const std::byte* in, std::byte* out,
                                        std::size_t count, const reduction& op, unsigned k) {
  const std::uint64_t p = static_cast<std::uint64_t>(l.size());
  const std::size_t size = op.element_size, bytes = count * size;
  if (bytes != 0 && in != out) std::memmove(out, in, bytes);
  if (p == 1 || bytes == 0) return;
  const participants parts(p, k);
  if (fold_into_leader(l, parts, out, count, op)) {
    const std::uint64_t i = parts.range_of(static_cast<std::uint64_t>(l.rank()));
    // The segment each round splits: the whole vector, then this participant's part of it.
    std::vector<segment> shared;
    scratch received_buffer;
    segment mine{0, count};
    int round = 0;
    for (std::uint64_t d = 1; d < parts.q; d *= k, ++round) {
      shared.push_back(mine);
      const std::uint64_t start = group_start(i, d, k), position = i / d % k;
      const segment keep = mine.part(position, k);
      std::byte* const received = received_buffer.get((k - 1) * keep.count * size);
      for (std::uint64_t j = 0, slot = 0; j < k; ++j) {
        if (j == position) continue;
        const int to = static_cast<int>(parts.first(start + j * d));
        const segment theirs = mine.part(j, k);
        send_bytes(l, to, tag_of(phase::main, round), out + theirs.first * size,
                   theirs.count * size);
        recv_bytes(l, to, tag_of(phase::main, round), received + slot++ * keep.count * size,
                   keep.count * size);
      }
      l.complete();
      combine_group(op, out + keep.first * size, position, received, k, keep.count);
      mine = keep;
    }
    // Backwards: in round s each member holds its reduced part of the shared segment and
    // gets the others'.
    for (std::uint64_t d = parts.q / k; d >= 1; d /= k) {
      --round;
      const segment whole = shared[static_cast<std::size_t>(round)];
      const std::uint64_t start = group_start(i, d, k), position = i / d % k;
      const segment own = whole.part(position, k);
      for (std::uint64_t j = 0; j < k; ++j) {
        if (j == position) continue;
        const int to = static_cast<int>(parts.first(start + j * d));
        const segment theirs = whole.part(j, k);
        send_bytes(l, to, tag_of(phase::second, round), out + own.first * size, own.count * size);
        recv_bytes(l, to, tag_of(phase::second, round), out + theirs.first * size,
                   theirs.count * size);
      }
      l.complete();
    }
  }
  share_from_leader(l, parts, out, bytes);
}

}  // namespace roam::coll::detail
