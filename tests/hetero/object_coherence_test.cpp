// White-box tests of the MSI state machine of one hetero object (src/hetero/object_coherence):
// every transition, from every state it may start in, and the invariant each one keeps.
#include "object_coherence.hpp"

#include <roam/base/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using roam::coherence;
using roam::detail::object_coherence;
constexpr auto I = coherence::invalid;
constexpr auto S = coherence::shared;
constexpr auto M = coherence::modified;

std::vector<coherence> states_of(const object_coherence& c) {
  std::vector<coherence> states;
  for (std::size_t s = 0; s < c.spaces(); ++s) states.push_back(c.state(s));
  return states;
}

/// At least one copy is valid, and a Modified copy is the only valid one.
void expect_invariant(const object_coherence& c) {
  std::size_t valid = 0, modified = 0;
  for (auto state : states_of(c)) {
    valid += state != I;
    modified += state == M;
  }
  EXPECT_GE(valid, 1u);
  if (modified > 0) {
    EXPECT_EQ(valid, 1u);
  }
}

std::uint64_t mask(std::initializer_list<int> spaces) {
  std::uint64_t m = 0;
  for (int s : spaces) m |= std::uint64_t{1} << s;
  return m;
}

/// host S and both devices S: the state after the host fed two devices.
object_coherence shared_everywhere() {
  object_coherence c(3);
  c.copied(0, 1);
  c.copied(0, 2);
  return c;
}

TEST(ObjectCoherence, ANewObjectIsModifiedOnTheHostAndInvalidOnDevices) {
  object_coherence c(3);
  EXPECT_EQ(states_of(c), (std::vector{M, I, I}));
  EXPECT_TRUE(c.valid(0));
  EXPECT_FALSE(c.valid(1));
  expect_invariant(c);
}

TEST(ObjectCoherence, SpaceCountsOutsideOneTo64AreRefused) {
  EXPECT_THROW(object_coherence(0), roam::device_error);
  EXPECT_THROW(object_coherence(65), roam::device_error);
  EXPECT_NO_THROW(object_coherence(64));
}

TEST(ObjectCoherence, ReadingIntoADeviceSharesAModifiedHostCopy) {
  object_coherence c(3);
  c.copied(0, 1);
  EXPECT_EQ(states_of(c), (std::vector{S, S, I}));
  c.copied(0, 2);  // from Shared: stays Shared
  EXPECT_EQ(states_of(c), (std::vector{S, S, S}));
  expect_invariant(c);
}

TEST(ObjectCoherence, ReadingToTheHostSharesAModifiedDeviceCopy) {
  object_coherence c(3);
  c.written(1);
  ASSERT_EQ(states_of(c), (std::vector{I, M, I}));
  c.copied(1, 0);
  EXPECT_EQ(states_of(c), (std::vector{S, S, I}));
  expect_invariant(c);
}

TEST(ObjectCoherence, CopyingFromAnInvalidCopyIsAnInternalError) {
  object_coherence c(3);
  EXPECT_THROW(c.copied(2, 1), roam::device_error);
  EXPECT_EQ(states_of(c), (std::vector{M, I, I}));  // nothing changed
}

TEST(ObjectCoherence, ADeviceWriteInvalidatesEveryOtherCopy) {
  auto c = shared_everywhere();
  c.written(2);
  EXPECT_EQ(states_of(c), (std::vector{I, I, M}));
  c.written(2);  // writing a Modified copy again
  EXPECT_EQ(states_of(c), (std::vector{I, I, M}));
  expect_invariant(c);
}

TEST(ObjectCoherence, AHostWriteInvalidatesTheDeviceCopies) {
  auto c = shared_everywhere();
  c.written(0);
  EXPECT_EQ(states_of(c), (std::vector{M, I, I}));
  object_coherence d(2);
  d.written(1);
  d.written(0);  // from Invalid on the host
  EXPECT_EQ(states_of(d), (std::vector{M, I}));
  expect_invariant(c);
  expect_invariant(d);
}

TEST(ObjectCoherence, EvictingAModifiedCopyLeavesTheWrittenBackHostModified) {
  object_coherence c(3);
  c.written(1);
  c.evicted(1);
  EXPECT_EQ(states_of(c), (std::vector{M, I, I}));
  expect_invariant(c);
}

