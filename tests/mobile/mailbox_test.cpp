// White-box tests of the per-object mailbox's gates (src/mobile/object_mailbox.hpp) and of the
// location gate: each decision, without a running node.
#include "mobile_node.hpp"
#include "object_mailbox.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace {

using namespace roam::detail;
using roam::access;

// A message to an object, with the object header the gates read.
set_aside_message object_message(access mode, roam::node_id origin, std::uint64_t seq) {
  message_ptr m = message::allocate(sizeof(object_message_header));
  object_message_header oh;
  oh.target = roam::object_id{0, 1, 1};
  oh.access = static_cast<std::uint8_t>(mode);
  oh.origin = origin;
  oh.seq = seq;
  std::memcpy(m->payload(), &oh, sizeof oh);
  m->header.payload_size = sizeof oh;
  return set_aside_message::adopt(std::move(m));  // no node: its count is the test's
}

std::uint64_t seq_of(const set_aside_message& m) { return read_object_header(*m).seq; }

// Drops tokens the way a node would deal with them, so none is lost.
void drop(set_aside_list& list) {
  for (auto& m : list) (void)std::move(m).transfer();
  list.clear();
}

TEST(MailboxOrderGate, EachOriginIsDeliveredInSequence) {
  object_mailbox box;
  EXPECT_EQ(box.order_gate(3, 0, 0), order_outcome::in_order);
  EXPECT_EQ(box.order_gate(3, 0, 1), order_outcome::in_order);
  EXPECT_EQ(box.order_gate(5, 0, 0), order_outcome::in_order);  // origins are independent
  EXPECT_EQ(box.order_gate(3, 0, 3), order_outcome::early);     // 2 is missing
  EXPECT_EQ(box.find_order(3)->next, 2u);                       // early does not advance
  box.early.emplace(std::pair{3u, 3ull}, object_message(access::shared, 3, 3));
  EXPECT_EQ(box.order_gate(3, 0, 3), order_outcome::duplicate_early);
  EXPECT_EQ(box.order_gate(3, 0, 1), order_outcome::already_delivered);
  for (auto& [key, m] : box.early) (void)std::move(m).transfer();
}

TEST(MailboxOrderGate, ANewSeriesStartsAtZero) {
  object_mailbox box;
  for (std::uint64_t seq = 0; seq < 5; ++seq)
    ASSERT_EQ(box.order_gate(2, 7, seq), order_outcome::in_order);
  // The origin moved on (it does only once all of series 7 was delivered): 0 again.
  EXPECT_EQ(box.order_gate(2, 8, 1), order_outcome::early);
  EXPECT_EQ(box.find_order(2)->series, 8u);
  EXPECT_EQ(box.find_order(2)->next, 0u);
  EXPECT_EQ(box.order_gate(2, 8, 0), order_outcome::in_order);
  // A message of the older series (all of it was delivered) is a duplicate.
  EXPECT_EQ(box.order_gate(2, 7, 5), order_outcome::already_delivered);
  EXPECT_EQ(box.find_order(2)->series, 8u);
  // An origin the table forgot starts wherever its series starts: at 0.
  EXPECT_EQ(box.order_gate(4, 3, 0), order_outcome::in_order);
  EXPECT_EQ(box.order_gate(4, 3, 0), order_outcome::already_delivered);
}

// Fills a mailbox with `origins` origins (1..origins), `each` in-order messages apiece.
void deliver_from(object_mailbox& box, roam::node_id origins, std::uint64_t each,
                  std::vector<forget_request>& asked) {
  for (roam::node_id o = 1; o <= origins; ++o)
    for (std::uint64_t k = 0; k < each; ++k) {
      const std::uint64_t seq = box.find_order(o) ? box.find_order(o)->next : 0;
      ASSERT_EQ(box.order_gate(o, 0, seq), order_outcome::in_order);
      if (box.compaction_round_due()) box.start_compaction_round(asked);
    }
}

TEST(MailboxCompaction, SmallTablesAreNeverCompacted) {
  object_mailbox box;
  std::vector<forget_request> asked;
  deliver_from(box, object_mailbox::origins_kept_without_asking, 1000, asked);
  EXPECT_TRUE(asked.empty());
}

