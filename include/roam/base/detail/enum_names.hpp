// roam — the names of an enumeration's values, from a table indexed by value.
#pragma once

#include <cstddef>
#include <type_traits>

namespace roam::detail {

/// `names[value]`, or "?" for a value outside the table (an enumeration whose values are
/// 0, 1, 2, ... in the order of `names`).
template <class Enum, std::size_t N>
constexpr const char* enum_name(Enum value, const char* const (&names)[N]) noexcept {
  const auto index = static_cast<std::size_t>(static_cast<std::underlying_type_t<Enum>>(value));
  return index < N ? names[index] : "?";
}

}  // namespace roam::detail
