// Routed aggregation (ADR 43): what a node does with bundles whose records name their
// destinations, and the direct messages that travel among them. The grid is route_grid.hpp;
// the lanes are aggregation_lanes.hpp.
#pragma once

#include <roam/core/detail/handler_registry.hpp>
#include <roam/transport/message.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace roam::detail {

class node_runtime;
enum class lane_order : unsigned;

/// The channel handler of direct messages carried through lanes (carry_through_lanes): on
/// their node, each record becomes the message again and arrives there as if sent directly.
extern handler_entry carried_message_handler;

/// Admission of a bundle (`order` says which lanes it came from) at `here` in a routed job,
/// when its records name their destinations or a node relayed it: relays the records for
/// other nodes through `here`'s relay lanes, queues `here`'s own as one bundle per stream
/// they belong to (each in its stream's order), and delivers a carried message at its end
/// after them. Returns false, leaving `m` alone, for a bundle that runs as it is. Throws
/// deserialization_error for a record that cannot have come this way.
bool admit_routed_bundle(node_runtime& here, message_ptr& m, lane_order order);

/// The largest message (header and payload) a record can carry: its length is 4 bytes.
inline constexpr std::uint64_t largest_carried_message = 0xffffffffu - 64;

/// Bytes of the record that carries `m` (its length, then the message), and the writer of
/// that record: what carried_message() reads back on arrival.
inline std::size_t carried_record_bytes(const message& m) noexcept {
  return sizeof(std::uint32_t) + m.wire_size();
}
void write_carried_record(std::byte* at, const message& m) noexcept;

/// In a routed job: `dest` is outside `from`'s row and column (traffic takes a relay).
bool routed_elsewhere(node_runtime& from, node_id dest) noexcept;

/// Sends `m` (a direct message that carry_through_lanes could not take: the thread has no
/// lanes for `from`, or it admits an arrival) as a carried record through `from`'s relay
/// lanes, at once; routed_elsewhere(from, dest) must hold.
void carry_through_relays(node_runtime& from, message_ptr& m);

/// A channel record of a thread without lanes for a node routed_elsewhere(): `write` puts
/// its `bytes` bytes (length prefix included) in `from`'s relay lane toward it, shipped
/// at once, so it keeps its place among `from`'s direct messages there.
void relay_own_record(node_runtime& from, node_id dest, lane_order order, std::uint32_t handler,
                      std::uint64_t function, std::uint32_t record_kind, std::size_t bytes,
                      const std::function<void(std::byte*)>& write);

/// Whether records `origin` sent may arrive at `here` in a bundle from `source`: sent
/// directly, or relayed by the node on their path.
bool routed_from(node_runtime& here, node_id origin, node_id source) noexcept;

/// Makes `n`'s relay lanes when its job routes.
void make_relay_lanes(node_runtime& n);

}  // namespace roam::detail
