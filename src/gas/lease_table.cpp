#include "lease_table.hpp"

#include <mutex>

namespace roam::gas::detail {

std::optional<lease_table::lease> lease_table::find(node_id node, std::uint32_t slot,
                                                    std::uint16_t generation) const {
  const auto found = leases_.find(key(node, slot));
  if (found == leases_.end() || found->second.generation != generation) return std::nullopt;
  return found->second;
}

bool lease_table::begin_request(node_id node, std::uint32_t slot, std::uint16_t generation) {
  std::unique_lock guard(guard_);
  const auto [at, added] = requests_.try_emplace(key(node, slot), request{generation, false});
  if (added) return true;
  if (at->second.generation == generation) return false;
  // A request for an older allocation in this slot is still out: its answer is dropped.
  at->second = request{generation, false};
  return true;
}

void lease_table::granted(node_id node, std::uint32_t slot, const lease& l) {
  std::unique_lock guard(guard_);
  const auto at = requests_.find(key(node, slot));
  if (at == requests_.end() || at->second.generation != l.generation) return;
  const bool cancelled = at->second.cancelled;
  requests_.erase(at);
  if (cancelled) return;
  if (leases_.size() >= capacity_) leases_.clear();
  leases_[key(node, slot)] = l;
}

void lease_table::refused(node_id node, std::uint32_t slot, std::uint16_t generation) {
  std::unique_lock guard(guard_);
  const auto at = requests_.find(key(node, slot));
  if (at != requests_.end() && at->second.generation == generation) requests_.erase(at);
}

void lease_table::recall(node_id node, std::uint32_t slot, std::uint16_t generation) {
  std::unique_lock guard(guard_);  // waits for the copies under the lease
  if (const auto at = leases_.find(key(node, slot));
      at != leases_.end() && at->second.generation == generation)
    leases_.erase(at);
  if (const auto at = requests_.find(key(node, slot));
      at != requests_.end() && at->second.generation == generation)
    at->second.cancelled = true;
}

}  // namespace roam::gas::detail
