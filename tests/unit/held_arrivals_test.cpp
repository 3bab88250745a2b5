// Messages that admission functions send in one process (held_arrivals.hpp): delivered
// after the admission returns, never nested inside it, and in the order they were sent.
//
// Regressions: a message that each node's admission passes on to the next (as a relay
// passes a routed bundle, or a node forwards a message after its moving object) nested
// one admission per hop on the first sender's stack, and a long enough chain overflowed
// it. lb.stress.inproc.greedy_refine at 1024 nodes did so with 64 KiB fiber stacks.
#include <roam/roam.hpp>

#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>
#include "held_arrivals.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace roam::detail;

// Long enough to overflow any stack when each hop nests (several frames a hop), with the
// first message sent from a handler: on a fiber's stack.
constexpr std::uint64_t hops = 100000;

std::atomic<std::uint64_t> hops_passed{0};
std::atomic<int> chain_ends{0};

std::uint64_t payload_value(const message& m) {
  std::uint64_t v = 0;
  std::memcpy(&v, m.payload(), sizeof v);
  return v;
}

message_ptr message_of(const handler_entry& h, roam::node_id dest, std::uint64_t value) {
  message_ptr m = message::allocate(sizeof value);
  m->header.handler = id_of(h);
  m->header.dest = dest;
  m->header.payload_size = sizeof value;
  std::memcpy(m->payload(), &value, sizeof value);
  return m;
}

// The hop's admission passes the message on to the next node until no hops are left; the
// last one runs on a worker.
handler_entry hop_handler{"test.held_arrivals.hop",
                          [](node_runtime&, message_ptr&) { ++chain_ends; }, ~0u,
                          [](node_runtime& n, message_ptr& m) {
                            const std::uint64_t left = payload_value(*m);
                            if (left == 0) return false;
                            ++hops_passed;
                            const std::uint64_t next = left - 1;
                            std::memcpy(m->payload(), &next, sizeof next);
                            m->header.dest = (id_of(n) + 1) % size_of(n);
                            post(n, std::move(m));
                            note_handled(n);  // its arrival here is dealt with
                            return true;
                          }};

// The order of a node's queue: node 1's admission of a `first` message sends `echo` to node 0
// and lets `first` be queued; node 0's admission of `echo` sends `second` back to node 1.
// `second` must be queued at node 1 after `first`: both go from node 0 to node 1, `first`
// handed over before. (Delivering what an admission sent before queuing the message it
// admitted put `second` first.)
std::mutex order_lock;
std::vector<std::uint64_t> order_seen;  // what node 1's worker ran: 1 for first, 2 for second

void record(std::uint64_t what) {
  std::lock_guard guard(order_lock);
  order_seen.push_back(what);
}

handler_entry second_handler{"test.held_arrivals.second",
                             [](node_runtime&, message_ptr&) { record(2); }, ~0u,
                             [](node_runtime&, message_ptr&) { return false; }};
handler_entry echo_handler{"test.held_arrivals.echo", [](node_runtime&, message_ptr&) {}, ~0u,
                           [](node_runtime& n, message_ptr& m) {
                             m.reset();
                             post(n, message_of(second_handler, 1, 0));
                             note_handled(n);
                             return true;
                           }};
handler_entry first_handler{"test.held_arrivals.first",
                            [](node_runtime&, message_ptr&) { record(1); }, ~0u,
                            [](node_runtime& n, message_ptr&) {
                              post(n, message_of(echo_handler, 0, 0));
                              return false;
                            }};

const bool registered =
    handler_registry::add(&hop_handler) && handler_registry::add(&second_handler) &&
    handler_registry::add(&echo_handler) && handler_registry::add(&first_handler);

roam::config four_nodes() {
  roam::config c;
  c.transport = roam::transport_kind::inproc;
  c.nodes = 4;
  c.threads = 1;
  return c;
}

void start_chain() { post(require_node("start_chain"), message_of(hop_handler, 1, hops)); }

