// What the algorithms of the collectives layer share: ranks relative to a root, the
// rounds' tags, transfers that skip empty messages, the pieces of a split buffer.
#pragma once

#include <roam/coll/detail/links.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace roam::coll::detail {

/// Tags: a phase of an algorithm and its round (a level of a tree, a step of recursive
/// multiplying); fewer than 64 rounds in any phase, since k >= 2 and P < 2^32. The rings
/// (k_ring.cpp) have up to P-1 rounds and use round 0 throughout: transfers of one tag
/// match in order (links::send).
enum class phase : int { main = 0, forward = 1, pre = 2, post = 3, scatter = 4, second = 5 };
inline int tag_of(phase p, int round) noexcept { return static_cast<int>(p) * 64 + round; }

/// Ranks renumbered so that `root` is 0.
struct ranks {
  int size, root;
  int relative(int rank) const noexcept { return (rank - root + size) % size; }
  int absolute(int relative) const noexcept { return (relative + root) % size; }
};

/// Transfers of zero bytes are not sent: both sides know the sizes and skip them alike.
inline void send_bytes(links& l, int peer, int tag, const std::byte* data, std::size_t bytes) {
  if (bytes != 0) l.send(peer, tag, data, bytes);
}
inline void recv_bytes(links& l, int peer, int tag, std::byte* data, std::size_t bytes) {
  if (bytes != 0) l.recv(peer, tag, data, bytes);
}

/// Working bytes that are written before they are read, reused while they are large
/// enough. Unlike std::vector<std::byte> they are not zeroed first: for large vectors that
/// pass over the memory cost as much as a combine.
class scratch {
 public:
  std::byte* get(std::size_t bytes) {
    if (bytes > size_) {
      data_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
      size_ = bytes;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_ = 0;
};

/// A buffer of `total` bytes cut into `parts` blocks: fixed blocks of `block` bytes each,
/// (block == 0) `total` split as evenly as bytes allow (a scatter's chunks), or blocks of
/// any sizes starting at `edges` (parts + 1 of them, from 0 up to total: serialized values).
struct blocks {
  std::size_t total = 0;
  std::uint64_t parts = 1;
  std::size_t block = 0;
  const std::size_t* edges = nullptr;
  /// Where block `i` starts (i <= parts; edge(parts) == total for split buffers).
  std::size_t edge(std::uint64_t i) const noexcept {
    if (edges != nullptr) return edges[i];
    if (block != 0) return i * block;
    // total = q * parts + rest, so i * total / parts without overflowing 64 bits.
    const std::uint64_t q = total / parts, rest = total % parts;
    return i * q + (i * rest) / parts;
  }
};

/// The rounds of a k-nomial tree over `size` ranks: distances 1, k, k^2, ... below size.
/// A relative rank r other than 0 receives (or sends, in a reduction) at the distance of
/// its lowest non-zero base-k digit; its subtree holds the ranks [r, r + that distance).
inline std::uint64_t knomial_distance(std::uint64_t r, std::uint64_t k, std::uint64_t size) {
  std::uint64_t d = 1;
  while (d < size && r % (d * k) == 0) d *= k;
  return d;  // >= size for the root
}

/// `p` ranks cut into `q` contiguous ranges as even as counts allow (sizes differ by at
/// most one; q <= p).
struct even_ranges {
  std::uint64_t p, q;
  /// First relative rank of range i (i <= q; first(q) == p).
  std::uint64_t first(std::uint64_t i) const noexcept { return i * p / q; }
  /// Ranks in range i.
  std::uint64_t size_of(std::uint64_t i) const noexcept { return first(i + 1) - first(i); }
  /// The range holding relative rank v: the largest i with first(i) <= v.
  std::uint64_t range_of(std::uint64_t v) const noexcept { return ((v + 1) * q - 1) / p; }
};

/// Recursive multiplying's participants (recursive_multiplying.cpp): the P ranks cut into
/// q = k^m ranges, q the largest power of k not above P; a range's first rank takes part
/// in the main stage for the range.
struct participants : even_ranges {
  explicit participants(std::uint64_t size, std::uint64_t k) : even_ranges{size, 1} {
    while (q * k <= p) q *= k;
  }
};

/// Where the group of participant i at distance d (1, k, k^2, ... below q) starts: its
/// members are start + j d for j < k, and i is member (i / d) mod k.
inline std::uint64_t group_start(std::uint64_t i, std::uint64_t d, std::uint64_t k) noexcept {
  return i / (d * k) * (d * k) + i % d;
}

}  // namespace roam::coll::detail
