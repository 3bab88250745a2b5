// Packing the objects of a quiescent node for a checkpoint, and installing them again at a
// restart, possibly on another node count (ADR 50). The files themselves are the checkpoint
// layer's business; this is the part that touches the directory.
#include "mobile_node.hpp"

#include <roam/core/detail/grace_period.hpp>
#include <roam/mobile/detail/object_restoration.hpp>

#include <roam/base/error.hpp>
#include <roam/core/detail/handler_registry.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace roam::detail {

namespace {

// Mobile types' unpack functions by their install handler's entry: the handler table maps
// a type id to its entry.
struct unpack_registry {
  std::mutex lock;
  std::unordered_map<const handler_entry*, object_unpack_function> by_entry;
};
unpack_registry& unpacks() {
  static unpack_registry r;
  return r;
}

object_unpack_function unpack_function_of(std::uint32_t type) noexcept {
  const handler_entry* entry = handler_registry::find(type);
  if (!entry) return nullptr;
  auto& r = unpacks();
  std::lock_guard guard(r.lock);
  const auto it = r.by_entry.find(entry);
  return it == r.by_entry.end() ? nullptr : it->second;
}

/// One restored object's route, for its home.
struct restored_route {
  object_id id;
  node_id location = 0;
  std::uint32_t reserved = 0;
};

// Restoring node -> home: these objects of yours are installed on me (route version 1, as
// if just created there). Counted, so that a barrier_all_handled() covers them.
handler_entry restored_routes_entry{
    "roam.mobile.restored_routes", [](node_runtime& n, message_ptr& m) {
      const std::size_t bytes = m->header.payload_size;
      if (bytes == 0 || bytes % sizeof(restored_route) != 0)
        throw deserialization_error("a list of restored objects has " + std::to_string(bytes) +
                                    " bytes, not a multiple of " +
                                    std::to_string(sizeof(restored_route)));
      std::vector<restored_route> routes(bytes / sizeof(restored_route));
      std::memcpy(routes.data(), m->payload(), bytes);
      const grace_read_section reading;
      directory& dir = directory_of(n);
      for (const restored_route& r : routes) {
        if (r.id.index == 0 || r.id.home >= dir.home_span() || home_of(n, r.id) != id_of(n) ||
            r.location >= size_of(n))
          throw deserialization_error("a list of restored objects names object " +
                                      std::to_string(r.id.home) + ":" + std::to_string(r.id.index) +
                                      " on node " + std::to_string(r.location) + ", which node " +
                                      std::to_string(id_of(n)) + " is not the home of");
        dir.find_or_insert(r.id).learn_route({1, r.location});
      }
    }};
const bool restored_routes_registered = handler_registry::add(&restored_routes_entry);

}  // namespace

bool register_mobile_unpack(const handler_entry* entry, object_unpack_function unpack) noexcept {
  auto& r = unpacks();
  std::lock_guard guard(r.lock);
  r.by_entry.emplace(entry, unpack);
  return true;
}

bool is_mobile_type(std::uint32_t type) noexcept { return unpack_function_of(type) != nullptr; }

void freeze_migrations(node_runtime& n, bool frozen) noexcept {
  directory& dir = directory_of(n);
  dir.migrations_frozen.store(frozen);
  if (frozen)
    while (dir.moves_starting.load() != 0) std::this_thread::yield();
}

std::uint64_t pack_resident_objects(
    node_runtime& n,
    const std::function<void(const object_id&, std::span<const std::byte>)>& visit) {
  const grace_read_section reading;
  std::vector<object_entry*> entries;
  directory_of(n).copy_residents(entries);
  std::uint64_t count = 0;
  message_ptr m = message::allocate(0);
  for (object_entry* e : entries) {
    object_id id;
    {
      std::lock_guard guard(e->lock);
      object_state& s = e->state();
      if (s.state != residence::resident) continue;
      id = object_id{e->id().home, s.type, e->id().index};
      if (!s.idle() || !s.ready.empty() || !s.early.empty() || s.migration_pending)
        throw usage_error("roam::checkpoint: " + describe_object(id) +
                          " has handlers running or waiting at quiescence; a thread other than "
                          "the application threads sent to it during the checkpoint");
      message_writer w(m);
      s.object->pack(w);
      w.finish();
    }
    visit(id, std::span<const std::byte>(m->payload(), m->header.payload_size));
    ++count;
  }
  return count;
}

std::vector<std::pair<node_id, std::uint64_t>> object_home_limits(node_runtime& n) {
  return directory_of(n).home_limits();
}

node_id object_home_span(node_runtime& n) { return directory_of(n).home_span(); }

void adopt_object_homes(node_runtime& n, node_id span, std::uint64_t next_index,
                        std::vector<std::pair<node_id, std::uint64_t>> adopted) {
  directory_of(n).adopt_homes(span, next_index, std::move(adopted));
}

void install_restored_object(node_runtime& n, const object_id& id,
                             std::span<const std::byte> bytes) {
  const object_unpack_function unpack = unpack_function_of(id.type);
  if (!unpack)
    throw deserialization_error("object " + std::to_string(id.home) + ":" +
                                std::to_string(id.index) + " has type #" + std::to_string(id.type) +
                                ", which is no mobile type");
  message_reader r(bytes.data(), bytes.size());
  std::unique_ptr<object_box> box = unpack(r);
  if (r.remaining() != 0)
    throw deserialization_error(describe_object(id) + ": " + std::to_string(r.remaining()) +
                                " bytes left after its value was read (its type's "
                                "serialization reads less than it wrote)");
  const grace_read_section reading;
  directory& dir = directory_of(n);
  object_entry& e = dir.find_or_insert(id);
  std::lock_guard guard(e.lock);
  object_state& s = e.state();
  if (s.state != residence::absent)
    throw usage_error("roam: " + describe_object(id) + " is restored twice on node " +
                      std::to_string(id_of(n)));
  s.state = residence::resident;
  s.type = id.type;
  s.object = std::move(box);
  e.learn_route({1, id_of(n)});
  dir.add_resident(e);
}

void announce_restored_objects(node_runtime& n, const std::vector<object_id>& restored) {
  (void)restored_routes_registered;
  std::map<node_id, std::vector<restored_route>> by_home;
  for (const object_id& id : restored) {
    const node_id home = home_of(n, id);
    if (home != id_of(n)) by_home[home].push_back({id, id_of(n), 0});
  }
  // 64 KiB of routes per message, like the directory's other lists.
  constexpr std::size_t per_message = 65536 / sizeof(restored_route);
  for (const auto& [home, routes] : by_home)
    for (std::size_t at = 0; at < routes.size(); at += per_message) {
      const std::size_t count = std::min(per_message, routes.size() - at);
      message_ptr m = message::allocate(count * sizeof(restored_route));
      m->header.handler = id_of(restored_routes_entry);
      m->header.dest = home;
      m->header.payload_size = count * sizeof(restored_route);
      std::memcpy(m->payload(), routes.data() + at, count * sizeof(restored_route));
      post(n, std::move(m));
    }
}

}  // namespace roam::detail
