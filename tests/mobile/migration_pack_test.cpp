// The install message of a migrating object (decode_migration_pack): what it accepts, and
// each refusal, named, before anything is installed.
#include <roam/am/serialization.hpp>
#include <roam/base/error.hpp>
#include <roam/mobile/detail/migration_pack.hpp>

#include <gtest/gtest.h>
#include <cereal/types/vector.hpp>

#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace roam::detail;
using value = std::vector<std::uint32_t>;
constexpr std::uint32_t type = 9;
const roam::object_id id{2, type, 41};
const migration_pack_bounds bounds{4, 6, 8};

std::unique_ptr<object_box> unpack(message_reader& r) {
  auto box = std::make_unique<object_box_of<value>>();
  read_value(r, *static_cast<value*>(box->get()));
  return box;
}

struct packed_message {
  std::uint32_t origin = 0;
  std::uint64_t seq = 0;
  roam::object_id target = id;
  std::uint32_t handler = 1;
};

// A pack as ship() writes it; `change` edits the header before it is written.
struct pack_spec {
  std::vector<packed_order> expected;
  std::vector<packed_message> ready, early;
  std::function<void(migration_pack_header&)> change;
  std::size_t trailing = 0;
};

message_ptr pack_of(const pack_spec& spec) {
  message_ptr out = message::allocate(0);
  message_writer w(out);
  migration_pack_header ph;
  ph.id = id;
  ph.version = 3;
  w.write(&ph, sizeof ph);
  write_value(w, value{1, 2, 3});
  for (const packed_order& o : spec.expected) {
    w.write(&o.origin, sizeof o.origin);
    w.write(&o.series, sizeof o.series);
    w.write(&o.next, sizeof o.next);
  }
  auto write = [&](const packed_message& p) {
    message_ptr m = message::allocate(sizeof(object_message_header) + 2);
    object_message_header oh;
    oh.target = p.target;
    oh.origin = p.origin;
    oh.seq = p.seq;
    m->header.handler = p.handler;
    m->header.payload_size = sizeof oh + 2;
    std::memcpy(m->payload(), &oh, sizeof oh);
    write_packed_message(w, *m);
  };
  for (const packed_message& p : spec.ready) write(p);
  for (const packed_message& p : spec.early) write(p);
  const std::vector<std::byte> extra(spec.trailing, std::byte{7});
  if (!extra.empty()) w.write(extra.data(), extra.size());
  w.finish();
  ph.expected_count = static_cast<std::uint32_t>(spec.expected.size());
  ph.ready_count = static_cast<std::uint32_t>(spec.ready.size());
  ph.early_count = static_cast<std::uint32_t>(spec.early.size());
  if (spec.change) spec.change(ph);
  std::memcpy(out->payload(), &ph, sizeof ph);
  return out;
}

migration_pack decode(message_ptr& m) {
  message_reader r(m);
  return decode_migration_pack(r, type, bounds, &unpack);
}

// The refusal's text, or "" when the pack decodes.
std::string refusal(const pack_spec& spec) {
  message_ptr m = pack_of(spec);
  try {
    (void)decode(m);
    return "";
  } catch (const roam::deserialization_error& e) {
    return e.what();
  }
}

pack_spec with_header(std::function<void(migration_pack_header&)> change) {
  pack_spec s;
  s.change = std::move(change);
  return s;
}
pack_spec with_orders(std::vector<packed_order> expected) {
  pack_spec s;
  s.expected = std::move(expected);
  return s;
}
pack_spec with_messages(std::vector<packed_message> ready, std::vector<packed_message> early) {
  pack_spec s;
  s.ready = std::move(ready);
  s.early = std::move(early);
  return s;
}
packed_message from(std::uint32_t origin, std::uint64_t seq) {
  packed_message p;
  p.origin = origin;
  p.seq = seq;
  return p;
}

