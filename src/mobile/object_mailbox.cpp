#include "object_mailbox.hpp"

#include "mobile_node.hpp"

#include <algorithm>

namespace roam::detail {

namespace {

template <class Table>
auto lower_bound_of(Table& expected, node_id origin) {
  return std::lower_bound(expected.begin(), expected.end(), origin,
                          [](const origin_order& o, node_id n) { return o.origin < n; });
}

}  // namespace

origin_order* object_mailbox::new_series(std::vector<origin_order>::iterator at, node_id origin,
                                         std::uint32_t series) {
  if (at == expected.end() || at->origin != origin)
    return &*expected.insert(at, {origin, series, 0});
  // Series only grow (serial-number order: they may wrap), one at a time per restart.
  if (static_cast<std::int32_t>(series - at->series) < 0) return nullptr;
  // Every message of the old series was delivered before the origin started this one.
  *at = origin_order{origin, series, 0};
  return &*at;
}

const origin_order* object_mailbox::find_order(node_id origin) const noexcept {
  auto it = lower_bound_of(expected, origin);
  return it == expected.end() || it->origin != origin ? nullptr : &*it;
}

void object_mailbox::admit_early(node_id origin) {
  auto it = lower_bound_of(expected, origin);
  if (it == expected.end() || it->origin != origin) return;
  std::uint64_t& next = it->next;
  for (auto e = early.find({origin, next}); e != early.end(); e = early.find({origin, next})) {
    e->second->local_progress = stage_admitted;
    ready.push_back(std::move(e->second));
    early.erase(e);
    ++next;
  }
}

bool object_mailbox::has_early(node_id origin) const {
  auto it = early.lower_bound({origin, 0});
  return it != early.end() && it->first.first == origin;
}

void object_mailbox::start_compaction_round(std::vector<forget_request>& out) {
  for (origin_order& o : expected) {
    if (!o.recent && !o.asked && !has_early(o.origin)) {
      out.push_back({o.origin, o.series, o.next});
      o.asked = true;
    }
    o.recent = false;
  }
}

bool object_mailbox::forget_origin(node_id origin, std::uint32_t series, std::uint64_t delivered) {
  auto it = lower_bound_of(expected, origin);
  // Dropped only if nothing arrived from the origin since the request: a message of a new
  // series restarted the entry (and is still in it), one of the same series moved `next`.
  if (it == expected.end() || it->origin != origin || it->series != series ||
      it->next != delivered || has_early(origin))
    return false;
  expected.erase(it);
  return true;
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
