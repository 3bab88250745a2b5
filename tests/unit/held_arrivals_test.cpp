// Messages that admission functions send in one process (held_arrivals.hpp): delivered
// after the admission returns, never nested inside it, and in the order they were sent.
//
// Regression: a message that each node's admission passes on to the next (as a relay
// passes a routed bundle, or a node forwards a message after its moving object) nested
// one admission per hop on the first sender's stack, and a long enough chain overflowed
// it. lb.stress.inproc.greedy_refine at 1024 nodes did so with 64 KiB fiber stacks.
#include <roam/roam.hpp>

#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
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

// Node 1's admission of a `burst` message sends `count` numbered messages to node 2; node
// 2's admission of those records the order they came in.
std::mutex order_lock;
std::vector<std::uint64_t> order_seen;

handler_entry numbered_handler{"test.held_arrivals.numbered", [](node_runtime&, message_ptr&) {},
                               ~0u,
                               [](node_runtime& n, message_ptr& m) {
                                 {
                                   std::lock_guard guard(order_lock);
                                   order_seen.push_back(payload_value(*m));
                                 }
                                 m.reset();
                                 note_handled(n);
                                 return true;
                               }};

handler_entry burst_handler{"test.held_arrivals.burst", [](node_runtime&, message_ptr&) {}, ~0u,
                            [](node_runtime& n, message_ptr& m) {
                              const std::uint64_t count = payload_value(*m);
                              for (std::uint64_t i = 0; i < count; ++i)
                                post(n, message_of(numbered_handler, 2, i));
                              m.reset();
                              note_handled(n);
                              return true;
                            }};

const bool registered = handler_registry::add(&hop_handler) &&
                        handler_registry::add(&numbered_handler) &&
                        handler_registry::add(&burst_handler);

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

constexpr std::uint64_t burst = 1000;

void send_burst_then_one_more(std::uint64_t count) {
  node_runtime& n = require_node("send_burst_then_one_more");
  post(n, message_of(burst_handler, 1, count));  // node 1 admits it on this thread
  // Sent after the burst, from outside any admission: it must not overtake the burst.
  post(n, message_of(numbered_handler, 2, count));
}

TEST(HeldArrivals, WhatAnAdmissionSendsKeepsItsOrderBeforeLaterSends) {
  ASSERT_TRUE(registered);
  {
    std::lock_guard guard(order_lock);
    order_seen.clear();
  }
  ASSERT_EQ(roam::run(four_nodes(),
                      [] {
                        if (roam::this_node() != 0) return;
                        for (int round = 0; round < 5; ++round) {
                          roam::send(0, &send_burst_then_one_more, burst);
                          roam::wait_quiescence();
                        }
                      }),
            0);
  std::lock_guard guard(order_lock);
  ASSERT_EQ(order_seen.size(), 5 * (burst + 1));
  for (std::size_t i = 0; i < order_seen.size(); ++i)
    ASSERT_EQ(order_seen[i], i % (burst + 1)) << "at position " << i;
}

}  // namespace
