// roam — a reduction operator with its element type erased, for the algorithms' byte code.
#pragma once

#include <roam/coll/commutative.hpp>

#include <cstddef>
#include <cstring>
#include <functional>
#include <type_traits>

namespace roam::coll::detail {

struct reduction {
  std::size_t element_size = 0;
  /// acc[i] = acc[i] op next[i] for i < count.
  void (*combine)(const void* op, std::byte* acc, const std::byte* next,
                  std::size_t count) = nullptr;
  const void* op = nullptr;
  bool commutative = false;
};

template <class T, class Op>
constexpr bool known_commutative =
    std::is_arithmetic_v<T> &&
    (std::is_same_v<Op, std::plus<>> || std::is_same_v<Op, std::plus<T>> ||
     std::is_same_v<Op, std::multiplies<>> || std::is_same_v<Op, std::multiplies<T>> ||
     std::is_same_v<Op, std::bit_and<>> || std::is_same_v<Op, std::bit_or<>> ||
     std::is_same_v<Op, std::bit_xor<>> || std::is_same_v<Op, std::bit_and<T>> ||
     std::is_same_v<Op, std::bit_or<T>> || std::is_same_v<Op, std::bit_xor<T>>);

template <class T, class Op>
void combine_elements(const void* op, std::byte* acc, const std::byte* next, std::size_t count) {
  const Op& f = *static_cast<const Op*>(op);
  // Element by element through memcpy: the buffers are bytes, maybe unaligned for T.
  for (std::size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, next + i * sizeof(T), sizeof(T));
    const T c = f(a, b);
    std::memcpy(acc + i * sizeof(T), &c, sizeof(T));
  }
}

/// The reduction of T by `op` (which must outlive it).
template <class T, class Op>
reduction reduction_of(const Op& op) {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::coll: contiguous collectives take trivially copyable element types");
  static_assert(std::is_invocable_r_v<T, const Op&, const T&, const T&>,
                "roam::coll: the operator must take two T and return a T");
  return {sizeof(T), &combine_elements<T, Op>, &op, known_commutative<T, Op>};
}
template <class T, class Op>
reduction reduction_of(const commutative<Op>& op) {
  reduction r = reduction_of<T, Op>(op.op);
  r.commutative = true;
  return r;
}

}  // namespace roam::coll::detail
