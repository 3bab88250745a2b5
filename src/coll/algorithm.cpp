// Names of the algorithms.
#include <roam/coll/algorithm.hpp>

#include <array>
#include <utility>

namespace roam::coll {

namespace {

constexpr std::array<std::pair<algorithm, std::string_view>, 6> names{{
    {algorithm::linear, "linear"},
    {algorithm::knomial, "knomial"},
    {algorithm::recursive_multiplying, "recursive_multiplying"},
    {algorithm::reduce_scatter_allgather, "reduce_scatter_allgather"},
    {algorithm::k_ring, "k_ring"},
    {algorithm::automatic, "automatic"},
}};

}  // namespace

std::string_view to_string(algorithm a) noexcept {
  for (const auto& [value, name] : names)
    if (value == a) return name;
  return "unknown";
}

std::optional<algorithm> algorithm_named(std::string_view name) noexcept {
  for (const auto& [value, known] : names)
    if (known == name) return value;
  return std::nullopt;
}

unsigned default_radix(algorithm a) noexcept {
  switch (a) {
    case algorithm::linear:
    case algorithm::automatic:
      return 0;
    case algorithm::k_ring:
      return 1;
    default:
      return 2;
  }
}

unsigned smallest_radix(algorithm a) noexcept { return a == algorithm::k_ring ? 1 : 2; }

std::string describe(const choice& c) {
  std::string text(to_string(c.alg));
  if (c.alg != algorithm::linear && c.alg != algorithm::automatic)
    text += " k=" + std::to_string(c.k == 0 ? default_radix(c.alg) : c.k);
  return text;
}

}  // namespace roam::coll
