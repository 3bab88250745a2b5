// roam — atomic operations on global memory.
//
//   auto old = roam::gas::fetch_add(counter_ptr, 1L).get();
//
// Each operation is atomic with respect to every other roam::gas atomic on the same
// location, whichever node issues it (the owner applies them: directly when it is a node of
// this process, in a handler otherwise). They are not atomic with respect to put(), nor to
// plain stores through roam::gas::local(). T is a 4- or 8-byte integer (compare_exchange,
// exchange, load and store also take any 4- or 8-byte trivially copyable type), aligned to
// its size (allocations are). The future holds the value before the operation, or
// roam::memory_error for a bad pointer. Threading as one_sided.hpp.
#pragma once

#include <roam/gas/detail/operations.hpp>

#include <bit>
#include <cstdint>
#include <type_traits>

namespace roam::gas {

namespace detail {
template <class T>
std::uint64_t bits_of(T value) {
  if constexpr (sizeof(T) == 4)
    return std::bit_cast<std::uint32_t>(value);
  else
    return std::bit_cast<std::uint64_t>(value);
}
template <class T>
T value_of_bits(std::uint64_t bits) {
  if constexpr (sizeof(T) == 4)
    return std::bit_cast<T>(static_cast<std::uint32_t>(bits));
  else
    return std::bit_cast<T>(bits);
}
template <class T>
future<T> atomic(const global_ptr<T>& p, atomic_kind kind, T operand, T desired = T{}) {
  static_assert((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T>,
                "roam::gas atomics work on 4- and 8-byte values");
  constexpr bool is_signed = std::is_signed_v<T>;
  return atomic_bits(ref_of(p), ptr_access::offset(p), kind, sizeof(T), is_signed, bits_of(operand),
                     bits_of(desired))
      .then([](std::uint64_t bits) { return value_of_bits<T>(bits); });
}
template <class T>
void check_integer() {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                "roam::gas: this atomic works on 4- and 8-byte integers");
}
}  // namespace detail

/// Adds `value` (wrapping); returns the previous value.
template <class T>
[[nodiscard]] future<T> fetch_add(const global_ptr<T>& p, T value) {
  detail::check_integer<T>();
  return detail::atomic(p, detail::atomic_kind::fetch_add, value);
}
/// Stores min(current, value); returns the previous value.
template <class T>
[[nodiscard]] future<T> fetch_min(const global_ptr<T>& p, T value) {
  detail::check_integer<T>();
  return detail::atomic(p, detail::atomic_kind::fetch_min, value);
}
/// Stores max(current, value); returns the previous value.
template <class T>
[[nodiscard]] future<T> fetch_max(const global_ptr<T>& p, T value) {
  detail::check_integer<T>();
  return detail::atomic(p, detail::atomic_kind::fetch_max, value);
}
/// Stores `desired` if the value is `expected` (bitwise); returns the value seen, which is
/// `expected` exactly when the exchange happened.
template <class T>
[[nodiscard]] future<T> compare_exchange(const global_ptr<T>& p, T expected, T desired) {
  return detail::atomic(p, detail::atomic_kind::compare_exchange, expected, desired);
}
/// Stores `value`; returns the previous value.
template <class T>
[[nodiscard]] future<T> exchange(const global_ptr<T>& p, T value) {
  return detail::atomic(p, detail::atomic_kind::exchange, value);
}
/// Reads the value atomically.
template <class T>
[[nodiscard]] future<T> atomic_load(const global_ptr<T>& p) {
  return detail::atomic(p, detail::atomic_kind::load, T{});
}
/// Stores the value atomically; the future is ready once it is stored.
template <class T>
[[nodiscard]] future<void> atomic_store(const global_ptr<T>& p, T value) {
  return detail::atomic(p, detail::atomic_kind::store, value).then([](T) {});
}

}  // namespace roam::gas
