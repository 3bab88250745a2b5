// The global heap's table and free list: allocation, release, stale pointers, exhaustion.
#include "../../src/gas/node_heap.hpp"

#include <roam/base/error.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

namespace {

using roam::gas::detail::node_heap;

struct heap_of {
  explicit heap_of(std::uint64_t bytes, std::uint32_t slots = 16)
      : memory(std::make_unique<std::byte[]>(bytes)), heap(3, memory.get(), bytes, slots) {}
  std::unique_ptr<std::byte[]> memory;
  node_heap heap;
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const roam::memory_error& e) {
    EXPECT_EQ(e.code(), roam::errc::global_memory);
    return e.message();
  }
  ADD_FAILURE() << "no roam::memory_error";
  return {};
}

TEST(NodeHeap, AllocationsAreAlignedDistinctAndResolve) {
  heap_of h(4096);
  const auto a = h.heap.allocate(100), b = h.heap.allocate(0), c = h.heap.allocate(64);
  std::set<std::uint64_t> offsets{a.offset, b.offset, c.offset};
  EXPECT_EQ(offsets.size(), 3u);
  for (auto o : offsets) EXPECT_EQ(o % node_heap::alignment, 0u);
  EXPECT_EQ(h.heap.resolve(a.slot, a.generation, a.offset + 10, 90, "get"),
            h.memory.get() + a.offset + 10);
  EXPECT_EQ(h.heap.resolve(b.slot, b.generation, b.offset, 0, "get"), h.memory.get() + b.offset);
  EXPECT_EQ(h.heap.live_allocations(), 3u);
  EXPECT_EQ(h.heap.bytes_in_use(), 128u + 64u + 64u);
}

TEST(NodeHeap, ARangeBeyondTheAllocationIsRefused) {
  heap_of h(4096);
  const auto a = h.heap.allocate(100);
  EXPECT_NE(error_of([&] {
              h.heap.resolve(a.slot, a.generation, a.offset + 96, 8, "put");
            }).find("leave allocation"),
            std::string::npos);
  // One past the end holds nothing; before the start is outside too.
  (void)h.heap.resolve(a.slot, a.generation, a.offset + 100, 0, "put");
  (void)error_of([&] { h.heap.resolve(a.slot, a.generation, a.offset + 101, 0, "put"); });
  const auto b = h.heap.allocate(64);
  (void)error_of([&] { h.heap.resolve(b.slot, b.generation, b.offset - 1, 1, "get"); });
  // An offset that wraps around with its length.
  (void)error_of([&] { h.heap.resolve(a.slot, a.generation, a.offset + 1, ~0ull, "get"); });
}

TEST(NodeHeap, AFreedOrReusedSlotNoLongerResolves) {
  heap_of h(4096, 1);
  const auto a = h.heap.allocate(8);
  EXPECT_TRUE(h.heap.start_release(a.slot, a.generation).empty());
  EXPECT_NE(error_of([&] {
              h.heap.resolve(a.slot, a.generation, a.offset, 8, "get");
            }).find("not allocated"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              EXPECT_TRUE(h.heap.start_release(a.slot, a.generation).empty());
            }).find("freed already"),
            std::string::npos);
  const auto b = h.heap.allocate(8);  // the only slot, reused with the next generation
  EXPECT_EQ(b.slot, a.slot);
  EXPECT_NE(b.generation, a.generation);
  (void)error_of([&] { h.heap.resolve(a.slot, a.generation, a.offset, 8, "get"); });
  (void)h.heap.resolve(b.slot, b.generation, b.offset, 8, "get");
  EXPECT_NE(error_of([&] { h.heap.resolve(0, 0, 0, 0, "get"); }).find("null"), std::string::npos);
  (void)error_of([&] { EXPECT_TRUE(h.heap.start_release(99, 0).empty()); });
}

TEST(NodeHeap, FreedSlotsAreReusedFirstInFirstOut) {
  heap_of h(1 << 16, 4);
  auto a = h.heap.allocate(8), b = h.heap.allocate(8);
  EXPECT_TRUE(h.heap.start_release(a.slot, a.generation).empty());
  EXPECT_TRUE(h.heap.start_release(b.slot, b.generation).empty());
  // Slots 3 and 4 were never used: they come before the freed ones.
  EXPECT_EQ(h.heap.allocate(8).slot, 3u);
  EXPECT_EQ(h.heap.allocate(8).slot, 4u);
  EXPECT_EQ(h.heap.allocate(8).slot, a.slot);
  EXPECT_EQ(h.heap.allocate(8).slot, b.slot);
}

TEST(NodeHeap, ExhaustionNamesTheSettingsAndFreedRangesCoalesce) {
  heap_of h(1024, 64);
  std::vector<node_heap::block> all;
  all.reserve(16);
  for (int i = 0; i < 16; ++i) all.push_back(h.heap.allocate(64));
  EXPECT_NE(error_of([&] { h.heap.allocate(1); }).find("--roam-gas-heap"), std::string::npos);
  // Free every other block: 512 bytes free, but no 128 in one piece.
  for (std::size_t i = 0; i < all.size(); i += 2)
    EXPECT_TRUE(h.heap.start_release(all[i].slot, all[i].generation).empty());
  (void)error_of([&] { h.heap.allocate(128); });
  // Free the rest: the ranges merge back into one of 1024.
  for (std::size_t i = 1; i < all.size(); i += 2)
    EXPECT_TRUE(h.heap.start_release(all[i].slot, all[i].generation).empty());
  EXPECT_EQ(h.heap.bytes_in_use(), 0u);
  const auto whole = h.heap.allocate(1024);
  EXPECT_EQ(whole.offset, 0u);
  heap_of few(1 << 16, 2);
  (void)few.heap.allocate(1);
  (void)few.heap.allocate(1);
  EXPECT_NE(error_of([&] { few.heap.allocate(1); }).find("2 of its 2 allocations"),
            std::string::npos);
  EXPECT_NE(error_of([&] { few.heap.allocate(~0ull); }).find("cannot hold"), std::string::npos);
}

}  // namespace
