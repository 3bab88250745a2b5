// The per-node table behind global_hetero_ptr. It lives in one of the node's keyed slots, so
// each virtual node of an in-process job has its own, and it ends with the node.
#include <roam/base/error.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/hetero_mobile/global_hetero_ptr.hpp>

#include <mutex>
#include <unordered_map>

namespace roam::detail {
namespace {

struct published_entry {
  std::shared_ptr<void> object;
  const std::type_info* element_type;
};

struct published_table {
  std::mutex lock;
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, published_entry> objects;
};

// "HETPUB" in the high bytes: far above the collectives' sequence numbers.
constexpr std::uint64_t table_key = 0x4845'5450'5542'0000ULL;

published_table& table_of_this_node(const char* caller) {
  auto slot = rendezvous_slot(sending_node(caller), table_key, [] {
    return std::shared_ptr<void>(std::make_shared<published_table>());
  });
  // The node keeps the slot until it ends; the reference outlives this call.
  return *static_cast<published_table*>(slot.get());
}

}  // namespace

std::uint64_t publish_object(std::shared_ptr<void> object, const std::type_info& element_type) {
  auto& table = table_of_this_node("roam::publish");
  std::lock_guard guard(table.lock);
  const std::uint64_t id = table.next_id++;
  table.objects.emplace(id, published_entry{std::move(object), &element_type});
  return id;
}

std::shared_ptr<void> find_published(std::uint64_t id, const std::type_info& element_type) {
  auto& table = table_of_this_node("roam::global_hetero_ptr");
  std::lock_guard guard(table.lock);
  auto it = table.objects.find(id);
  if (it == table.objects.end())
    throw usage_error("no hetero object is published as " + std::to_string(id) + " on node " +
                      std::to_string(this_node()) + " (never, or unpublished)");
  if (*it->second.element_type != element_type)
    throw usage_error("hetero object " + std::to_string(id) + " on node " +
                      std::to_string(this_node()) + " holds " + it->second.element_type->name() +
                      ", not " + element_type.name());
  return it->second.object;
}

void unpublish_object(std::uint64_t id) {
  auto& table = table_of_this_node("roam::unpublish");
  std::shared_ptr<void> dropped;  // released outside the lock
  std::lock_guard guard(table.lock);
  auto it = table.objects.find(id);
  if (it == table.objects.end())
    throw usage_error("roam::unpublish: no hetero object is published as " + std::to_string(id) +
                      " on node " + std::to_string(this_node()));
  dropped = std::move(it->second.object);
  table.objects.erase(it);
}

}  // namespace roam::detail
