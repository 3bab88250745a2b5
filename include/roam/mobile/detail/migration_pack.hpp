// roam — the bytes of a migrating object: the payload of its type's install message. Not
// for applications. ship() (src/mobile/migration.cpp) writes it; decode_migration_pack reads
// and checks it before anything is installed, so that a malformed pack from another
// process is refused whole (fuzzed: fuzz/migration_pack.cpp).
//
// Layout: a migration_pack_header; the object's packed value (its type's serialization);
// `expected_count` orderings (origin u32, series u32, next u64), sorted by origin, each
// origin once; then `ready_count` and `early_count` packed messages, each a u64 size and a
// sealed message (header and payload) to the object.
#pragma once

#include <roam/am/serialization.hpp>
#include <roam/mobile/detail/object_runtime.hpp>
#include <roam/mobile/object_info.hpp>
#include <roam/transport/message.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace roam::detail {

/// The fixed part at the front of an install message.
struct migration_pack_header {
  object_id id;
  std::uint32_t version = 0;     ///< the route version the object has on its new node
  std::uint32_t reply_node = 0;  ///< who waits for the migration (with reply_to != 0)
  std::uint64_t reply_to = 0;
  std::uint32_t expected_count = 0;
  std::uint32_t ready_count = 0;
  std::uint32_t early_count = 0;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(migration_pack_header) == 48);

/// How far one origin's messages to the object had been delivered when it left.
struct packed_order {
  node_id origin = 0;
  std::uint32_t series = 0;
  std::uint64_t next = 0;
};

/// A decoded, checked install message; nothing of it is installed yet.
struct migration_pack {
  migration_pack_header header;
  std::unique_ptr<object_box> object;
  std::vector<packed_order> expected;  ///< sorted by origin, each origin once
  /// Their pending counts came with them (set_aside_message::transfer on the old node).
  std::vector<message_ptr> ready;  ///< admitted messages, in queue order
  std::vector<message_ptr> early;  ///< messages ahead of their turn, no (origin, seq) twice
};

/// What a pack is checked against: the job's node count, the span of its objects' homes,
/// and the number of registered handlers.
struct migration_pack_bounds {
  node_id nodes = 0;
  node_id home_span = 0;
  std::uint32_t handlers = 0;
};

/// Reads the install message of an object of type `type` from `r` (at the payload's start)
/// to its end, unpacking the value with `unpack`. Throws deserialization_error (naming
/// what is wrong) unless every field is in range and consistent: the object's id, the
/// orderings, each packed message's frame, checksum, handler and object header (addressed
/// to this object's home and index; a wrong type is failed when the message runs), and no
/// early message twice. Any thread; allocates the messages.
migration_pack decode_migration_pack(message_reader& r, std::uint32_t type,
                                     const migration_pack_bounds& bounds,
                                     object_unpack_function unpack);

/// Appends `m` (sealed first) to a pack being written, as decode_migration_pack reads it.
void write_packed_message(message_writer& w, message& m);
/// Bytes write_packed_message() takes for `m`.
std::uint64_t packed_message_size(const message& m) noexcept;

}  // namespace roam::detail