TEST(MigrationPack, AWholePackDecodes) {
  pack_spec s = with_messages({from(0, 4)}, {from(3, 9), from(3, 11)});
  s.expected = {{0, 0, 4}, {3, 1, 7}};
  message_ptr m = pack_of(s);
  const migration_pack p = decode(m);
  EXPECT_EQ(p.header.id, id);
  EXPECT_EQ(p.header.version, 3u);
  EXPECT_EQ(*static_cast<value*>(p.object->get()), (value{1, 2, 3}));
  ASSERT_EQ(p.expected.size(), 2u);
  EXPECT_EQ(p.expected[1].origin, 3u);
  EXPECT_EQ(p.expected[1].next, 7u);
  ASSERT_EQ(p.ready.size(), 1u);
  ASSERT_EQ(p.early.size(), 2u);
  const message& last = *p.early[1];
  EXPECT_EQ(decode_object_header(std::span(last.payload(), last.header.payload_size), bounds.nodes,
                                 bounds.home_span)
                .seq,
            11u);
}

TEST(MigrationPack, AnotherTypeOrAnUnknownHomeIsRefused) {
  EXPECT_NE(
      refusal(with_header([](migration_pack_header& h) { h.id.type = 3; })).find("carries type #9"),
      std::string::npos);
  EXPECT_NE(refusal(with_header([](migration_pack_header& h) { h.id.home = 6; })), "");
  EXPECT_NE(refusal(with_header([](migration_pack_header& h) { h.id.index = 0; })), "");
}

TEST(MigrationPack, AReplyToAMissingNodeIsRefused) {
  EXPECT_NE(refusal(with_header([](migration_pack_header& h) {
              h.reply_to = 5;
              h.reply_node = 4;
            })).find("reply to node 4"),
            std::string::npos);
}

TEST(MigrationPack, OrderingsOutOfOrderOrRangeAreRefused) {
  EXPECT_NE(refusal(with_orders({{3, 0, 1}, {1, 0, 1}})).find("out of order or out of range"),
            std::string::npos);
  EXPECT_NE(refusal(with_orders({{2, 0, 1}, {2, 0, 1}})), "");
  EXPECT_NE(refusal(with_orders({{4, 0, 1}})), "");
}

TEST(MigrationPack, MoreOrderingsThanBytesAreRefusedBeforeAnyIsRead) {
  EXPECT_NE(refusal(with_header([](migration_pack_header& h) {
              h.expected_count = ~0u;
            })).find("announces 4294967295 orderings"),
            std::string::npos);
}

TEST(MigrationPack, APackedMessageForAnotherObjectIsRefused) {
  packed_message stray = from(0, 0);
  stray.target = roam::object_id{2, type, 40};
  EXPECT_NE(refusal(with_messages({stray}, {})).find("is for mobile object 2:40"),
            std::string::npos);
}

// A call naming the object with the wrong type is failed when it runs (the caller gets an
// object_error), as on any node: it must not make the pack malformed.
TEST(MigrationPack, APackedMessageNamingAnotherTypeTravelsOn) {
  packed_message wrong_type = from(0, 0);
  wrong_type.target = roam::object_id{2, type + 1, 41};
  EXPECT_EQ(refusal(with_messages({wrong_type}, {})), "");
}

TEST(MigrationPack, APackedMessageOfAnUnknownHandlerIsRefused) {
  packed_message unknown = from(0, 0);
  unknown.handler = 8;
  EXPECT_NE(refusal(with_messages({unknown}, {})).find("corrupt header"), std::string::npos);
}

TEST(MigrationPack, APackedMessageFromAMissingNodeIsRefused) {
  EXPECT_NE(refusal(with_messages({}, {from(4, 0)})), "");
}

TEST(MigrationPack, TwoEarlyMessagesWithOneNumberAreRefused) {
  EXPECT_NE(refusal(with_messages({}, {from(1, 5), from(1, 5)})).find("the same sequence number"),
            std::string::npos);
}

TEST(MigrationPack, MissingOrTrailingBytesAreRefused) {
  EXPECT_NE(refusal(with_header([](migration_pack_header& h) { h.ready_count = 1; })), "");
  pack_spec trailing;
  trailing.trailing = 3;
  EXPECT_NE(refusal(trailing).find("unread bytes"), std::string::npos);
}

}  // namespace
