// roam — the α-β-γ cost models of the collective algorithms (Wilkins, thesis 4.2), from
// which the default rules come.
#pragma once

#include <roam/coll/algorithm.hpp>
#include <roam/coll/tuning_rules.hpp>

#include <cstdint>

namespace roam::coll {

/// Hockney's model: a message of n bytes costs alpha + n beta; combining n bytes costs
/// n gamma. Messages a rank posts together in one round overlap their latency, not their
/// bytes and not their posting: each send beyond a round's first, and each receive beyond
/// its first, costs overhead (LogP's o). Without that term (thesis 4.2 assumes perfect
/// overlap) the model prefers the largest radix everywhere, which at scale posts
/// thousands of messages at once.
struct cost_model {
  double alpha_us = 2.0;              ///< per message, µs
  double beta_us_per_byte = 1.0e-4;   ///< per byte moved, µs (10 GB/s)
  double gamma_us_per_byte = 2.5e-4;  ///< per byte combined, µs (4 GB/s)
  double overhead_us = 0.5;           ///< per further message a rank posts in a round, µs

  /// The modelled time of `what` with `how` on `ranks` ranks and `bytes` per rank (as
  /// tuning_rules::select counts them); k = 0 is 2. Infinite when `how` has no `what`.
  double time_us(collective what, const choice& how, std::uint64_t ranks,
                 std::uint64_t bytes) const noexcept;
  /// The cheapest algorithm and radix (k from 2 to 8, 16, 32, 64, and `ranks`) for the
  /// call.
  choice best(collective what, std::uint64_t ranks, std::uint64_t bytes) const noexcept;
};

/// Rules from the model: for rank counts and message sizes at each power of two, its best
/// choice, adjacent equal choices merged. Complete (every level ends in "=any").
tuning_rules rules_from(const cost_model& model);

}  // namespace roam::coll
