#include <roam/am/buffer.hpp>
#include <roam/am/serialization.hpp>

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace {

using roam::detail::message;
using roam::detail::message_ptr;
using roam::detail::message_reader;
using roam::detail::message_writer;

struct plain {
  int a;
  double b;
  char c[3];
};

struct tree_node {
  std::string label;
  std::vector<tree_node> children;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(label, children);
  }
  bool operator==(const tree_node&) const = default;
};

template <class T>
T round_trip(const T& value, std::size_t* bytes = nullptr) {
  message_ptr m = message::allocate(0);
  message_writer w(m);
  roam::detail::write_value(w, value);
  w.finish();
  if (bytes) *bytes = m->header.payload_size;
  message_reader r(m->payload(), m->header.payload_size);
  T out{};
  roam::detail::read_value(r, out);
  r.expect_end();
  return out;
}

}  // namespace

TEST(Serialization, TriviallyCopyableTypesGoByMemcpy) {
  static_assert(roam::detail::is_bitwise_serializable<plain>);
  static_assert(roam::detail::is_bitwise_serializable<int>);
  static_assert(!roam::detail::is_bitwise_serializable<std::string>);
  static_assert(!roam::detail::is_serializable<int*>);
  std::size_t bytes = 0;
  plain p = round_trip(plain{7, 2.5, {'x', 'y', 'z'}}, &bytes);
  EXPECT_EQ(bytes, sizeof(plain));
  EXPECT_EQ(p.a, 7);
  EXPECT_EQ(p.b, 2.5);
  EXPECT_EQ(p.c[2], 'z');
}

TEST(Serialization, StandardAndUserTypesRoundTrip) {
  EXPECT_EQ(round_trip(std::string("hello")), "hello");
  EXPECT_EQ(round_trip(std::vector<std::vector<int>>{{1}, {2, 3}, {}}),
            (std::vector<std::vector<int>>{{1}, {2, 3}, {}}));
  std::map<std::string, std::optional<double>> m{{"a", 1.0}, {"b", std::nullopt}};
  EXPECT_EQ(round_trip(m), m);
  auto t = std::make_tuple(1, std::string("two"), 3.0);
  EXPECT_EQ(round_trip(t), t);
  std::variant<int, std::string> v = std::string("alt");
  EXPECT_EQ(round_trip(v), v);
  tree_node tree{"root", {{"a", {}}, {"b", {{"c", {}}}}}};
  EXPECT_EQ(round_trip(tree), tree);
}

TEST(Serialization, LargeValuesGrowTheMessageBlock) {
  std::vector<double> big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i) * 0.25;
  std::size_t bytes = 0;
  EXPECT_EQ(round_trip(big, &bytes), big);
  EXPECT_EQ(bytes, sizeof(std::uint64_t) + big.size() * sizeof(double));
}

TEST(Serialization, TruncatedAndCorruptInputThrows) {
  message_ptr m = message::allocate(0);
  message_writer w(m);
  roam::detail::write_value(w, std::string("a long enough string"));
  w.finish();
  // Truncated: one byte short.
  {
    message_reader r(m->payload(), m->header.payload_size - 1);
    std::string out;
    EXPECT_THROW(roam::detail::read_value(r, out), roam::deserialization_error);
  }
  // Corrupt size tag: far larger than the payload.
  {
    std::uint64_t huge = 1ull << 50;
    std::memcpy(m->payload(), &huge, sizeof huge);
    message_reader r(m->payload(), m->header.payload_size);
    std::string out;
    EXPECT_THROW(roam::detail::read_value(r, out), roam::deserialization_error);
  }
  // Leftover bytes are an error too.
  {
    message_reader r(m->payload(), m->header.payload_size);
    int first = 0;
    roam::detail::read_value(r, first);
    EXPECT_THROW(r.expect_end(), roam::deserialization_error);
  }
}

// Found by fuzz/arguments.cpp: a bool read from any byte but 0 or 1 (std::optional's flag
// through cereal, here 0x60) was undefined behaviour; it is a corrupt payload.
TEST(Serialization, BoolsOtherThanZeroOrOneAreCorrupt) {
  const std::byte bad[] = {std::byte{0x60}, std::byte{0}, std::byte{0}, std::byte{0},
                           std::byte{0},    std::byte{0}, std::byte{0}, std::byte{0}};
  {
    message_reader r(bad, sizeof bad);
    std::optional<int> out;
    EXPECT_THROW(roam::detail::read_value(r, out), roam::deserialization_error);
  }
  {
    message_reader r(bad, 1);
    bool out = false;
    EXPECT_THROW(roam::detail::read_value(r, out), roam::deserialization_error);
  }
  // A size of 1, then the bad byte: the bool itself is read, and refused.
  const std::byte one_bad[] = {std::byte{1}, std::byte{0}, std::byte{0},
                               std::byte{0}, std::byte{0}, std::byte{0},
                               std::byte{0}, std::byte{0}, std::byte{0x60}};
  for (int kind = 0; kind < 2; ++kind) {
    message_reader r(one_bad, kind == 0 ? sizeof one_bad : 1 + 8);
    try {
      if (kind == 0) {
        std::vector<bool> out;  // cereal reads each bool on its own
        roam::detail::read_value(r, out);
      } else {
        std::array<bool, 9> out{};         // cereal reads them as one block (not bitwise: not
        roam::detail::read_value(r, out);  // trivially serializable by roam's rule)
      }
      ADD_FAILURE() << "a bool read from byte 0x60 was accepted (kind " << kind << ")";
    } catch (const roam::deserialization_error& e) {
      EXPECT_NE(std::string(e.what()).find("bool argument holds byte 96"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(round_trip(std::optional<bool>(true)), std::optional<bool>(true));
  EXPECT_EQ(round_trip(false), false);
}

TEST(Serialization, BufferOffsetsAreCheckedAndDataIsAligned) {
  roam::buffer<double> b{1.0, 2.0, 3.0};
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 16, 0u);
  message_ptr m = message::allocate(0);
  message_writer w(m);
  int before = 42;
  roam::detail::write_value(w, before);
  roam::detail::write_value_moved(w, std::move(b));
  w.finish();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m->payload()) % 16, 0u);
  {
    message_ptr owner = std::move(m);
    message_reader r(owner);
    int got = 0;
    roam::buffer<double> out;
    roam::detail::read_value(r, got);
    roam::detail::read_value(r, out);
    r.expect_end();
    EXPECT_EQ(got, 42);
    EXPECT_EQ(owner, nullptr) << "the buffer took the block over";
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[2], 3.0);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(out.data()) % 16, 0u);
  }
  // A tag claiming more elements than the payload holds is rejected.
  message_ptr bad = message::allocate(0);
  message_writer bw(bad);
  std::uint64_t tag[2] = {1000, 64};
  bw.write(tag, sizeof tag);
  bw.finish();
  message_reader r(bad->payload(), bad->header.payload_size);
  roam::buffer<double> out;
  EXPECT_THROW(roam::detail::read_value(r, out), roam::deserialization_error);
}
