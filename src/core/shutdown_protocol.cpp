#include "shutdown_protocol.hpp"

#include "node_runtime.hpp"
#include "process_runtime.hpp"
#include "rank_tree.hpp"

#include <roam/core/detail/handler_registry.hpp>

namespace roam::detail {
namespace {

handler_entry shutdown_handler{
    "roam.core.shutdown", [](node_runtime& n, message_ptr& m) {
      const auto s = read_system_payload<shutdown_protocol::step>(*m);
      if (s > shutdown_protocol::step::stop)
        throw deserialization_error("unknown shutdown step " +
                                    std::to_string(static_cast<unsigned>(s)));
      n.process().shutdown().arrived(s, n);
    }};

const bool registered = handler_registry::add(&shutdown_handler);

rank_tree tree_of(process_runtime& p) noexcept { return rank_tree{p.rank(), 0, p.ranks()}; }

}  // namespace

void shutdown_protocol::gathered::arrive() noexcept {
  if (missing.fetch_sub(1) == 1) complete.set();
}

shutdown_protocol::shutdown_protocol(process_runtime& process) : process_(process) {
  (void)registered;
  const node_id children = tree_of(process).children();
  finished_.missing.store(static_cast<node_id>(process.nodes().size()) + children);
  quiesced_.missing.store(1 + children);
}

void shutdown_protocol::finish(node_runtime& n) {
  finished_.arrive();
  if (&n == process_.nodes().front().get()) drive(n);
  wait(n.stop);
}

void shutdown_protocol::drive(node_runtime& first) {
  const rank_tree tree = tree_of(process_);
  wait(finished_.complete);
  if (!tree.is_root()) {
    send(first, tree.parent(), step::finished);
    wait(quiesce_ordered_);
  }
  tree.for_each_child([&](node_id child) { send(first, child, step::quiesce); });
  for (auto& node : process_.nodes()) node->quiesce_extensions();
  quiesced_.arrive();
  wait(quiesced_.complete);
  if (!tree.is_root()) {
    send(first, tree.parent(), step::quiesced);
    return;  // the stop comes down the tree
  }
  detect_quiescence(first);
  stop_here(first);
}

void shutdown_protocol::arrived(step s, node_runtime& n) {
  switch (s) {
    case step::finished:
      finished_.arrive();
      break;
    case step::quiesce:
      quiesce_ordered_.set();
      break;
    case step::quiesced:
      quiesced_.arrive();
      break;
    case step::stop:
      stop_here(n);
      break;
  }
}

void shutdown_protocol::send(node_runtime& from, node_id rank, step s) {
  post(from, make_system_message(process_.first_node_of(rank), shutdown_handler, &s, sizeof s));
}

void shutdown_protocol::stop_here(node_runtime& n) {
  tree_of(process_).for_each_child([&](node_id child) { send(n, child, step::stop); });
  for (auto& node : process_.nodes()) node->stop.set();
}

}  // namespace roam::detail
