#include "broadcast_relay.hpp"

#include "node_runtime.hpp"
#include "process_runtime.hpp"
#include "rank_tree.hpp"

namespace roam::detail {

void relay_broadcast(node_runtime& entry, message& m) noexcept {
  m.header.flags &= ~flag_broadcast;
  process_runtime& p = entry.process();
  const node_id origin = m.header.source;
  auto hand_on = [&](node_id dest, std::uint32_t relay_flag) {
    message_ptr copy = message::clone(m);
    copy->header.dest = dest;
    copy->header.flags |= relay_flag;
    // Counted here, before `m` runs: the copies are in flight until their nodes handle them.
    entry.sent.fetch_add(1);
    p.net().send(std::move(copy));  // keeps `source`: the children's tree is the caller's
  };
  const rank_tree ranks{p.rank(), p.rank_of(origin), p.ranks()};
  ranks.for_each_child([&](node_id child) { hand_on(p.first_node_of(child), flag_broadcast); });
  for (const auto& node : p.nodes())
    if (node.get() != &entry) hand_on(node->id(), 0);
}

}  // namespace roam::detail
