// Fuzz target: the comparison of two ranks' fingerprints (the handler table and settings,
// one entry per line). Input: the two texts, separated by the first zero byte. Two texts
// that differ must be told apart by the lines first_difference() names.
#include <roam/transport/detail/backends.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto cut = input.find('\0');
  if (cut == std::string_view::npos) return 0;
  const std::string_view ours = input.substr(0, cut), theirs = input.substr(cut + 1);
  if (ours == theirs) return 0;
  const auto d = roam::detail::first_difference(ours, theirs);
  // The report must name a difference: two different lines (or a line against none), or,
  // the lines being the same, a final line break on one side only.
  const bool breaks_differ =
      (!ours.empty() && ours.back() == '\n') != (!theirs.empty() && theirs.back() == '\n');
  if (d.ours == d.theirs && !(d.final_break_only && breaks_differ)) std::abort();
  return 0;
}
