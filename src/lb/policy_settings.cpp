#include <roam/lb/policy_settings.hpp>

namespace roam::lb {
namespace {

using setting_values::count;
using setting_values::real;

// The count settings differ only in their field and bounds.
template <std::uint32_t policy_settings::*field, std::uint32_t min, std::uint32_t max>
void store_count(policy_settings& s, std::string_view v, const std::string& o) {
  s.*field = count(v, o, min, max);
}

std::vector<setting<policy_settings>> lb_settings() {
  return {
      {"lb", "ROAM_LB", "name",
       "load balancing: none, work_stealing, diffusion, master_worker, greedy_refine, or a "
       "registered policy (default work_stealing)",
       false,
       [](policy_settings& s, std::string_view v, const std::string& o) {
         if (v.empty()) throw config_error("empty value for " + o + ": expected a policy name");
         s.policy = std::string(v);
       }},
      {"lb-period-us", "ROAM_LB_PERIOD_US", "10..60000000",
       "the balancing period: how often a node runs its policy (sooner when a worker runs out of "
       "work); greedy_refine's round period (default 2000)",
       false, store_count<&policy_settings::period_us, 10, 60000000>},
      {"lb-threshold", "ROAM_LB_THRESHOLD", "0..1e9",
       "load below which a node asks for work (diffusion, master_worker; default 1)", false,
       [](policy_settings& s, std::string_view v, const std::string& o) {
         s.threshold = real(v, o, 0, 1e9);
       }},
      {"lb-neighbors", "ROAM_LB_NEIGHBORS", "1..4096", "diffusion neighbourhood size (default 2)",
       false, store_count<&policy_settings::neighbors, 1, 4096>},
      {"lb-tolerance", "ROAM_LB_TOLERANCE", "0..10",
       "greedy_refine: the makespan above the lower bound it leaves alone, and the least gain "
       "worth moving for; diffusion, master_worker: relative load difference worth a request "
       "(a fraction; default 0.05)",
       false,
       [](policy_settings& s, std::string_view v, const std::string& o) {
         s.tolerance = real(v, o, 0, 10);
       }},
      {"lb-master", "ROAM_LB_MASTER", "0..4095", "master_worker's master node (default 0)", false,
       store_count<&policy_settings::master, 0, 4095>},
  };
}

// Linking the layer registers its settings, so that --roam-help lists them.
[[maybe_unused]] const detail::settings_group& registered = policy_settings::registration();

}  // namespace

const detail::settings_group& policy_settings::registration() {
  static const detail::settings_group& group = register_settings<policy_settings>(
      "load balancing (roam::lb::policy_settings)", 60, lb_settings());
  return group;
}

}  // namespace roam::lb
