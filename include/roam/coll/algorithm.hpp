// roam — the collective algorithms and how a call names the one it wants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace roam::coll {

/// The algorithms of the generalized collectives (Wilkins, thesis ch. 4). Each has a radix
/// k; which collectives each serves is in docs/guide/collectives.md.
enum class algorithm : std::uint8_t {
  /// Every rank talks to the root (or to every other rank): one round, P-1 messages at
  /// the busiest rank. For tiny P x n.
  linear,
  /// A k-nomial tree (k = 2: binomial): log_k P rounds of k-1 messages at once.
  knomial,
  /// Recursive multiplying (k = 2: recursive doubling): log_k P rounds in which each rank
  /// exchanges with k-1 others. Broadcast is a k-nomial scatter and this allgather.
  recursive_multiplying,
  /// Allreduce only: a reduce-scatter then an allgather, both by recursive multiplying
  /// (k = 2: Rabenseifner's). Each round moves (k-1)/k of a shrinking segment, not the
  /// whole vector: for large vectors.
  reduce_scatter_allgather,
  /// K-ring (k = 1: the ring): groups of k consecutive ranks pass blocks around a small
  /// ring, and each group hands them to the next in one round; P-1 rounds of one block.
  /// The radix is the groups' size (best: the processes per node), k >= 1. Allgather,
  /// allreduce (reduce-scatter + allgather, commutative operators only) and bcast
  /// (scatter + allgather). For large messages.
  k_ring,
  /// The rules' choice for the call (roam::coll::tuning_rules): the file named by
  /// ROAM_COLL_TUNING, or rules from the cost model (cost_model.hpp).
  automatic,
};

/// An algorithm and its radix. k = 0 takes the algorithm's default (default_radix).
struct choice {
  algorithm alg = algorithm::automatic;  ///< the algorithm
  unsigned k = 0;  ///< its radix (0: the default); above the rank count: the count
};

/// The radix k = 0 stands for: 1 for k_ring (the classic ring), 2 for the others (the
/// binomial tree, recursive doubling); 0 for linear and automatic, which have none.
unsigned default_radix(algorithm a) noexcept;
/// The smallest radix `a` takes: 1 for k_ring, 2 for the others.
unsigned smallest_radix(algorithm a) noexcept;

/// "linear", "knomial", "recursive_multiplying", "reduce_scatter_allgather", "k_ring",
/// "automatic".
std::string_view to_string(algorithm a) noexcept;
/// The algorithm named `name` (as to_string writes it), or nothing.
std::optional<algorithm> algorithm_named(std::string_view name) noexcept;
/// "knomial k=4": how errors and benchmarks name a choice.
std::string describe(const choice& c);

}  // namespace roam::coll
