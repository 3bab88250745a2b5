// roam — an opt-in for types that travel by memcpy although they have a serialize().
#pragma once

#include <type_traits>

namespace roam::detail {

/// Specialize as std::true_type for a trivially copyable type whose serialize() exists only
/// so that it can sit inside values cereal writes (a std::vector of it, a member of a
/// structure): alone, it is then still copied bitwise (is_bitwise_serializable), which keeps
/// handler arguments of it fixed-size.
template <class T>
struct sends_bitwise : std::false_type {};

}  // namespace roam::detail
