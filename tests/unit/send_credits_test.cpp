// The credit window between ranks (a private header of src/transport): exact accounting,
// order kept behind a stalled message, every stalled message released once its credit is
// back, and no state left for a pair that has gone quiet.
#include "send_credits.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using roam::detail::message;
using roam::detail::message_ptr;
using roam::detail::send_credits;

message* make(std::size_t payload) {
  message_ptr m = message::allocate(payload);
  m->header.payload_size = payload;
  return m.release();
}
void free_message(message* m) { message_ptr owned(m); }

constexpr std::uint64_t header = sizeof(roam::detail::message_header);

TEST(SendCredits, ALargeMessageCostsHalfAWindowAtMost) {
  send_credits c(1000);
  EXPECT_EQ(c.cost(100), 100u);
  EXPECT_EQ(c.cost(5000), 500u);
}

TEST(SendCredits, MessagesWaitInOrderUntilTheirCreditReturns) {
  send_credits c(4 * (header + 100));
  const std::uint64_t each = c.cost(header + 100);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c.try_take(1, each));
  EXPECT_FALSE(c.try_take(1, each));
  EXPECT_TRUE(c.try_take(2, each)) << "another peer has a window of its own";
  std::vector<message*> waiting;
  for (int i = 0; i < 3; ++i) {
    waiting.push_back(make(100));
    c.stall(1, waiting.back());
  }
  EXPECT_EQ(c.stalled(), 3u);
  EXPECT_EQ(c.take_ready(), nullptr) << "no credit came back yet";
  c.add(1, each);
  EXPECT_FALSE(c.try_take(1, 1)) << "a new message must not overtake the waiting ones";
  EXPECT_EQ(c.take_ready(), waiting[0]);
  EXPECT_EQ(c.take_ready(), nullptr);
  c.add(1, 3 * each);
  EXPECT_EQ(c.take_ready(), waiting[1]);
  EXPECT_EQ(c.take_ready(), waiting[2]);
  EXPECT_EQ(c.take_ready(), nullptr);
  EXPECT_EQ(c.stalled(), 0u);
  for (message* m : waiting) free_message(m);
}

TEST(SendCredits, AGrantBeyondTheCreditInUseIsCapped) {
  send_credits c(1000);
  ASSERT_TRUE(c.try_take(1, 400));
  c.add(1, 5000);  // more than was taken (injected test frames take none)
  ASSERT_TRUE(c.try_take(1, 500));
  ASSERT_TRUE(c.try_take(1, 500));
  EXPECT_FALSE(c.try_take(1, 1)) << "the window never grows past its size";
  c.add(7, 100);  // a peer this rank never sent to: nothing to return
  EXPECT_TRUE(c.try_take(7, 500));
}

TEST(SendCredits, TheReceiverGrantsHalfAWindowAtOnceAndTheRestWhenQuiet) {
  send_credits c(1000);
  std::vector<std::pair<int, std::uint64_t>> grants;
  auto record = [&](int peer, std::uint64_t amount) { grants.emplace_back(peer, amount); };
  c.delivered(3, 200);
  c.delivered(4, 100);
  EXPECT_FALSE(c.grants_due());
  c.delivered(3, 300);
  ASSERT_TRUE(c.grants_due());
  c.grant_due(record);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0], std::make_pair(3, std::uint64_t{500}));
  EXPECT_TRUE(c.owes()) << "peer 4 is still owed 100";
  grants.clear();
  c.grant_all(record);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0], std::make_pair(4, std::uint64_t{100}));
  EXPECT_FALSE(c.owes());
  EXPECT_FALSE(c.grants_due());
}

// A relay keeps the credit of records it relayed until they have left it (routed
// aggregation): withheld bytes are granted by neither rule until released, and a peer
// withheld below half a window is listed as due once, not twice, when it becomes due again
// (a duplicate entry made grant_due look up a peer it had just forgotten).
TEST(SendCredits, WithheldCreditIsGrantedOnlyOnceReleased) {
  send_credits c(1000);
  std::vector<std::pair<int, std::uint64_t>> grants;
  auto record = [&](int peer, std::uint64_t amount) { grants.emplace_back(peer, amount); };
  c.delivered(3, 500);
  ASSERT_TRUE(c.grants_due());
  c.withhold(3, 400);  // 100 still owed, below half a window
  EXPECT_TRUE(c.withholds());
  EXPECT_FALSE(c.grants_due());
  c.delivered(3, 450);  // due again: 550
  ASSERT_TRUE(c.grants_due());
  c.grant_due(record);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0], std::make_pair(3, std::uint64_t{550}));
  grants.clear();
  c.grant_all(record);
  EXPECT_TRUE(grants.empty()) << "withheld credit is not granted when traffic goes quiet";
  c.withhold(3, 10);  // nothing owed: nothing to withhold
  c.release_withheld();
  EXPECT_FALSE(c.withholds());
  c.grant_all(record);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0], std::make_pair(3, std::uint64_t{400}));
  EXPECT_FALSE(c.owes());
}

TEST(SendCredits, SenderAndReceiverAgreeOnEveryByte) {
  // A sender and a receiver run against each other: every message sent is delivered, the
  // receiver grants by its rules, and the sender ends with a whole window and no state.
  send_credits sender(4096), receiver(4096);
  std::vector<message*> in_flight;
  std::vector<message*> sent;
  auto deliver_all = [&] {
    for (message* m : in_flight) receiver.delivered(0, m->wire_size());
    in_flight.clear();
    if (receiver.grants_due()) receiver.grant_due([&](int, std::uint64_t a) { sender.add(1, a); });
  };
  for (int i = 0; i < 500; ++i) {
    message* m = make(static_cast<std::size_t>(i * 37 % 3000));
    sent.push_back(m);
    if (sender.try_take(1, m->wire_size()))
      in_flight.push_back(m);
    else
      sender.stall(1, m);
    if (i % 7 == 0) deliver_all();
    while (message* ready = sender.take_ready()) in_flight.push_back(ready);
  }
  while (sender.stalled() > 0 || !in_flight.empty()) {
    deliver_all();
    receiver.grant_all([&](int, std::uint64_t a) { sender.add(1, a); });
    while (message* ready = sender.take_ready()) in_flight.push_back(ready);
  }
  EXPECT_FALSE(receiver.owes());
  EXPECT_TRUE(sender.try_take(1, 2048)) << "the whole window is back";
  EXPECT_TRUE(sender.try_take(1, 2048));
  EXPECT_FALSE(sender.try_take(1, 1));
  for (message* m : sent) free_message(m);
}

}  // namespace
