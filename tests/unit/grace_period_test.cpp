// The grace period behind the mobile-object directory's freeing (grace_period.hpp): what a
// reader can still reach is never freed under it, and what nobody can reach is freed.
#include <roam/core/detail/grace_period.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using roam::detail::grace_collect;
using roam::detail::grace_pending;
using roam::detail::grace_read_section;
using roam::detail::grace_retire;

constexpr std::uint64_t alive = 0x600dcafe, dead = 0xdeadbeef;

struct cell {
  std::atomic<std::uint64_t> mark{alive};
};

std::atomic<int> freed{0};

void free_cell(void* p) {
  auto* c = static_cast<cell*>(p);
  c->mark.store(dead, std::memory_order_relaxed);  // a reader that still held it would see
  delete c;
  freed.fetch_add(1);
}

TEST(GracePeriod, ReadersNeverSeeWhatIsFreedAndRetiredCellsAreFreed) {
  std::atomic<cell*> current{new cell};
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0}, reads{0};
  const int owner = 0;
  // Non-worker readers (read sections) and worker-style readers (quiescent states between
  // "items", offline now and then as if parked).
  std::vector<std::thread> readers;
  readers.reserve(3);
  for (int k = 0; k < 2; ++k)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const grace_read_section reading;
        for (int i = 0; i < 64; ++i) {
          if (current.load(std::memory_order_acquire)->mark.load(std::memory_order_relaxed) !=
              alive)
            bad.fetch_add(1);
          reads.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  readers.emplace_back([&] {
    roam::detail::grace_register_worker();
    for (unsigned item = 0; !stop.load(); ++item) {
      roam::detail::grace_announce_quiescent_state();
      if (current.load(std::memory_order_acquire)->mark.load(std::memory_order_relaxed) != alive)
        bad.fetch_add(1);
      if (item % 1024 == 0) {
        roam::detail::grace_go_offline();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        roam::detail::grace_come_online();
      }
    }
    roam::detail::grace_go_offline();
  });
  constexpr int replaced = 20000;
  for (int i = 0; i < replaced; ++i) {
    cell* old = current.exchange(new cell, std::memory_order_acq_rel);
    grace_retire(&owner, old, free_cell);
  }
  while (reads.load() < 100000) std::this_thread::yield();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  // No reader is online now: everything retired goes after a few more advances.
  for (int i = 0; i < 8 && grace_pending() > 0; ++i) grace_collect();
  EXPECT_EQ(grace_pending(), 0u);
  EXPECT_EQ(freed.load(), replaced);
  delete current.load();
}

TEST(GracePeriod, AReaderInsideASectionHoldsBackTheFreeing) {
  freed = 0;
  const int owner = 0;
  std::atomic<int> phase{0};
  std::thread reader([&] {
    const grace_read_section reading;
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  grace_retire(&owner, new cell, free_cell);
  for (int i = 0; i < 8; ++i) grace_collect();
  EXPECT_EQ(freed.load(), 0) << "freed while a reader that may hold it was inside its section";
  phase = 2;
  reader.join();
  for (int i = 0; i < 8 && grace_pending() > 0; ++i) grace_collect();
  EXPECT_EQ(freed.load(), 1);
  // What an owner retired goes at once when the owner says nobody can read it any more.
  grace_retire(&owner, new cell, free_cell);
  roam::detail::grace_free_retired_of(&owner);
  EXPECT_EQ(freed.load(), 2);
}

}  // namespace
