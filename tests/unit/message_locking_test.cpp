// Page-locking of large message blocks (set_large_block_locking), with a stand-in for the
// devices' locking. Its own executable: the installation is once per process.
#include <roam/transport/message.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <vector>

using roam::detail::message;
using roam::detail::message_ptr;

namespace {
// A stand-in for the devices' page-locking: records which ranges are locked now.
std::mutex locking_mutex;
std::map<void*, std::size_t> locked_now;
int lock_calls = 0;
std::vector<void*> unlocked;
bool refuse_locks = false;

bool fake_lock(void* memory, std::size_t bytes) noexcept {
  std::lock_guard guard(locking_mutex);
  ++lock_calls;
  if (refuse_locks) return false;
  if (!locked_now.emplace(memory, bytes).second) std::abort();  // locked twice
  return true;
}
void fake_unlock(void* memory) noexcept {
  std::lock_guard guard(locking_mutex);
  if (locked_now.erase(memory) != 1) std::abort();  // not locked
  unlocked.push_back(memory);
}
bool other_lock(void*, std::size_t) noexcept { return true; }
void other_unlock(void*) noexcept {}
}  // namespace

TEST(MessageLocking, LargeBlocksAreLockedOnceAndUnlockedBeforeTheyAreFreed) {
  using roam::detail::is_locked_block;
  EXPECT_FALSE(roam::detail::set_large_block_locking({nullptr, &fake_unlock}))
      << "a locking without its lock function was installed";
  ASSERT_TRUE(roam::detail::set_large_block_locking({&fake_lock, &fake_unlock}));
  EXPECT_FALSE(roam::detail::set_large_block_locking({&other_lock, &other_unlock}))
      << "a second installation replaced the first";

  EXPECT_FALSE(is_locked_block(*message::allocate(16)));
  EXPECT_FALSE(is_locked_block(*message::allocate(16 << 10)));
  EXPECT_FALSE(is_locked_block(*message::allocate(60 << 10)))
      << "a 64 KiB block (the MPI transport's receive frames): not worth locking";

  const std::size_t payload = std::size_t{1} << 20;  // a 2 MiB block with the message object
  void* block = nullptr;
  {
    message_ptr m = message::allocate(payload);
    EXPECT_TRUE(is_locked_block(*m));
    block = m.get();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % 4096, 0u) << "shares a page";
    std::lock_guard guard(locking_mutex);
    ASSERT_EQ(locked_now.count(block), 1u);
    EXPECT_EQ(locked_now[block], std::size_t{2} << 20) << "the whole block, in whole pages";
  }
  int calls = 0;
  {
    std::lock_guard guard(locking_mutex);
    calls = lock_calls;
  }
  {
    message_ptr again = message::allocate(payload);  // the cached block, still locked
    EXPECT_EQ(again.get(), block);
    EXPECT_TRUE(is_locked_block(*again));
    std::lock_guard guard(locking_mutex);
    EXPECT_EQ(lock_calls, calls) << "a cached block was locked again";
  }

  // A refused lock leaves the block pageable; it is locked when reused later.
  const std::size_t other_payload = std::size_t{3} << 20;  // a 4 MiB block
  {
    std::lock_guard guard(locking_mutex);
    refuse_locks = true;
  }
  void* refused = nullptr;
  {
    message_ptr m = message::allocate(other_payload);
    EXPECT_FALSE(is_locked_block(*m));
    refused = m.get();
  }
  {
    std::lock_guard guard(locking_mutex);
    refuse_locks = false;
  }
  {
    message_ptr m = message::allocate(other_payload);
    EXPECT_EQ(m.get(), refused);
    EXPECT_TRUE(is_locked_block(*m));
  }

  // The cache keeps at most 256 MiB: of three 128 MiB blocks freed, one at least is given back
  // to the system, unlocked first (fake_unlock aborts on a block it did not lock).
  {
    std::vector<message_ptr> huge;
    huge.reserve(3);
    for (int i = 0; i < 3; ++i) huge.push_back(message::allocate(std::size_t{100} << 20));
    std::set<void*> blocks;
    for (auto& m : huge) {
      EXPECT_TRUE(is_locked_block(*m));
      blocks.insert(m.get());
    }
    huge.clear();
    std::lock_guard guard(locking_mutex);
    ASSERT_FALSE(unlocked.empty()) << "no block left the cache";
    for (void* p : unlocked) EXPECT_EQ(blocks.count(p), 1u);
    for (void* p : unlocked) EXPECT_EQ(locked_now.count(p), 0u);
  }
}
