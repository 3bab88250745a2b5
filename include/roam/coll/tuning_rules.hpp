// roam — which algorithm and radix a collective call uses: rules read from a file in the
// shape of MPICH's collective-selection JSON (docs/guide/collectives.md#the-rules-file).
#pragma once

#include <roam/coll/algorithm.hpp>
#include <roam/coll/detail/rule_levels.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roam::coll {

struct cost_model;
class tuning_rules;
/// Defined in cost_model.hpp.
tuning_rules rules_from(const cost_model& model);

/// The collectives that rules choose for.
enum class collective : std::uint8_t { bcast, reduce, gather, allgather, allreduce };
/// "bcast", "reduce", ...
std::string_view to_string(collective c) noexcept;
/// Whether algorithm `a` implements collective `c` (docs/guide/collectives.md#the-algorithms);
/// automatic implements none (it is what the rules choose).
bool serves(algorithm a, collective c) noexcept;

/// A complete set of rules: for every collective, communicator size, processes per node
/// and message size, one algorithm with its radix. Immutable once read; any thread.
class tuning_rules {
 public:
  /// Reads rules from `text`; `source` names it in errors ("rules.json"). Throws
  /// roam::config_error "SOURCE:LINE: what is wrong" unless the text is well formed and
  /// complete (every collective present, every level ending in a "=any" rule) and every
  /// algorithm serves its collective. A pure function of the text (fuzzed:
  /// fuzz/tuning_rules.cpp).
  static tuning_rules parse(std::string_view text, std::string_view source);
  /// Reads the file at `path` (errors name it).
  static tuning_rules load(const std::string& path);

  /// The choice for a call of `what` on `ranks` ranks with `ppn` processes per node and
  /// `bytes` bytes per rank (the vector of a bcast or reduction, one rank's block of a
  /// gather): the first rule of each level whose bound holds.
  choice select(collective what, std::uint64_t ranks, std::uint64_t ppn,
                std::uint64_t bytes) const noexcept;

 private:
  tuning_rules() = default;  // only parse() and rules_from() make them: always complete
  friend tuning_rules rules_from(const cost_model& model);
  std::array<detail::rules_by_ranks, 5> rules_;  // by collective
};

}  // namespace roam::coll
