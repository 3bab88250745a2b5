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

void object_mailbox::admit_early(node_id origin) {
  std::uint64_t& next = expected_from(origin);
  for (auto it = early.find({origin, next}); it != early.end(); it = early.find({origin, next})) {
    it->second->local_progress = stage_admitted;
    ready.push_back(std::move(it->second));
    early.erase(it);
    ++next;
  }
}

void object_mailbox::dispatch_waiting(set_aside_list& granted) {
  while (!ready.empty()) {
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
