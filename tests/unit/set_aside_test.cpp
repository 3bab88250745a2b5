// White-box tests of set_aside_message, the token through which the layers above the core set
// messages aside: quiescence detection must count a set-aside message as pending until one of
// its exits, exactly once.
#include <roam/roam.hpp>

#include <roam/core/detail/set_aside_message.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using namespace std::chrono_literals;
using roam::detail::set_aside_message;

std::atomic<int> ran{0};
void count_run(int add) { ran += add; }

// Runs `body(node)` on one in-process node with two workers.
template <class Body>
void on_one_node(Body body) {
  roam::config c;
  c.transport = roam::transport_kind::inproc;
  c.nodes = 1;
  c.threads = 2;
  ASSERT_EQ(roam::run(c, [&] { body(roam::detail::require_node("set_aside_test")); }), 0);
}

// A message as a handler would set it aside: built for this node, never posted.
roam::detail::message_ptr message_to_self(int add) {
  return roam::detail::build_message<void (*)(int)>(roam::this_node(), &count_run, 0, add);
}

TEST(SetAside, QuiescenceWaitsForASetAsideMessageUntilItRuns) {
  ran = 0;
  on_one_node([](roam::detail::node_runtime& n) {
    set_aside_message token = set_aside_message::set_aside(n, message_to_self(5));
    EXPECT_TRUE(token);
    // Another thread lets it run later; quiescence must wait for that.
    std::thread releaser([&n, t = std::move(token)]() mutable {
      std::this_thread::sleep_for(100ms);
      std::move(t).run_later(n);
    });
    roam::wait_quiescence();
    EXPECT_EQ(ran.load(), 5);  // it ran before quiescence was seen
    releaser.join();
  });
}

TEST(SetAside, HandledGivesTheMessageBackAndBalancesTheCount) {
  ran = 0;
  on_one_node([](roam::detail::node_runtime& n) {
    set_aside_message token = set_aside_message::set_aside(n, message_to_self(7));
    roam::detail::message_ptr back = std::move(token).handled(n);
    ASSERT_TRUE(back);
    EXPECT_FALSE(token);       // NOLINT(bugprone-use-after-move): it is empty
    roam::wait_quiescence();   // returns: nothing is pending any more
    EXPECT_EQ(ran.load(), 0);  // it never ran
  });
}

TEST(SetAside, TransferAndAdoptCarryTheCountWithTheMessage) {
  ran = 0;
  on_one_node([](roam::detail::node_runtime& n) {
    // As a migration does: set aside on one node, written into another
    // message, adopted where it arrives, run there.
    roam::detail::message_ptr carried =
        set_aside_message::set_aside(n, message_to_self(3)).transfer();
    set_aside_message adopted = set_aside_message::adopt(std::move(carried));
    std::move(adopted).run_later(n);
    roam::wait_quiescence();
    EXPECT_EQ(ran.load(), 3);
  });
}

TEST(SetAside, MovingATokenMovesTheObligation) {
  on_one_node([](roam::detail::node_runtime& n) {
    set_aside_message a = set_aside_message::set_aside(n, message_to_self(1));
    set_aside_message b = std::move(a);
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): it is empty
    EXPECT_TRUE(b);
    set_aside_message c;
    c = std::move(b);  // into an empty token: allowed
    std::move(c).run_later(n);
    roam::wait_quiescence();
  });
}

}  // namespace
