// What the collectives' benchmarks (coll.cpp over MPI, coll_nodes.cpp over roam nodes) try:
// every algorithm and radix that serves a collective, and collectives by name.
#pragma once

#include <roam/coll/algorithm.hpp>
#include <roam/coll/tuning_rules.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace roam_bench {

/// Every algorithm roam has that serves `what`, each with every radix the grid tries on `p`
/// ranks: 2 ... 8 and P; k-ring's groups (radix 1 ... 8 and P) start at 1, the ring.
inline std::vector<roam::coll::choice> grid_candidates(roam::coll::collective what, int p) {
  using roam::coll::algorithm;
  std::vector<roam::coll::choice> all;
  const unsigned ranks = static_cast<unsigned>(std::max(p, 1));
  for (int i = 0; i < static_cast<int>(algorithm::automatic); ++i) {
    const auto a = static_cast<algorithm>(i);
    if (!roam::coll::serves(a, what)) continue;
    if (a == algorithm::linear) {
      all.push_back({a, 0});
      continue;
    }
    const unsigned smallest = roam::coll::smallest_radix(a);
    for (unsigned k = smallest; k <= 8 && k < ranks; ++k) all.push_back({a, k});
    all.push_back({a, std::max(ranks, smallest)});
  }
  return all;
}

/// The collective named `name` ("bcast", ...), or nothing.
inline std::optional<roam::coll::collective> collective_named(const std::string& name) {
  using roam::coll::collective;
  for (const collective c : {collective::bcast, collective::reduce, collective::gather,
                             collective::allgather, collective::allreduce})
    if (roam::coll::to_string(c) == name) return c;
  return std::nullopt;
}

}  // namespace roam_bench
