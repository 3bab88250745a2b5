// roam — declaring a reduction operator commutative, for the collectives.
#pragma once

namespace roam::coll {

/// Marks an operator as commutative (the algorithms may then combine in any order):
/// `roam::coll::commutative{[](int a, int b) { return std::max(a, b); }}`. Without it, an
/// operator other than std::plus, multiplies, bit_and, bit_or or bit_xor on an arithmetic
/// type is combined in rank order: x0 op x1 op ... op xP-1 (it need only be associative).
template <class Op>
struct commutative {
  Op op;  ///< the operator, called as op(a, b)
};
template <class Op>
commutative(Op) -> commutative<Op>;

}  // namespace roam::coll
