// roam — how tuning_rules keeps its rules: one level of bounds per feature.
#pragma once

#include <roam/coll/algorithm.hpp>

#include <cstdint>
#include <vector>

namespace roam::coll::detail {

/// A rule's bound: it holds for values up to `up_to` (UINT64_MAX for "=any").
template <class Next>
struct bounded {
  std::uint64_t up_to = 0;
  Next next;
};
using rules_by_bytes = std::vector<bounded<choice>>;
using rules_by_ppn = std::vector<bounded<rules_by_bytes>>;
using rules_by_ranks = std::vector<bounded<rules_by_ppn>>;

}  // namespace roam::coll::detail
