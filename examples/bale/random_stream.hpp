// The bale kernels' inputs: a reproducible stream of random table positions per node.
//
// Every node draws its own stream from (seed, node id), so a serial check can replay any
// node's stream, and the roam and MPI versions of a kernel do exactly the same work.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace bale {

/// splitmix64: fast, and good enough to spread updates evenly over nodes and slots.
class random_stream {
 public:
  random_stream(std::uint64_t seed, std::uint32_t node) noexcept
      : state_(seed * 0x9e3779b97f4a7c15ull ^ (node + 1ull) * 0xd1b54a32d192ed03ull) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

/// A position in a table distributed over `nodes` nodes with `per_node` slots each.
struct position {
  std::uint32_t owner;
  std::uint32_t slot;
};

/// Maps a random word to a position: the high half picks the node (multiply-shift, no
/// division), the low bits the slot. `per_node` must be a power of two.
inline position position_of(std::uint64_t word, std::uint32_t nodes,
                            std::uint64_t per_node) noexcept {
  return {static_cast<std::uint32_t>(((word >> 32) * nodes) >> 32),
          static_cast<std::uint32_t>(word & (per_node - 1))};
}

inline void check_table_size(std::uint64_t per_node) {
  if (per_node == 0 || (per_node & (per_node - 1)) != 0 || per_node > (1ull << 31))
    throw std::invalid_argument("bale: the table size per node must be a power of two up to 2^31");
}

}  // namespace bale
