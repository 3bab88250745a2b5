// roam — the byte message every layer above the transport is built from.
//
// A message is one contiguous block: a fixed 56-byte wire header followed by the payload.
// The same bytes travel between virtual nodes of the in-process transport and between MPI
// ranks, so serialization bugs show up without MPI. Small blocks come from per-thread
// pools, large ones from a size-classed cache (src/transport/message.cpp); both go back there
// after delivery. Large blocks may be page-locked for devices (set_large_block_locking).
#pragma once

#include <roam/transport/node_id.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace roam::detail {

/// Header flags. The numeric values are part of the wire format.
enum message_flags : std::uint32_t {
  /// Runtime-internal traffic (termination waves, collectives): not counted by quiescence.
  flag_system = 1u << 0,
  /// The sender waits for a reply; `reply_to` names the pending call on the source node.
  flag_wants_reply = 1u << 1,
  /// A reply that carries an error description instead of a value.
  flag_error_reply = 1u << 2,
  /// A broadcast copy for its rank's entry node, which relays it further down the tree
  /// rooted at `source` (src/core/broadcast_relay.hpp) before it runs.
  flag_broadcast = 1u << 3,
};

inline constexpr std::uint32_t message_magic = 0x4d414f52;  // "ROAM" little-endian
inline constexpr std::uint32_t all_flags =
    flag_system | flag_wants_reply | flag_error_reply | flag_broadcast;

/// Wire header. Plain data, identical layout on every rank of one binary.
struct message_header {
  std::uint32_t magic = message_magic;
  std::uint32_t checksum = 0;      ///< over every other header field, see seal()/verify()
  std::uint32_t handler = 0;       ///< id in the handler registry
  std::uint32_t flags = 0;         ///< message_flags
  std::uint32_t source = 0;        ///< sending node
  std::uint32_t dest = 0;          ///< receiving node
  std::uint64_t payload_size = 0;  ///< bytes after the header
  std::uint64_t function = 0;      ///< encoded function pointer for pointer handlers, else 0
  std::uint64_t reply_to = 0;      ///< pending-call id on `source` (flag_wants_reply / replies)
  /// The trace's flow from this message's send to its handler (--roam-trace); 0 when the
  /// sender did not trace. A message forwarded at its admission keeps it; a run of its
  /// handler clears it; a copy (message::clone) has none.
  std::uint64_t flow = 0;
};
static_assert(sizeof(message_header) == 56);

/// Checksum of the header fields (not the payload): catches corrupt and misframed headers
/// for the price of a few multiplications.
std::uint32_t header_checksum(const message_header& h) noexcept;
inline void seal(message_header& h) noexcept { h.checksum = header_checksum(h); }

/// A work item is anything a worker can run; messages are the first kind. Intrusive
/// `next` links let queues hold items without allocating.
struct work_item {
  work_item* next = nullptr;
  void (*execute)(work_item*) = nullptr;
};

class message;
struct message_deleter {
  void operator()(message* m) const noexcept;
};
using message_ptr = std::unique_ptr<message, message_deleter>;

/// One contiguous block: [message object][payload bytes]. The header sits right before
/// the payload so `wire_data()` / `wire_size()` describe exactly what goes on the wire.
class message : public work_item {
 public:
  // The payload starts right after the header, whatever the member layout, so header and
  // payload are one contiguous wire image.
  std::byte* payload() noexcept { return wire_data() + sizeof(message_header); }
  const std::byte* payload() const noexcept {
    return reinterpret_cast<const std::byte*>(&header) + sizeof(message_header);
  }
  std::size_t capacity() const noexcept { return capacity_; }
  std::byte* wire_data() noexcept { return reinterpret_cast<std::byte*>(&header); }
  std::size_t wire_size() const noexcept { return sizeof(message_header) + header.payload_size; }

  /// A message whose payload can hold `payload_capacity` bytes (pooled when small).
  static message_ptr allocate(std::size_t payload_capacity);
  /// Grows `m` so its payload can hold `payload_capacity` bytes, keeping header and the
  /// first `keep` payload bytes. May replace the block.
  static void reserve(message_ptr& m, std::size_t payload_capacity, std::size_t keep);
  /// A copy of header and payload, in a block of its own.
  static message_ptr clone(const message& m);

 private:
  friend struct message_deleter;
  friend bool is_locked_block(const message& m) noexcept;
  explicit message(std::uint32_t capacity, bool pooled, bool locked = false) noexcept
      : capacity_(capacity), pooled_(pooled), locked_(locked) {}
  std::uint32_t capacity_;
  bool pooled_;
  bool locked_;  ///< page-locked by the installed block_locking (large cached blocks only)

 public:
  /// How far the node that holds the message got with it, for the layer that handles it (the
  /// mobile layer's gates). Never sent: 0 on every message built or received, and reset by
  /// post() (a message that leaves its node starts over).
  std::uint8_t local_progress = 0;
  /// A bundle of records this process relays for other nodes (routed aggregation): the
  /// transport counts it while it waits to leave (transport::hold_credit_for_relay). Never
  /// sent.
  std::uint8_t relayed = 0;

  message_header header;  // last member: the payload follows it in the same block
};
// Blocks come from operator new (16-byte aligned); with the header ending at a multiple of
// 16 (the fields before it take 24 bytes) the payload is 16-byte aligned too, so bulk data
// can be used in place.
static_assert(sizeof(message) % 16 == 0);

/// The largest payload a block holds (about 4 GiB: a block's capacity is 32 bits).
inline constexpr std::uint64_t max_payload_bytes = std::uint64_t{UINT32_MAX} - sizeof(message);

/// Payload capacity of pooled blocks; larger messages are allocated to size.
inline constexpr std::size_t pooled_payload_capacity = 1024 - 64 - 16;

/// Page-locking of large message blocks, for devices that copy to and from page-locked memory
/// directly and asynchronously (CUDA): a roam::buffer that arrived by MPI can then go to a GPU,
/// and a plane read from one land in a buffer about to be sent, without a staging copy.
/// roam::hetero_mobile installs it; the transport knows nothing of devices.
/// `lock` returns whether it locked the range (it may decline: no device wants it); a locked
/// block is unlocked before its memory is freed. Blocks of at least `locked_block_min_bytes`
/// (payloads over 64 KiB: not the MPI transport's receive frames, nor smaller bundles) that
/// the large-block cache keeps are locked, once each (they are aligned to the page size and a
/// whole number of pages, so no two share a page), when allocated or when reused after a
/// refusal.
struct block_locking {
  bool (*lock)(void* memory, std::size_t bytes) noexcept = nullptr;
  void (*unlock)(void* memory) noexcept = nullptr;
};
inline constexpr std::size_t locked_block_min_bytes = std::size_t{128} << 10;

/// Installs `locking` for the process. The first installation stays: later calls change
/// nothing and return false (blocks locked by one pair of functions are unlocked by the same).
/// Thread-safe.
bool set_large_block_locking(block_locking locking) noexcept;

/// Whether `m` is a page-locked block (for tests and diagnostics).
[[nodiscard]] bool is_locked_block(const message& m) noexcept;

}  // namespace roam::detail
