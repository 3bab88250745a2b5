// roam::global_ptr: a value type of 16 bytes, null, arithmetic, order and hashing.
#include <roam/am/serialization.hpp>
#include <roam/gas/global_ptr.hpp>

#include <gtest/gtest.h>

#include <map>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace {

using roam::global_ptr;
using access = roam::gas::detail::ptr_access;

static_assert(std::is_trivially_copyable_v<global_ptr<double>>);
static_assert(sizeof(global_ptr<double>) == 16);
// Alone it goes by memcpy (a fixed-size handler argument), although it has a serialize() for
// use inside other values.
static_assert(roam::detail::is_bitwise_serializable<global_ptr<double>>);
// Inside a container or a structure it goes through cereal, which needs that serialize():
// without it, std::vector<global_ptr<T>> does not compile as an argument.
static_assert(cereal::traits::is_output_serializable<global_ptr<double>,
                                                     roam::detail::output_archive>::value);
static_assert(
    cereal::traits::is_input_serializable<global_ptr<double>, roam::detail::input_archive>::value);
static_assert(std::is_convertible_v<global_ptr<int>, global_ptr<const int>>);
static_assert(!std::is_convertible_v<global_ptr<const int>, global_ptr<int>>);

TEST(GlobalPtr, NullIsTheDefault) {
  constexpr global_ptr<int> p;
  static_assert(p.is_null() && !p);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(global_ptr<int>(nullptr), p);
}

TEST(GlobalPtr, ArithmeticMovesByElementsWithinTheAllocation) {
  const auto p = access::make<double>(5, 7, 3, 1024);
  EXPECT_TRUE(p);
  EXPECT_EQ(p.where(), 5u);
  EXPECT_EQ(access::offset(p + 4), 1024u + 32u);
  EXPECT_EQ((p + 4) - p, 4);
  EXPECT_EQ(access::offset((p + 4) - 1), 1024u + 24u);
  auto q = p;
  ++q;
  q++;
  --q;
  EXPECT_EQ(q - p, 1);
  // Arithmetic keeps the node, the slot and the generation.
  EXPECT_EQ(access::slot(p + 100), 7u);
  EXPECT_EQ(access::generation(p + 100), 3u);
  EXPECT_EQ((p + 100).where(), 5u);
  const auto bytes = roam::reinterpret_pointer_cast<std::byte>(p + 1);
  EXPECT_EQ(access::offset(bytes + 3), 1024u + 8u + 3u);
}

TEST(GlobalPtr, PointersOrderAndHash) {
  const auto a = access::make<int>(1, 2, 0, 64), b = access::make<int>(1, 2, 0, 128),
             c = access::make<int>(0, 9, 0, 0);
  EXPECT_LT(a, b);
  EXPECT_LT(c, a);                               // by node first
  EXPECT_NE(a, access::make<int>(1, 2, 1, 64));  // another generation: another allocation
  std::map<global_ptr<int>, int> ordered{{a, 1}, {b, 2}, {c, 3}};
  EXPECT_EQ(ordered.begin()->second, 3);
  std::unordered_set<global_ptr<int>> hashed{a, b, c, a};
  EXPECT_EQ(hashed.size(), 3u);
}

}  // namespace