TEST(HeldArrivals, AChainOfAdmissionsThatPassAMessageOnStaysOffTheStack) {
  ASSERT_TRUE(registered);
  hops_passed = 0;
  chain_ends = 0;
  ASSERT_EQ(roam::run(four_nodes(),
                      [] {
                        if (roam::this_node() != 0) return;
                        roam::send(0, &start_chain);  // from a handler: a fiber's stack
                        roam::wait_quiescence();
                      }),
            0);
  EXPECT_EQ(hops_passed.load(), hops);
  EXPECT_EQ(chain_ends.load(), 1);
}

void send_first() { post(require_node("send_first"), message_of(first_handler, 1, 0)); }

TEST(HeldArrivals, AMessageAnAdmissionLeadsBackIsQueuedAfterTheAdmittedOne) {
  ASSERT_TRUE(registered);
  constexpr int rounds = 100;
  {
    std::lock_guard guard(order_lock);
    order_seen.clear();
  }
  roam::config c = four_nodes();
  c.lend_app_thread = false;  // node 1's one worker runs its queue in order
  ASSERT_EQ(roam::run(c,
                      [] {
                        if (roam::this_node() != 0) return;
                        for (int round = 0; round < rounds; ++round) {
                          roam::send(0, &send_first);
                          roam::wait_quiescence();
                        }
                      }),
            0);
  std::lock_guard guard(order_lock);
  ASSERT_EQ(order_seen.size(), 2u * rounds);
  for (std::size_t i = 0; i < order_seen.size(); ++i)
    ASSERT_EQ(order_seen[i], i % 2 + 1) << "at position " << i;
}

// ---- the list itself, under concurrent senders ---------------------------------------------

// Senders follow node_runtime::accept_from_this_process: outside an "admission" a message
// goes straight to the node while the list is idle; inside one, or when the list is busy,
// it is held, and a holder that finds nobody delivering the list delivers it (at once, or
// when its admission is over). Every message must be delivered once, each sender's in the
// order it sent them.
TEST(HeldArrivals, ConcurrentSendersLoseNothingAndKeepTheirOrder) {
  constexpr std::uint64_t senders = 4, per_sender = 20000;
  held_arrivals list;
  std::mutex delivered_lock;
  std::vector<std::uint64_t> last(senders, 0);  // each sender's last delivered number + 1
  std::uint64_t delivered = 0, out_of_order = 0;
  auto deliver = [&](message_ptr m) {
    const std::uint64_t v = payload_value(*m);
    std::lock_guard guard(delivered_lock);
    ++delivered;
    const std::uint64_t sender = v >> 32, number = v & 0xffffffffu;
    if (number + 1 <= last[sender]) ++out_of_order;
    last[sender] = number + 1;
  };
  auto sender = [&](std::uint64_t id) {
    std::uint64_t seed = id + 1;
    for (std::uint64_t number = 0; number < per_sender;) {
      // An "admission" sends a few messages; then the ones it answers for are delivered.
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      const bool admitting = (seed >> 60) < 6;
      const std::uint64_t burst = 1 + ((seed >> 40) & 7);
      bool answers = false;
      for (std::uint64_t k = 0; k < burst && number < per_sender; ++k, ++number) {
        message_ptr m = message::allocate(sizeof(std::uint64_t));
        const std::uint64_t v = (id << 32) | number;
        std::memcpy(m->payload(), &v, sizeof v);
        m->header.payload_size = sizeof v;
        if (!admitting && list.idle()) {
          deliver(std::move(m));
          continue;
        }
        if (!list.hold(std::move(m))) continue;
        if (admitting)
          answers = true;
        else if (list.claim())
          list.deliver_all(deliver);
      }
      if (answers && list.claim()) list.deliver_all(deliver);
    }
  };
  std::vector<std::thread> threads;
  for (std::uint64_t id = 0; id < senders; ++id) threads.emplace_back(sender, id);
  for (auto& t : threads) t.join();
  EXPECT_EQ(delivered, senders * per_sender);
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(list.still_held(), 0u);
  EXPECT_TRUE(list.idle());
}

}  // namespace
