// k-nomial trees (Wilkins, thesis 4.3): relative rank r receives from r - (r mod k^(i+1))
// at the level of its lowest non-zero base-k digit, and at each level below sends to (or,
// reducing, receives from) its k-1 children r + j k^i at once.
#include "kernels.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace roam::coll::detail {

namespace {

int level_of(std::uint64_t d, std::uint64_t k) noexcept {
  int level = 0;
  for (std::uint64_t x = 1; x < d; x *= k) ++level;
  return level;
}

}  // namespace

void knomial_bcast(links& l, std::byte* data, std::size_t bytes, int root, unsigned k) {
  const ranks g{l.size(), root};
  const std::uint64_t p = g.size, r = g.relative(l.rank());
  std::uint64_t d = knomial_distance(r, k, p);
  int level = level_of(d, k);
  if (r != 0) {
    recv_bytes(l, g.absolute(static_cast<int>(r - r % (d * k))), tag_of(phase::main, level), data,
               bytes);
    l.complete();
  }
  // Children at every lower level at once, the largest subtrees first.
  while (d > 1) {
    d /= k;
    --level;
    for (std::uint64_t j = 1; j < k && r + j * d < p; ++j)
      send_bytes(l, g.absolute(static_cast<int>(r + j * d)), tag_of(phase::main, level), data,
                 bytes);
  }
  l.complete();
}

void knomial_scatter(links& l, std::byte* data, const blocks& b, int root, unsigned k) {
  const ranks g{l.size(), root};
  const std::uint64_t p = g.size, r = g.relative(l.rank());
  std::uint64_t d = knomial_distance(r, k, p);
  int level = level_of(d, k);
  auto subtree = [&](std::uint64_t first, std::uint64_t distance) {
    const std::uint64_t last = std::min(first + distance, p);
    return std::pair{b.edge(first), b.edge(last) - b.edge(first)};
  };
  if (r != 0) {
    const auto [at, size] = subtree(r, d);
    recv_bytes(l, g.absolute(static_cast<int>(r - r % (d * k))), tag_of(phase::scatter, level),
               data + at, size);
    l.complete();
  }
  while (d > 1) {
    d /= k;
    --level;
    for (std::uint64_t j = 1; j < k && r + j * d < p; ++j) {
      const auto [at, size] = subtree(r + j * d, d);
      send_bytes(l, g.absolute(static_cast<int>(r + j * d)), tag_of(phase::scatter, level),
                 data + at, size);
    }
  }
  l.complete();
}

void knomial_reduce(links& l, const std::byte* in, std::byte* out, std::size_t count,
                    const reduction& op, int root, unsigned k) {
  // Children hold the ranks after their parent's: combining them in j order keeps rank
  // order when the tree is rooted at rank 0. A non-commutative reduction for another
  // root is therefore made on rank 0 and sent on.
  const int tree_root = op.commutative ? root : 0;
  const ranks g{l.size(), tree_root};
  const std::uint64_t p = g.size, r = g.relative(l.rank());
  const std::size_t bytes = count * op.element_size;
  std::vector<std::byte> acc(in, in + bytes);
  std::vector<std::byte> children;
  int level = 0;
  for (std::uint64_t d = 1; d < p; d *= k, ++level) {
    if (r % (d * k) != 0) {
      send_bytes(l, g.absolute(static_cast<int>(r - r % (d * k))), tag_of(phase::main, level),
                 acc.data(), bytes);
      l.complete();
      break;
    }
    std::uint64_t arrived = 0;
    children.resize((k - 1) * bytes);
    for (std::uint64_t j = 1; j < k && r + j * d < p; ++j, ++arrived)
      recv_bytes(l, g.absolute(static_cast<int>(r + j * d)), tag_of(phase::main, level),
                 children.data() + (j - 1) * bytes, bytes);
    l.complete();
    for (std::uint64_t j = 0; j < arrived; ++j)
      op.combine(op.op, acc.data(), children.data() + j * bytes, count);
  }
  const int rank = l.rank();
  if (tree_root != root) {
    if (rank == tree_root) send_bytes(l, root, tag_of(phase::forward, 0), acc.data(), bytes);
    if (rank == root) recv_bytes(l, tree_root, tag_of(phase::forward, 0), out, bytes);
    l.complete();
  } else if (rank == root && bytes != 0) {
    std::memcpy(out, acc.data(), bytes);
  }
}

void knomial_gather(links& l, const std::byte* in, std::byte* out, const blocks& b, int root,
                    unsigned k) {
  const ranks g{l.size(), root};
  const std::uint64_t p = g.size, r = g.relative(l.rank());
  // This rank's subtree [r, r + d), in relative order; the root's is everything.
  const std::uint64_t d_up = knomial_distance(r, k, p);
  const std::size_t first = b.edge(r);
  std::vector<std::byte> tree(b.edge(std::min(r + d_up, p)) - first);
  const std::size_t own = b.edge(r + 1) - first;
  if (own != 0) std::memcpy(tree.data(), in, own);
  int level = 0;
  for (std::uint64_t d = 1; d < p; d *= k, ++level) {
    if (r % (d * k) != 0) {
      send_bytes(l, g.absolute(static_cast<int>(r - r % (d * k))), tag_of(phase::main, level),
                 tree.data(), tree.size());
      l.complete();
      return;
    }
    for (std::uint64_t j = 1; j < k && r + j * d < p; ++j) {
      const std::uint64_t c = r + j * d;
      recv_bytes(l, g.absolute(static_cast<int>(c)), tag_of(phase::main, level),
                 tree.data() + (b.edge(c) - first), b.edge(std::min(c + d, p)) - b.edge(c));
    }
    l.complete();
  }
  // The root: relative blocks [0, p - root) are ranks root ... p-1, the rest 0 ... root-1.
  const std::size_t upper = b.edge(p - static_cast<std::uint64_t>(root));
  if (upper != 0) std::memcpy(out + (tree.size() - upper), tree.data(), upper);
  if (tree.size() != upper) std::memcpy(out, tree.data() + upper, tree.size() - upper);
}

}  // namespace roam::coll::detail