TEST(ObjectCoherence, EvictingASharedCopyLeavesTheOthersAsTheyAre) {
  auto c = shared_everywhere();
  c.evicted(1);
  EXPECT_EQ(states_of(c), (std::vector{S, I, S}));
  c.evicted(1);  // an Invalid copy: nothing to change
  EXPECT_EQ(states_of(c), (std::vector{S, I, S}));
  expect_invariant(c);
}

TEST(ObjectCoherence, ALoneSurvivorOfAFailureIsModifiedSoItsEvictionWritesBack) {
  // No transition leaves a Shared copy as the only valid one (evicted() refuses that as an
  // internal error): the survivor is Modified, and evicting it makes the host Modified.
  object_coherence c(2);
  c.written(1);
  c.copied(1, 0);  // both Shared
  ASSERT_TRUE(c.failed(mask({0})));
  ASSERT_EQ(states_of(c), (std::vector{I, M}));
  c.evicted(1);
  EXPECT_EQ(states_of(c), (std::vector{M, I}));
  expect_invariant(c);
}

TEST(ObjectCoherence, TheHostCopyIsNeverEvicted) {
  object_coherence c(2);
  EXPECT_THROW(c.evicted(0), roam::device_error);
  EXPECT_EQ(states_of(c), (std::vector{M, I}));
}

TEST(ObjectCoherence, AFailedTransferInvalidatesItsCopyAndALoneSurvivorBecomesModified) {
  object_coherence c(3);
  c.copied(0, 1);  // the transfer that then failed
  EXPECT_TRUE(c.failed(mask({1})));
  EXPECT_EQ(states_of(c), (std::vector{M, I, I}));
  expect_invariant(c);
}

TEST(ObjectCoherence, AFailedCopyAmongSeveralValidOnesLeavesTheOthersShared) {
  auto c = shared_everywhere();
  EXPECT_TRUE(c.failed(mask({1})));
  EXPECT_EQ(states_of(c), (std::vector{S, I, S}));
  expect_invariant(c);
}

TEST(ObjectCoherence, AFailureOfTheOnlyValidCopyKeepsItValid) {
  // A failed kernel wrote the only valid copy: its contents are undefined, but nothing better
  // exists, so it stays (the failed task reports the failure).
  object_coherence c(3);
  c.written(2);
  EXPECT_FALSE(c.failed(mask({2})));
  EXPECT_EQ(states_of(c), (std::vector{I, I, M}));
  EXPECT_FALSE(c.failed(mask({0, 1, 2})));  // every copy failed: none is better
  EXPECT_EQ(states_of(c), (std::vector{I, I, M}));
}

TEST(ObjectCoherence, AFailureOfAnInvalidCopyChangesNothing) {
  object_coherence c(3);
  EXPECT_FALSE(c.failed(mask({1, 2})));
  EXPECT_EQ(states_of(c), (std::vector{M, I, I}));
}

TEST(ObjectCoherence, AFailedRangeWriteToSomeCopiesLeavesThoseThatTookIt) {
  // write_range: the host and device 2 took the bytes, device 1's transfer failed.
  auto c = shared_everywhere();
  EXPECT_TRUE(c.failed(mask({1})));
  EXPECT_EQ(states_of(c), (std::vector{S, I, S}));
  // Only device 2 left valid after the host's copy is written over elsewhere and fails too.
  EXPECT_TRUE(c.failed(mask({0})));
  EXPECT_EQ(states_of(c), (std::vector{I, I, M}));
  expect_invariant(c);
}

TEST(ObjectCoherence, TheNewestDeviceCopyIsTheModifiedOneElseTheFirstShared) {
  auto c = shared_everywhere();
  EXPECT_EQ(c.newest_device_space(), 1u);
  c.evicted(1);
  EXPECT_EQ(c.newest_device_space(), 2u);
  c.written(2);
  EXPECT_EQ(c.newest_device_space(), 2u);
  object_coherence d(4);
  d.written(3);
  d.copied(3, 0);
  d.copied(0, 1);  // Shared on 1 and 3: the first
  EXPECT_EQ(d.newest_device_space(), 1u);
  object_coherence host_only(3);
  EXPECT_THROW((void)host_only.newest_device_space(), roam::device_error);
}

}  // namespace
