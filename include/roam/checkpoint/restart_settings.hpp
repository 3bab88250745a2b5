// roam — the checkpoint layer's settings (--roam-restart and --roam-restart-placement).
#pragma once

#include <roam/base/settings.hpp>

#include <string>

namespace roam {

/// Whether a run starts from a checkpoint, and where its objects go (docs/guide/checkpoint.md).
/// Read once, when roam::run starts (before the body); changing them later does nothing.
/// Read and change them through roam::config: `cfg.of<roam::restart_settings>().directory`,
/// or `cfg.set("restart", "ckpt")`.
struct restart_settings {
  /// How a restart spreads the checkpoint's objects over the nodes.
  enum class placement {
    /// Each object on the node it was on when the node count is the checkpoint's, else
    /// as `block`.
    automatic,
    /// The objects in checkpoint order (by the node they were on) cut into one run of
    /// equal count per node: the objects of one node of the checkpoint stay together.
    block,
  };
  /// The checkpoint directory the run starts from (--roam-restart); empty: a fresh run.
  std::string directory;
  placement objects = placement::automatic;  ///< --roam-restart-placement auto|block

  /// The layer's settings in the registry (roam/base/settings.hpp).
  static const detail::settings_group& registration();
};

}  // namespace roam