TEST(MailboxCompaction, IdleOriginsAreAskedActiveOnesStay) {
  object_mailbox box;
  std::vector<forget_request> asked;
  deliver_from(box, 40, 1, asked);  // 40 origins, one message each
  // Origin 1 keeps sending: the others are idle and asked within two rounds, each once,
  // with the count delivered from it.
  for (int k = 0; k < 400; ++k) {
    ASSERT_EQ(box.order_gate(1, 0, box.find_order(1)->next), order_outcome::in_order);
    if (box.compaction_round_due()) box.start_compaction_round(asked);
  }
  std::vector<roam::node_id> who;
  for (const forget_request& r : asked) {
    EXPECT_EQ(r.delivered, 1u);
    EXPECT_EQ(r.series, 0u);
    who.push_back(r.origin);
  }
  std::sort(who.begin(), who.end());
  EXPECT_TRUE(std::adjacent_find(who.begin(), who.end()) == who.end()) << "asked twice";
  EXPECT_EQ(who.size(), 39u);
  EXPECT_TRUE(std::find(who.begin(), who.end(), 1u) == who.end()) << "the active one asked";
  // Their answers drop them; the active origin stays.
  for (const forget_request& r : asked)
    EXPECT_TRUE(box.forget_origin(r.origin, r.series, r.delivered));
  EXPECT_EQ(box.expected.size(), 1u);
  EXPECT_EQ(box.find_order(1)->next, 401u);
}

TEST(MailboxCompaction, AnAnswerIsIgnoredIfTheOriginSentMoreSinceTheRequest) {
  object_mailbox box;
  ASSERT_EQ(box.order_gate(3, 0, 0), order_outcome::in_order);
  ASSERT_EQ(box.order_gate(3, 0, 1), order_outcome::in_order);
  // More of the same series after the request: not dropped (it sent 3, not 2).
  ASSERT_EQ(box.order_gate(3, 0, 2), order_outcome::in_order);
  EXPECT_FALSE(box.forget_origin(3, 0, 2));
  // A message of the new series overtook the answer: the entry is the new series's.
  ASSERT_EQ(box.order_gate(3, 1, 0), order_outcome::in_order);
  EXPECT_FALSE(box.forget_origin(3, 0, 3));
  EXPECT_EQ(box.find_order(3)->series, 1u);
  // An origin with a message waiting early is not dropped either.
  ASSERT_EQ(box.order_gate(3, 1, 2), order_outcome::early);
  box.early.emplace(std::pair{3u, 2ull}, object_message(access::shared, 3, 2));
  EXPECT_FALSE(box.forget_origin(3, 1, 1));
  EXPECT_TRUE(box.forget_origin(9, 0, 0) == false);  // unknown origin
  for (auto& [key, m] : box.early) (void)std::move(m).transfer();
}

TEST(MailboxAccessGate, ExclusiveAloneSharedTogetherFirstComeFirstServed) {
  object_mailbox box;
  EXPECT_EQ(box.access_gate(access::exclusive, false), access_outcome::granted);
  EXPECT_EQ(box.access_gate(access::shared, false), access_outcome::waits);
  EXPECT_EQ(box.access_gate(access::exclusive, false), access_outcome::waits);
  box.release(access::exclusive);
  EXPECT_TRUE(box.idle());
  EXPECT_EQ(box.access_gate(access::shared, false), access_outcome::granted);
  EXPECT_EQ(box.access_gate(access::shared, false), access_outcome::granted);
  EXPECT_EQ(box.shared_running, 2u);
  EXPECT_EQ(box.access_gate(access::exclusive, false), access_outcome::waits);
  box.release(access::shared);
  box.release(access::shared);
  // A pending migration (blocked) grants nothing.
  EXPECT_EQ(box.access_gate(access::shared, true), access_outcome::waits);
  // Something already waiting goes first, even when the newcomer would be compatible.
  box.ready.push_back(object_message(access::shared, 1, 0));
  EXPECT_EQ(box.access_gate(access::shared, false), access_outcome::waits);
  EXPECT_TRUE(box.idle());
  (void)std::move(box.ready.front()).transfer();
}

