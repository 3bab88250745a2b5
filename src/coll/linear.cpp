// Linear: the root talks to every rank, or every rank to every other, in one round. The
// fewest rounds and the most messages at one rank: for tiny P x n only.
#include "kernels.hpp"

#include <cstring>

namespace roam::coll::detail {

void linear_bcast(links& l, std::byte* data, std::size_t bytes, int root) {
  const int p = l.size(), me = l.rank();
  if (me == root) {
    for (int peer = 0; peer < p; ++peer)
      if (peer != root) send_bytes(l, peer, tag_of(phase::main, 0), data, bytes);
  } else {
    recv_bytes(l, root, tag_of(phase::main, 0), data, bytes);
  }
  l.complete();
}

namespace {

/// Every rank's block of `b` (absolute ranks) from `in` into `all` at the rank `at`, or at
/// every rank when at < 0.
void gather_to(links& l, const std::byte* in, std::byte* all, const blocks& b, int at) {
  const int p = l.size(), me = l.rank();
  const auto block = [&](int rank) {
    const auto r = static_cast<std::uint64_t>(rank);
    return std::pair{b.edge(r), b.edge(r + 1) - b.edge(r)};
  };
  const std::size_t mine = block(me).second;
  for (int peer = 0; peer < p; ++peer) {
    if (peer == me) continue;
    if (at < 0 || peer == at) send_bytes(l, peer, tag_of(phase::main, 0), in, mine);
    if (at < 0 || me == at) {
      const auto [offset, size] = block(peer);
      recv_bytes(l, peer, tag_of(phase::main, 0), all + offset, size);
    }
  }
  if ((at < 0 || me == at) && mine != 0) std::memmove(all + block(me).first, in, mine);
  l.complete();
}

/// The P inputs gathered in `all`, combined in rank order into `out`.
void combine_in_order(const std::byte* all, std::byte* out, std::size_t count, const reduction& op,
                      int p) {
  const std::size_t bytes = count * op.element_size;
  if (bytes == 0) return;
  std::memcpy(out, all, bytes);  // `all` is scratch: `out` cannot overlap it
  for (int i = 1; i < p; ++i)
    op.combine(op.op, out, all + static_cast<std::size_t>(i) * bytes, count);
}

}  // namespace

void linear_gather(links& l, const std::byte* in, std::byte* out, const blocks& b, int root) {
  gather_to(l, in, out, b, root);
}

void linear_reduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                   const reduction& op, int root) {
  const int p = l.size();
  const std::size_t bytes = count * op.element_size;
  scratch buffer;
  std::byte* const all = buffer.get(l.rank() == root ? static_cast<std::size_t>(p) * bytes : 0);
  gather_to(l, in, all, {bytes * static_cast<std::size_t>(p), static_cast<std::uint64_t>(p), bytes},
            root);
  if (l.rank() == root) combine_in_order(all, out, count, op, p);
}

void linear_allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                      const reduction& op) {
  const int p = l.size();
  const std::size_t bytes = count * op.element_size;
  scratch buffer;
  const std::size_t total = static_cast<std::size_t>(p) * bytes;
  std::byte* const all = buffer.get(total);
  gather_to(l, in, all, {total, static_cast<std::uint64_t>(p), bytes}, -1);
  combine_in_order(all, out, count, op, p);
}

}  // namespace roam::coll::detail
