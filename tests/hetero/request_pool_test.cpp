// The per-thread request pools (src/hetero/request_pool.hpp): blocks are reused by the
// thread that frees them, flow back in batches from a thread that frees more than it
// allocates (the engine thread), survive their thread, and shared_ptrs made from them
// construct, destroy and free exactly once.
#include "request_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>
#include <vector>

namespace {

using roam::detail::make_pooled;

// A distinct size per test, so each test sees pools no other test touched.
template <int Tag>
using pool = roam::detail::request_block_pool<std::size_t{64} * (Tag + 1)>;
constexpr std::size_t batch = pool<0>::batch;

// Allocates `count` blocks of `bytes` from the heap and keeps them: had the pool given its
// blocks back to the heap, these would take them, and the pool could not hand them out.
struct heap_blocks {
  std::vector<void*> blocks;
  heap_blocks(std::size_t count, std::size_t bytes) {
    for (std::size_t i = 0; i < count; ++i) blocks.push_back(::operator new(bytes));
  }
  heap_blocks(const heap_blocks&) = delete;
  heap_blocks& operator=(const heap_blocks&) = delete;
  ~heap_blocks() {
    for (void* b : blocks) ::operator delete(b);
  }
};

TEST(RequestPool, AFreedBlockIsTheNextOneHandedOut) {
  void* first = pool<1>::get();
  pool<1>::put(first);
  const heap_blocks noise(4, 128);
  void* again = pool<1>::get();
  EXPECT_EQ(again, first);
  pool<1>::put(again);
}

TEST(RequestPool, BlocksFreedOnAnotherThreadComeBackInBatches) {
  constexpr std::size_t count = 10 * batch;
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < count; ++i) blocks.push_back(pool<2>::get());
  const std::set<void*> allocated(blocks.begin(), blocks.end());
  ASSERT_EQ(allocated.size(), count);
  // The "engine thread" frees them all: it keeps fewer than two batches and passes the rest
  // on, so this thread allocates most of them again without touching the heap.
  std::thread([&] {
    for (void* b : blocks) pool<2>::put(b);
  }).join();  // its cache goes to the shared list too as it exits
  const heap_blocks noise(count, 192);
  std::vector<void*> again;
  for (std::size_t i = 0; i < count; ++i) again.push_back(pool<2>::get());
  const auto reused =
      std::count_if(again.begin(), again.end(), [&](void* b) { return allocated.count(b) == 1; });
  EXPECT_EQ(static_cast<std::size_t>(reused), count);
  for (void* b : again) pool<2>::put(b);
}

TEST(RequestPool, AThreadsCacheOutlivesTheThread) {
  void* kept = nullptr;
  std::thread([&] {
    kept = pool<3>::get();
    pool<3>::put(kept);
  }).join();
  const heap_blocks noise(4, 256);
  void* here = pool<3>::get();
  EXPECT_EQ(here, kept);
  pool<3>::put(here);
}

struct counted {
  static inline int alive = 0;
  static inline int made = 0;
  int value;
  explicit counted(int v) : value(v) {
    ++alive;
    ++made;
  }
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;
  ~counted() { --alive; }
};

TEST(RequestPool, SharedPointersConstructAndDestroyOnce) {
  counted::alive = counted::made = 0;
  std::weak_ptr<counted> watcher;
  {
    auto p = make_pooled<counted>(7);
    EXPECT_EQ(p->value, 7);
    EXPECT_EQ(counted::alive, 1);
    watcher = p;
    // The last strong reference dies on another thread, as tasks do on the engine thread.
    std::thread([q = std::move(p)]() mutable { q.reset(); }).join();
  }
  EXPECT_EQ(counted::alive, 0);
  EXPECT_TRUE(watcher.expired());
  watcher.reset();  // the block (control block and object) is freed only now
  std::vector<std::shared_ptr<counted>> many;
  many.reserve(500);
  for (int i = 0; i < 500; ++i) many.push_back(make_pooled<counted>(i));
  for (int i = 0; i < 500; ++i) EXPECT_EQ(many[static_cast<std::size_t>(i)]->value, i);
  many.clear();
  EXPECT_EQ(counted::alive, 0);
  EXPECT_EQ(counted::made, 501);
}

}  // namespace
