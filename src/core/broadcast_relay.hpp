// roam::broadcast's tree: node-then-rank, as the runtime's own protocols travel
// (rank_tree.hpp). The copy for a process goes to its entry node (the calling node in its
// own process, the first node elsewhere), which hands a copy to every other node of its
// process and relays one to each child rank of the tree rooted at the caller's rank. The
// relaying happens as the copy is accepted (on the communication thread for an arrival),
// not when its handler runs, so a busy node does not hold the rest of the tree back.
#pragma once

#include <roam/transport/message.hpp>

namespace roam::detail {

class node_runtime;

/// Relays `m` (flag_broadcast set, `source` the calling node) from `entry`, its process's
/// entry node, and clears the flag so that `m` runs on `entry` as a plain message. Each
/// relayed copy is counted as sent by `entry` before `m` can be counted as handled, so
/// quiescence sees the copies in flight.
void relay_broadcast(node_runtime& entry, message& m) noexcept;

}  // namespace roam::detail
