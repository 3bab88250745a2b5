#include "object_mailbox.hpp"

#include "mobile_node.hpp"

#include <algorithm>

namespace roam::detail {

std::uint64_t& object_mailbox::expected_from(node_id origin) {
  auto it = std::lower_bound(expected.begin(), expected.end(), origin,
                             [](const auto& entry, node_id n) { return entry.first < n; });
  if (it == expected.end() || it->first != origin) it = expected.insert(it, {origin, 0});
  return it->second;
}

order_outcome object_mailbox::order_gate(node_id origin, std::uint64_t seq) {
  std::uint64_t& next = expected_from(origin);
  if (seq == next) {
    ++next;
    return order_outcome::in_order;
  }
  if (seq < next) return order_outcome::already_delivered;
  if (early.count({origin, seq})) return order_outcome::duplicate_early;
  return order_outcome::early;
}

bool object_mailbox::can_grant(access mode) const noexcept {
  if (mode == access::exclusive) return idle();
  return !exclusive_running;
}

void object_mailbox::grant(access mode) noexcept {
  if (mode == access::exclusive)
    exclusive_running = true;
  else
    ++shared_running;
}

void object_mailbox::release(access mode) noexcept {
  if (mode == access::exclusive)
    exclusive_running = false;
  else
    --shared_running;
}

access_outcome object_mailbox::access_gate(access mode, bool blocked) noexcept {
  if (!ready.empty() || blocked || !can_grant(mode)) return access_outcome::waits;
  grant(mode);
  return access_outcome::granted;
}

void object_mailbox::admit_successors(node_id origin) {
  std::uint64_t& next = expected_from(origin);
  for (auto it = early.find({origin, next}); it != early.end(); it = early.find({origin, next})) {
    it->second->local_progress = stage_admitted;
    ready.push_back(std::move(it->second));
    early.erase(it);
    ++next;
  }
}

void object_mailbox::dispatch(set_aside_list& granted, bool blocked) {
  while (!ready.empty() && !blocked) {
    set_aside_message& front = ready.front();
    const auto mode = static_cast<access>(read_object_header(*front).access);
    if (!can_grant(mode)) break;
    grant(mode);
    front->local_progress = stage_granted;
    granted.push_back(std::move(front));
    ready.pop_front();
  }
}

}  // namespace roam::detail
