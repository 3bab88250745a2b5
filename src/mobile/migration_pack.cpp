// The install message of a migrating object: writing its packed messages, and reading and
// checking the whole of it (include/roam/mobile/detail/migration_pack.hpp).
#include <roam/mobile/detail/migration_pack.hpp>

#include <roam/base/error.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <utility>

namespace roam::detail {

void write_packed_message(message_writer& w, message& m) {
  seal(m.header);
  const std::uint64_t size = m.wire_size();
  w.write(&size, sizeof size);
  w.write(m.wire_data(), size);
}

std::uint64_t packed_message_size(const message& m) noexcept {
  return sizeof(std::uint64_t) + m.wire_size();
}

namespace {

/// A packed message, and its object header (checked).
message_ptr read_packed_message(message_reader& r, const object_id& id,
                                const migration_pack_bounds& b, object_message_header& oh) {
  std::uint64_t size = 0;
  r.read(&size, sizeof size);
  if (size < sizeof(message_header) || size > r.remaining())
    throw deserialization_error("a message packed with " + describe_object(id) + " claims " +
                                std::to_string(size) + " bytes, " + std::to_string(r.remaining()) +
                                " remain");
  message_ptr m = message::allocate(size - sizeof(message_header));
  r.read(m->wire_data(), size);
  const message_header& h = m->header;
  if (h.magic != message_magic || h.checksum != header_checksum(h) ||
      h.payload_size != size - sizeof(message_header) || h.handler >= b.handlers)
    throw deserialization_error("a message packed with " + describe_object(id) +
                                " has a corrupt header");
  oh = decode_object_header(std::span<const std::byte>(m->payload(), h.payload_size), b.nodes,
                            b.home_span);
  // Home and index name the object; a message naming another type is the caller's mistake,
  // failed when it runs (as on any node), not a corrupt pack.
  if (oh.target.home != id.home || oh.target.index != id.index)
    throw deserialization_error("a message packed with " + describe_object(id) + " is for " +
                                describe_object(oh.target));
  return m;
}

}  // namespace

migration_pack decode_migration_pack(message_reader& r, std::uint32_t type,
                                     const migration_pack_bounds& b,
                                     object_unpack_function unpack) {
  migration_pack p;
  migration_pack_header& ph = p.header;
  r.read(&ph, sizeof ph);
  if (ph.id.type != type || ph.id.index == 0 || ph.id.home >= b.home_span)
    throw deserialization_error("an install message names object " + std::to_string(ph.id.home) +
                                ":" + std::to_string(ph.id.index) + " of type #" +
                                std::to_string(ph.id.type) + " but carries type #" +
                                std::to_string(type));
  if (ph.reply_to != 0 && ph.reply_node >= b.nodes)
    throw deserialization_error("the install message of " + describe_object(ph.id) +
                                " asks for a reply to node " + std::to_string(ph.reply_node));
  p.object = unpack(r);
  // Each count is bounded by the bytes left before anything is reserved for it.
  constexpr std::size_t order_bytes =
      sizeof(node_id) + sizeof(std::uint32_t) + sizeof(std::uint64_t);
  if (ph.expected_count > r.remaining() / order_bytes)
    throw deserialization_error("the install message of " + describe_object(ph.id) + " announces " +
                                std::to_string(ph.expected_count) + " orderings in " +
                                std::to_string(r.remaining()) + " bytes");
  p.expected.reserve(ph.expected_count);
  for (std::uint32_t i = 0; i < ph.expected_count; ++i) {
    packed_order o;
    r.read(&o.origin, sizeof o.origin);
    r.read(&o.series, sizeof o.series);
    r.read(&o.next, sizeof o.next);
    // Sorted by origin, each once: the order gate's binary search relies on it.
    if (o.origin >= b.nodes || (i > 0 && o.origin <= p.expected.back().origin))
      throw deserialization_error("the ordering state packed with " + describe_object(ph.id) +
                                  " names origin node " + std::to_string(o.origin) +
                                  " out of order or out of range");
    p.expected.push_back(o);
  }
  object_message_header oh;
  for (std::uint32_t i = 0; i < ph.ready_count; ++i)
    p.ready.push_back(read_packed_message(r, ph.id, b, oh));
  std::vector<std::pair<node_id, std::uint64_t>> early_keys;
  for (std::uint32_t i = 0; i < ph.early_count; ++i) {
    p.early.push_back(read_packed_message(r, ph.id, b, oh));
    early_keys.emplace_back(oh.origin, oh.seq);
  }
  r.expect_end();
  std::sort(early_keys.begin(), early_keys.end());
  if (std::adjacent_find(early_keys.begin(), early_keys.end()) != early_keys.end())
    throw deserialization_error("two messages packed with " + describe_object(ph.id) +
                                " have the same sequence number");
  return p;
}

}  // namespace roam::detail
