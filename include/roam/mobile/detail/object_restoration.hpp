// roam — what the checkpoint layer needs of the mobile-object layer: packing the objects a
// node holds at quiescence, and installing them again in a later run, possibly on another
// node count (ADR 50). Not for applications.
#pragma once

#include <roam/mobile/detail/object_runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace roam::detail {

/// Stops load balancers from moving objects off `n` (migrate_resident refuses), and returns
/// once no move that began before is still deciding; `false` allows them again. A
/// checkpoint freezes every node before it waits for quiescence, so that no object is
/// packed twice or missed; a restart freezes them while objects are installed.
void freeze_migrations(node_runtime& n, bool frozen) noexcept;

/// Packs every object resident on `n` and calls `visit(id, bytes)` for each (its identity,
/// type included, and its serialized value), in the directory's order of resident objects,
/// without holding a lock. Call at quiescence with migrations frozen (roam::checkpoint): an
/// object with handlers running or messages waiting is a usage_error (something sent during
/// the checkpoint). Returns how many it packed.
std::uint64_t pack_resident_objects(
    node_runtime& n,
    const std::function<void(const object_id&, std::span<const std::byte>)>& visit);

/// (home, next index) for the objects `n` numbers (its own, and those of the homes it
/// adopted at a restart): what a restart needs so that new objects never reuse an index.
std::vector<std::pair<node_id, std::uint64_t>> object_home_limits(node_runtime& n);
/// The home fields objects of this job may carry (the node count, or more after a restart
/// from a larger job).
node_id object_home_span(node_runtime& n);
/// At a restart, before any object is installed: objects may carry homes below `span`;
/// `n` numbers its own objects from `next_index` on and answers for the homes in
/// `adopted` (home, next index) (directory::adopt_homes).
void adopt_object_homes(node_runtime& n, node_id span, std::uint64_t next_index,
                        std::vector<std::pair<node_id, std::uint64_t>> adopted);

/// Whether `type` names a mobile type of this binary (the registry id of its install
/// handler, as object_id::type holds it).
bool is_mobile_type(std::uint32_t type) noexcept;
/// Rebuilds the object `id` from its packed bytes and makes it resident on `n`, as if it
/// had been created there. Throws deserialization_error if the bytes do not make an object
/// of its type, usage_error if `n` already knows the object; exceptions of the type's own
/// deserialization propagate.
void install_restored_object(node_runtime& n, const object_id& id,
                             std::span<const std::byte> bytes);
/// Tells the homes (home_of) of the objects restored on `n` where they are, in counted
/// messages: once roam::barrier_all_handled() returns, every node finds them.
void announce_restored_objects(node_runtime& n, const std::vector<object_id>& restored);

}  // namespace roam::detail
