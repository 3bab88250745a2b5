#include <roam/coll/coll_settings.hpp>

#include <charconv>
#include <limits>
#include <vector>

namespace roam::coll {
namespace {

std::vector<setting<coll_settings>> collectives_settings() {
  return {
      {"coll-tuning", "ROAM_COLL_TUNING", "path",
       "the collectives' rules file (docs/guide/collectives.md); default: rules from the cost "
       "model probed at the first collective",
       false,
       [](coll_settings& s, std::string_view v, const std::string&) {
         s.tuning_file = std::string(v);
       }},
      {"coll-algorithm", "ROAM_COLL_ALGORITHM", "NAME[:K]",
       "force one algorithm (and radix) on every node collective it serves, for benchmarking "
       "(default: automatic, the rules' choice)",
       false,
       [](coll_settings& s, std::string_view v, const std::string& o) {
         s.forced = choice_named(v, o);
       }},
  };
}

// Linking the layer registers its settings, so that --roam-help lists them.
[[maybe_unused]] const roam::detail::settings_group& registered = coll_settings::registration();

}  // namespace

const roam::detail::settings_group& coll_settings::registration() {
  static const roam::detail::settings_group& group = register_settings<coll_settings>(
      "collectives (roam::coll::coll_settings)", 40, collectives_settings());
  return group;
}

choice choice_named(std::string_view text, const std::string& origin) {
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const auto a = algorithm_named(name);
  if (!a)
    throw config_error(origin + ": unknown algorithm '" + std::string(name) +
                       "' (linear, knomial, recursive_multiplying, reduce_scatter_allgather, "
                       "k_ring or automatic, optionally with :K)");
  choice c{*a, 0};
  if (colon == std::string_view::npos) return c;
  const std::string_view digits = text.substr(colon + 1);
  unsigned k = 0;
  const auto [end, problem] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
  if (digits.empty() || problem != std::errc{} || end != digits.data() + digits.size())
    throw config_error(origin + ": '" + std::string(digits) + "' in '" + std::string(text) +
                       "' is not a radix (a whole number)");
  if (default_radix(*a) == 0)
    throw config_error(origin + ": the " + std::string(name) + " algorithm takes no radix");
  if (k < smallest_radix(*a))
    throw config_error(origin + ": the " + std::string(name) +
                       " algorithm's radix must be at least " + std::to_string(smallest_radix(*a)) +
                       ", not " + std::string(digits));
  c.k = k;
  return c;
}

}  // namespace roam::coll