TEST(MailboxAdmitSuccessors, EarlyMessagesJoinTheQueueOnceInOrder) {
  object_mailbox box;
  EXPECT_EQ(box.order_gate(1, 0, 0), order_outcome::in_order);
  for (std::uint64_t seq : {2u, 3u, 5u}) {
    ASSERT_EQ(box.order_gate(1, 0, seq), order_outcome::early);
    box.early.emplace(std::pair{1u, seq}, object_message(access::shared, 1, seq));
  }
  box.admit_successors(1);  // 1 has not arrived: nothing moves
  EXPECT_TRUE(box.ready.empty());
  ASSERT_EQ(box.order_gate(1, 0, 1), order_outcome::in_order);
  box.admit_successors(1);  // 2 and 3 follow 1; 5 still waits for 4
  ASSERT_EQ(box.ready.size(), 2u);
  EXPECT_EQ(seq_of(box.ready[0]), 2u);
  EXPECT_EQ(seq_of(box.ready[1]), 3u);
  EXPECT_EQ(box.ready[0]->local_progress, stage_admitted);
  EXPECT_EQ(box.find_order(1)->next, 4u);
  EXPECT_EQ(box.early.size(), 1u);
  for (auto& m : box.ready) (void)std::move(m).transfer();
  for (auto& [key, m] : box.early) (void)std::move(m).transfer();
}

TEST(MailboxDispatch, GrantsTheHeadWhileCompatible) {
  object_mailbox box;
  box.ready.push_back(object_message(access::shared, 0, 0));
  box.ready.push_back(object_message(access::shared, 0, 1));
  box.ready.push_back(object_message(access::exclusive, 0, 2));
  box.ready.push_back(object_message(access::shared, 0, 3));
  set_aside_list granted;
  box.dispatch(granted, true);  // blocked by a migration: nothing
  EXPECT_TRUE(granted.empty());
  box.dispatch(granted, false);  // two readers, then the writer must wait for them
  ASSERT_EQ(granted.size(), 2u);
  EXPECT_EQ(granted[0]->local_progress, stage_granted);
  EXPECT_EQ(box.shared_running, 2u);
  EXPECT_EQ(box.ready.size(), 2u);
  drop(granted);
  box.release(access::shared);
  box.release(access::shared);
  box.dispatch(granted, false);  // the writer alone; the reader behind it waits
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(seq_of(granted[0]), 2u);
  EXPECT_TRUE(box.exclusive_running);
  drop(granted);
  for (auto& m : box.ready) (void)std::move(m).transfer();
}

TEST(LocationGate, ResidentAwaitingForwardNeverCreatedDestroyed) {
  const roam::object_id id{2, 1, 7};
  object_message_header oh;
  oh.target = id;
  route r;
  {
    object_entry e(id);
    e.state().state = residence::resident;
    EXPECT_EQ(location_gate(e.state(), e, oh, 0, 2, false, r), location_outcome::resident);
    e.state().state = residence::destroyed;
    EXPECT_EQ(location_gate(e.state(), e, oh, 0, 2, false, r), location_outcome::destroyed);
  }
  {
    object_entry e(id);  // absent, nothing known: ask its home, or fail there
    EXPECT_EQ(location_gate(e.state(), e, oh, 0, 2, false, r), location_outcome::forward);
    EXPECT_EQ(r.location, 2u);
    EXPECT_EQ(location_gate(e.state(), e, oh, 2, 2, false, r), location_outcome::never_created);
    // At its home, with its index handed out: destroyed, and its entry removed (ADR 46).
    EXPECT_EQ(location_gate(e.state(), e, oh, 2, 2, true, r), location_outcome::destroyed);
    oh.version = 3;  // even for a sender that knew a later installation
    EXPECT_EQ(location_gate(e.state(), e, oh, 2, 2, true, r), location_outcome::destroyed);
    oh.version = 0;
  }
  {
    object_entry e(id);  // absent, last seen on node 3 at version 4
    e.learn_route({4, 3});
    oh.version = 4;
    EXPECT_EQ(location_gate(e.state(), e, oh, 0, 2, false, r), location_outcome::forward);
    EXPECT_EQ(r.location, 3u);
    oh.version = 5;  // the sender knows of a newer installation, here: wait for it
    EXPECT_EQ(location_gate(e.state(), e, oh, 0, 2, false, r), location_outcome::awaits_install);
  }
  {
    // An object created on node 5 of a checkpointed job, restarted on 4 nodes: node 1 answers
    // for its home (ADR 50), and the gate asks node 1, not node 5.
    object_message_header adopted;
    adopted.target = roam::object_id{5, 1, 9};
    object_entry e(adopted.target);
    EXPECT_EQ(location_gate(e.state(), e, adopted, 0, 1, false, r), location_outcome::forward);
    EXPECT_EQ(r.location, 1u);
    EXPECT_EQ(location_gate(e.state(), e, adopted, 1, 1, false, r),
              location_outcome::never_created);
    EXPECT_EQ(location_gate(e.state(), e, adopted, 1, 1, true, r), location_outcome::destroyed);
  }
}

}  // namespace
