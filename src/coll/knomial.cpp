// k-nomial trees (Wilkins, thesis 4.3): relative rank r receives from r - (r mod k^(i+1))
// at the level of its lowest non-zero base-k digit, and at each level below sends to (or,
// reducing, receives from) its k-1 children r + j k^i at once.
#include "kernels.hpp"

#include <algorithm>
#include <cstring>

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
  const int rank = l.rank();
  // The partial result, made at the first children's arrival: the root accumulates
  // straight into `out` when the result stays there, other ranks into scratch (`in` is
  // read-only). A leaf sends `in` as it is.
  scratch own, children;
  std::byte* acc = nullptr;
  auto accumulator = [&] {
    if (acc == nullptr) {
      acc = rank == root && tree_root == root ? out : own.get(bytes);
      if (bytes != 0 && acc != in) std::memmove(acc, in, bytes);
    }
    return acc;
  };
  auto partial = [&]() -> const std::byte* { return acc != nullptr ? acc : in; };
  int level = 0;
  for (std::uint64_t d = 1; d < p; d *= k, ++level) {
    if (r % (d * k) != 0) {
      send_bytes(l, g.absolute(static_cast<int>(r - r % (d * k))), tag_of(phase::main, level),
                 partial(), bytes);
      l.complete();
      break;
    }
    std::uint64_t arrived = 0;
    std::byte* incoming = children.get((k - 1) * bytes);
    for (std::uint64_t j = 1; j < k && r + j * d < p; ++j, ++arrived)
      recv_bytes(l, g.absolute(static_cast<int>(r + j * d)), tag_of(phase::main, level),
                 incoming + (j - 1) * bytes, bytes);
    l.complete();
    // Children hold higher ranks than this subtree's: combining in j order keeps rank order.
    for (std::uint64_t j = 0; j < arrived; ++j)
      op.combine(op.op, accumulator(), incoming + j * bytes, count);
  }
  if (tree_root != root) {
    if (rank == tree_root) send_bytes(l, root, tag_of(phase::forward, 0), partial(), bytes);
    if (rank == root) recv_bytes(l, tree_root, tag_of(phase::forward, 0), out, bytes);
    l.complete();
  } else if (rank == root && acc == nullptr && bytes != 0 && in != out) {
    std::memmove(out, in, bytes);  // a single rank: no child arrived
  }
}

void knomial_gather(links& l, const std::byte* in, std::byte* out, const blocks& b, int root,
                    unsigned k) {
  const ranks g{l.size(), root};
  const std::uint64_t p = g.size, r = g.relative(l.rank());
  // This rank's subtree [r, r + d), in relative order; the root's is everything.
  const std::uint64_t d_up = knomial_distance(r, k, p);
  const std::size_t first = b.edge(r);
  const std::size_t tree_bytes = b.edge(std::min(r + d_up, p)) - first;
  // Rooted at rank 0, relative and absolute order agree: the root gathers straight into
  // `out`. Elsewhere the subtree's blocks wait in scratch.
  const bool into_out = r == 0 && root == 0;
  scratch tree_buffer;
  std::byte* const tree = into_out ? out : tree_buffer.get(tree_bytes);
  const std::size_t own = b.edge(r + 1) - first;
  if (own != 0 && tree != in) std::memmove(tree, in, own);
  int level = 0;
  for (std::uint64_t d = 1; d < p; d *= k, ++level) {
    if (r % (d * k) != 0) {
      send_bytes(l, g.absolute(static_cast<int>(r - r % (d * k))), tag_of(phase::main, level), tree,
                 tree_bytes);
      l.complete();
      return;
    }
    for (std::uint64_t j = 1; j < k && r + j * d < p; ++j) {
      const std::uint64_t c = r + j * d;
      recv_bytes(l, g.absolute(static_cast<int>(c)), tag_of(phase::main, level),
                 tree + (b.edge(c) - first), b.edge(std::min(c + d, p)) - b.edge(c));
    }
    l.complete();
  }
  if (into_out) return;
  // The root: relative blocks [0, p - root) are ranks root ... p-1, the rest 0 ... root-1.
  const std::size_t upper = b.edge(p - static_cast<std::uint64_t>(root));
  if (upper != 0) std::memcpy(out + (tree_bytes - upper), tree, upper);
  if (tree_bytes != upper) std::memcpy(out, tree + upper, tree_bytes - upper);
}

}  // namespace roam::coll::detail
