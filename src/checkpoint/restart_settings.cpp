#include <roam/checkpoint/restart_settings.hpp>

namespace roam {
namespace {

std::vector<setting<restart_settings>> restarting_settings() {
  return {
      {"restart", "ROAM_RESTART", "directory",
       "start the run from the checkpoint in this directory (roam::checkpoint; default: a "
       "fresh run)",
       false,
       [](restart_settings& s, std::string_view v, const std::string&) {
         s.directory = std::string(v);
       }},
      {"restart-placement", "ROAM_RESTART_PLACEMENT", "auto|block",
       "where a restart puts the checkpoint's objects: auto (their nodes when the node count "
       "is the checkpoint's, else block) or block (equal runs of objects per node; default "
       "auto)",
       false,
       [](restart_settings& s, std::string_view v, const std::string& o) {
         s.objects = setting_values::choice(v, o, {"auto", "block"}) == 0
                         ? restart_settings::placement::automatic
                         : restart_settings::placement::block;
       }},
  };
}

// Linking the layer registers its settings, so that --roam-help lists them.
[[maybe_unused]] const detail::settings_group& registered = restart_settings::registration();

}  // namespace

const detail::settings_group& restart_settings::registration() {
  static const detail::settings_group& group = register_settings<restart_settings>(
      "checkpoint and restart (roam::restart_settings)", 95, restarting_settings());
  return group;
}

}  // namespace roam
