// Termination detection: waves that sum every node's message counters, on the rank tree
// (rank_tree.hpp). A rank reads the counters of its own nodes from memory and adds the sums
// of its children's subtrees, so a wave is one message down and one up per rank pair, and
// no rank handles more than fan_out + 1 of them, whatever the number of nodes.
#include "node_runtime.hpp"
#include "process_runtime.hpp"
#include "rank_tree.hpp"

#include <roam/core/detail/fiber.hpp>
#include <roam/core/detail/handler_registry.hpp>

#include <algorithm>
#include <chrono>

namespace roam::detail {
namespace {

struct counters {
  std::uint64_t sent = 0, handled = 0;
};

/// The counters of this process's nodes. Each node's `handled` is read before its `sent`:
/// both only grow, and a handler's sends are counted before its completion, so this order
/// never reports more handled than sent for one node.
counters local_counters(process_runtime& p) {
  counters sum;
  for (const auto& node : p.nodes()) {
    sum.handled += node->handled.load();
    sum.sent += node->sent.load();
  }
  return sum;
}

struct wave_request {
  std::uint64_t key;
  node_id initiator;         ///< the root rank's node, where the sum ends
  std::uint32_t unused = 0;  ///< no uninitialized padding on the wire
};
struct wave_report {
  std::uint64_t key;
  counters part;
};

/// A wave on one rank: the counters of its children's subtrees, as they come in.
struct wave_slot {
  std::mutex lock;
  node_id awaited = 0;  ///< children ranks whose report has not come yet
  counters total;
  node_id report_to = 0;  ///< the parent rank's node that holds its slot
  bool root = false;
  ready_flag done;  ///< the root: every child's report is in
};

extern handler_entry wave_request_handler;
extern handler_entry wave_report_handler;

/// The slot of wave `key` on `n`, made if it is not there yet.
std::shared_ptr<wave_slot> wave_slot_of(node_runtime& n, std::uint64_t key) {
  return std::static_pointer_cast<wave_slot>(
      rendezvous_slot(n, key, [] { return std::shared_ptr<void>(std::make_shared<wave_slot>()); }));
}

counters operator+(counters a, counters b) noexcept {
  return {a.sent + b.sent, a.handled + b.handled};
}

void report(node_runtime& n, node_id to, std::uint64_t key, counters part) {
  const wave_report r{key, part};
  post(n, make_system_message(to, wave_report_handler, &r, sizeof r));
}

/// Adds a child's report. The rank's own counters are read when the last one is in (the
/// later they are read, the more of the work in flight before the wave they see finished,
/// and a wave that sees everything finished is the one that ends a detection).
void add_report(node_runtime& n, std::uint64_t key, wave_slot& slot, counters part) {
  counters sum;
  {
    std::lock_guard guard(slot.lock);
    if (slot.awaited == 0)  // a slot made just now by the report itself: nobody awaits it
      throw deserialization_error("a quiescence wave's report (key " + std::to_string(key) +
                                  ") that no wave on node " + std::to_string(id_of(n)) + " awaits");
    slot.total = slot.total + part;
    if (--slot.awaited != 0) return;
    if (slot.root) {
      slot.done.set();
      return;
    }
    sum = slot.total;
  }
  erase_rendezvous_slot(n, key);
  report(n, slot.report_to, key, sum + local_counters(n.process()));
}

/// Passes the wave to the children ranks' first nodes; where there are any, opens the slot
/// that gathers their reports (before the requests leave: a report may come back at once).
std::shared_ptr<wave_slot> pass_on(node_runtime& n, const wave_request& request,
                                   const rank_tree& tree, node_id report_to) {
  process_runtime& p = n.process();
  std::shared_ptr<wave_slot> slot;
  if (tree.children() == 0) return slot;
  slot = wave_slot_of(n, request.key);
  {
    std::lock_guard guard(slot->lock);
    slot->awaited = tree.children();
    slot->report_to = report_to;
    slot->root = tree.is_root();
  }
  tree.for_each_child([&](node_id child) {
    post(n, make_system_message(p.first_node_of(child), wave_request_handler, &request,
                                sizeof request));
  });
  return slot;
}

handler_entry wave_request_handler{
    "roam.core.wave_request", [](node_runtime& n, message_ptr& m) {
      const auto request = read_system_payload<wave_request>(*m);
      process_runtime& p = n.process();
      const rank_tree tree{p.rank(), p.rank_of(request.initiator), p.ranks()};
      const node_id parent =
          tree.parent() == tree.root ? request.initiator : p.first_node_of(tree.parent());
      if (!pass_on(n, request, tree, parent))  // a leaf reports its own counters at once
        report(n, parent, request.key, local_counters(p));
    }};

handler_entry wave_report_handler{"roam.core.wave_report", [](node_runtime& n, message_ptr& m) {
                                    const auto r = read_system_payload<wave_report>(*m);
                                    auto slot = wave_slot_of(n, r.key);
                                    add_report(n, r.key, *slot, r.part);
                                  }};

const bool registered =
    handler_registry::add(&wave_request_handler) && handler_registry::add(&wave_report_handler);

/// One wave from node `n`: the sums of every node's counters, each read at some instant
/// between the call and its return.
counters wave(node_runtime& n) {
  (void)registered;
  process_runtime& p = n.process();
  const rank_tree tree{p.rank(), p.rank(), p.ranks()};
  if (tree.children() == 0) return local_counters(p);  // one process: no messages at all
  // A key unique in the job while the wave runs: the top bit (collectives and events use
  // keys below 2^63), the initiating node, and its process's count of waves.
  static std::atomic<std::uint32_t> waves{0};
  const std::uint64_t key = (1ull << 63) | (std::uint64_t{id_of(n)} << 32) | waves.fetch_add(1);
  auto slot = pass_on(n, wave_request{key, id_of(n), 0}, tree, 0);
  wait(slot->done);
  erase_rendezvous_slot(n, key);
  std::lock_guard guard(slot->lock);
  return slot->total + local_counters(p);
}

}  // namespace

void detect_quiescence(node_runtime& n) {
  if (on_fiber())
    throw usage_error(
        "wait_quiescence called from inside a handler: the calling handler is itself "
        "unfinished work, so quiescence can never be observed; call it from the application "
        "thread");
  flush_thread_lanes();
  counters previous{~0ull, ~0ull};
  // Waves back off while the job is busy. Back to back, they kept the waiting thread in
  // a loop of system messages, slot bookkeeping and clock reads (half the CPU of a
  // one-worker node went there, issue 25). Between waves the thread runs the node's work,
  // or parks. The pause starts short, so a job that is nearly done is seen quickly, and
  // doubles up to a millisecond: a wave costs a rank at most fan_out + 1 messages however
  // large the job, so the cap need not grow with it.
  using clock = std::chrono::steady_clock;
  constexpr auto longest_pause = std::chrono::microseconds(1000);
  auto pause = std::chrono::microseconds(20);
  ready_flag never;  // a pause is a timed wait on nothing
  for (;;) {
    const auto sent_at = clock::now();
    const counters now = wave(n);
    // Counters only grow. Two consecutive waves that read the same totals mean no counter
    // moved between them, so at the instant between the waves all sent messages were handled.
    if (now.sent == now.handled && now.sent == previous.sent && now.handled == previous.handled)
      return;
    // Balanced totals that moved since the last wave: the confirming wave goes at once.
    const bool maybe_done = now.sent == now.handled;
    previous = now;
    if (maybe_done) continue;
    // The pause counts from the wave's start: a wave that waited for busy nodes (their
    // workers all in long handlers) has already spaced the waves out, and pausing a whole
    // pause after it only delayed seeing the end (0.4 % of a 260 ms iteration in
    // lb_synthetic). They stay a quarter pause apart all the same, so that they never run
    // back to back.
    (void)wait_until(never, std::max(sent_at + pause, clock::now() + pause / 4));
    pause = std::min(pause * 2, longest_pause);
  }
}

}  // namespace roam::detail
