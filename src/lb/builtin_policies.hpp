// The policies roam ships (--roam-lb none | work_stealing | diffusion | master_worker |
// greedy_refine).
#pragma once

#include <roam/lb/policy.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace roam::lb::builtin {

using policy_factory = std::function<std::unique_ptr<policy>(const config&)>;
std::vector<std::pair<std::string, policy_factory>> builtin_policies();
/// True for the policies that leave everything to the node's work stealing.
bool is_passive(const policy& p) noexcept;

}  // namespace roam::lb::builtin
