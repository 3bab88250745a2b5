// roam — the collectives layer's settings (--roam-coll-tuning, --roam-coll-algorithm).
#pragma once

#include <roam/base/settings.hpp>
#include <roam/coll/algorithm.hpp>

#include <string>
#include <string_view>

namespace roam::coll {

/// Which algorithm the collectives among roam nodes use (docs/guide/collectives.md). Read
/// and change them through roam::config: `cfg.of<roam::coll::coll_settings>()`, or
/// `cfg.set("coll-algorithm", "k_ring:4")`. Every process of a job must set them alike.
struct coll_settings {
  /// The rules file (--roam-coll-tuning, ROAM_COLL_TUNING; the format is the guide's); empty
  /// (the default): rules from the cost model probed at the job's first automatic choice
  /// (or ROAM_COLL_MODEL's). Read once per process, at its first node collective that
  /// chooses: a malformed file makes that call (on every node) throw roam::config_error
  /// naming the file and line.
  std::string tuning_file;
  /// The choice every node collective makes, whatever the rules say, where the algorithm
  /// serves the collective (--roam-coll-algorithm NAME or NAME:K, ROAM_COLL_ALGORITHM);
  /// automatic (the default): the rules'. For benchmarking.
  choice forced{};

  /// The layer's settings in the registry (roam/base/settings.hpp).
  static const roam::detail::settings_group& registration();
};

/// "NAME" or "NAME:K" (NAME as to_string writes it, K a radix the algorithm takes) as a
/// choice; throws roam::config_error naming `origin` otherwise.
choice choice_named(std::string_view text, const std::string& origin);

}  // namespace roam::coll
