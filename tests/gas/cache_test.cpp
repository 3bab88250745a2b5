// The software cache of remote global memory: hits, misses, lget on a miss, rget, eviction
// order (LRU), keep's refusal when full, concurrent misses fetching once, invalidation and
// phases. Caching happens for memory the calling thread does not read directly: another
// process's, or (ROAM_GAS_PATH=am) another node's; elsewhere the same calls read directly,
// which the tests check instead.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using roam::gas::cache_policy;

template <class Body>
void run_with_cache(std::uint64_t cache_bytes, Body body) {
  roam::config cfg = roam::config::from_environment();
  cfg.set("gas-cache-bytes", std::to_string(cache_bytes));
  cfg.set("gas-cache-shards", "1");  // one LRU order: eviction order is exact
  ASSERT_EQ(roam::run(cfg, body), 0);
}

struct block {
  std::uint64_t value[8];  // 64 bytes
};
constexpr std::uint64_t entry_charge = sizeof(block) + 128;  // node_cache::entry_overhead

/// Whether this node's gets of `p` go through its cache (it does not read `p` directly).
template <class T>
bool cached_here(const roam::global_ptr<T>& p) {
  const auto before = roam::gas::node_cache_statistics();
  T probe;
  (void)roam::gas::rget(p, &probe, 1).get();
  return roam::gas::node_cache_statistics().misses > before.misses;
}

/// The memory_error message `f` throws, or "".
template <class F>
std::string memory_error_of(F&& f) {
  try {
    f();
  } catch (const roam::memory_error& e) {
    return e.message();
  }
  return "";
}

roam::node_id right_of(roam::node_id me) { return (me + 1) % roam::num_nodes(); }

/// Each node's blocks on its right neighbour, filled with `value` by their owner.
std::vector<roam::global_ptr<block>> blocks_on_right(cache_policy policy, int count,
                                                     std::uint64_t value) {
  const roam::node_id me = roam::this_node();
  std::vector<roam::global_ptr<block>> mine;
  for (int i = 0; i < count; ++i) {
    mine.push_back(roam::gas::allocate<block>(me, 1, policy).get());
    block b{};
    for (auto& v : b.value) v = value + i;
    *roam::gas::local(mine.back()) = b;
  }
  // Every node's blocks, then the left neighbour's are the ones on... exchange: node k reads
  // the blocks node right_of(k) allocated.
  std::vector<roam::global_ptr<block>> theirs;
  for (int i = 0; i < count; ++i) {
    const auto all = roam::allgather(mine[i]);
    theirs.push_back(all[right_of(me)]);
  }
  roam::barrier();
  return theirs;
}

TEST(GlobalMemoryCache, GetFetchesOnceThenHitsUntilInvalidated) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const auto p = blocks_on_right(cache_policy::keep, 1, 7)[0];
    const bool cached = cached_here(p);  // the probe's rget kept it
    const auto before = roam::gas::node_cache_statistics();
    for (int i = 0; i < 10; ++i) EXPECT_EQ(roam::gas::get(p).get().value[3], 7u);
    const auto after = roam::gas::node_cache_statistics();
    if (cached) {
      EXPECT_EQ(after.hits - before.hits, 10u);
      EXPECT_EQ(after.misses, before.misses);
      EXPECT_EQ(roam::gas::lget(p).value[0], 7u);
    }
    roam::barrier();
    // The owner's neighbour changes the value: the cache keeps the old one until rget.
    block changed{};
    for (auto& v : changed.value) v = 99;
    roam::gas::put(p, changed).get();
    roam::barrier();
    if (cached) {
      EXPECT_EQ(roam::gas::get(p).get().value[0], 7u);  // stale, as documented
      EXPECT_EQ(roam::gas::rget(p).get().value[0], 99u);
      EXPECT_EQ(roam::gas::lget(p).value[0], 99u);  // rget updated it
      roam::gas::invalidate();
      EXPECT_NE(memory_error_of([&] { (void)roam::gas::lget(p); }).find("not in this node's cache"),
                std::string::npos);
      EXPECT_EQ(roam::gas::node_cache_statistics().bytes, 0u);
    } else {
      EXPECT_EQ(roam::gas::get(p).get().value[0], 99u);  // read directly: always current
      EXPECT_EQ(roam::gas::lget(p).value[0], 99u);
    }
    roam::gas::end_phase();
    EXPECT_EQ(roam::gas::node_cache_statistics().bytes, 0u);
  });
}

TEST(GlobalMemoryCache, EntriesArePointerAndCount) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const auto p = blocks_on_right(cache_policy::keep, 1, 3)[0];
    if (!cached_here(p)) return roam::barrier();
    const auto words = roam::reinterpret_pointer_cast<std::uint64_t>(p);
    std::uint64_t two[2];
    roam::gas::get(words, two, 2).get();  // another entry than the block's
    EXPECT_NE(memory_error_of([&] { roam::gas::lget(words, two, 3); }), "");
    roam::gas::lget(words, two, 2);
    EXPECT_EQ(two[1], 3u);
    roam::barrier();
  });
}

TEST(GlobalMemoryCache, LruEvictsTheLeastRecentlyUsedEntry) {
  run_with_cache(3 * entry_charge, [] {
    const auto p = blocks_on_right(cache_policy::lru, 4, 10);
    if (!cached_here(p[0])) return roam::barrier();
    roam::gas::invalidate();
    for (int i = 0; i < 3; ++i) (void)roam::gas::get(p[i]).get();  // a b c
    (void)roam::gas::get(p[0]).get();                              // a is the most recent
    const auto before = roam::gas::node_cache_statistics();
    (void)roam::gas::get(p[3]).get();  // d evicts b
    EXPECT_EQ(roam::gas::node_cache_statistics().evictions - before.evictions, 1u);
    EXPECT_NE(memory_error_of([&] { (void)roam::gas::lget(p[1]); }), "");
    EXPECT_EQ(roam::gas::lget(p[0]).value[0], 10u);
    EXPECT_EQ(roam::gas::lget(p[2]).value[0], 12u);
    EXPECT_EQ(roam::gas::lget(p[3]).value[0], 13u);
    EXPECT_LE(roam::gas::node_cache_statistics().bytes, 3 * entry_charge);
    roam::barrier();
  });
}

TEST(GlobalMemoryCache, AnEntryLargerThanTheCacheLeavesItAlone) {
  run_with_cache(3 * entry_charge, [] {
    const auto p = blocks_on_right(cache_policy::lru, 4, 30);
    const auto big = roam::gas::allocate<block>(roam::this_node(), 10, cache_policy::lru).get();
    const auto bigs = roam::allgather(big);
    if (cached_here(p[0])) {
      roam::gas::invalidate();
      for (int i = 0; i < 3; ++i) (void)roam::gas::get(p[i]).get();
      const auto before = roam::gas::node_cache_statistics();
      // Ten blocks at once (beyond the cache): served, refused, and nothing evicted for it.
      block ten[10];
      roam::gas::get(bigs[right_of(roam::this_node())], ten, 10).get();
      const auto after = roam::gas::node_cache_statistics();
      EXPECT_EQ(after.evictions, before.evictions);
      EXPECT_EQ(after.refused - before.refused, 1u);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(roam::gas::lget(p[i]).value[0], 30u + i);
    }
    roam::barrier();
    roam::gas::deallocate(big).get();
  });
}

TEST(GlobalMemoryCache, LgetOfAnUncachedAllocationIsAnError) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const auto p = blocks_on_right(cache_policy::none, 1, 1)[0];
    (void)roam::gas::get(p).get();
    const char* path = std::getenv("ROAM_GAS_PATH");
    const bool am = path && std::string(path) == "am" && roam::num_nodes() > 1;
    if (roam::gas::local(p) == nullptr || am) {
      EXPECT_NE(memory_error_of([&] { (void)roam::gas::lget(p); }).find("no cache policy"),
                std::string::npos);
    } else {
      EXPECT_EQ(roam::gas::lget(p).value[0], 1u);  // read directly
    }
    roam::barrier();
  });
}

TEST(GlobalMemoryCache, KeepNeverEvictsAndRefusesWhatDoesNotFit) {
  run_with_cache(3 * entry_charge, [] {
    const auto p = blocks_on_right(cache_policy::keep, 4, 20);
    if (!cached_here(p[0])) return roam::barrier();
    roam::gas::invalidate();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(roam::gas::get(p[i]).get().value[0], 20u + i);
    const auto s = roam::gas::node_cache_statistics();
    EXPECT_EQ(s.evictions, 0u);
    EXPECT_GE(s.refused, 1u);
    EXPECT_EQ(roam::gas::lget(p[0]).value[0], 20u);
    EXPECT_NE(memory_error_of([&] { (void)roam::gas::lget(p[3]); }), "");
    roam::barrier();
  });
}

TEST(GlobalMemoryCache, ConcurrentMissesOfOneEntryFetchOnce) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const auto p = blocks_on_right(cache_policy::lru, 1, 5)[0];
    if (!cached_here(p)) return roam::barrier();
    roam::gas::invalidate();
    const auto before = roam::gas::node_cache_statistics();
    std::vector<block> into(16);
    std::vector<roam::future<void>> gets;
    gets.reserve(into.size());
    for (auto& b : into) gets.push_back(roam::gas::get(p, &b, 1));
    roam::when_all(std::move(gets)).get();
    for (const auto& b : into) EXPECT_EQ(b.value[7], 5u);
    const auto after = roam::gas::node_cache_statistics();
    EXPECT_EQ(after.misses - before.misses, 1u);
    EXPECT_EQ(after.hits - before.hits + after.joined - before.joined, 15u);
    EXPECT_EQ(after.fetched_bytes - before.fetched_bytes, sizeof(block));
    roam::barrier();
  });
}

TEST(GlobalMemoryCache, CachesExactlyWhatIsNotReadDirectly) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const auto p = blocks_on_right(cache_policy::keep, 1, 1)[0];
    const char* path = std::getenv("ROAM_GAS_PATH");
    const bool am = path && std::string(path) == "am";
    const bool other_process = roam::gas::local(p) == nullptr;
    EXPECT_EQ(cached_here(p), other_process || (am && roam::num_nodes() > 1));
    roam::barrier();
  });
}

TEST(GlobalMemoryCache, ACachedArrayFetchesEachBlockOnceForAllTasks) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const roam::node_id me = roam::this_node();
    constexpr std::size_t count = 1000, block = 64;
    const auto mine = roam::gas::allocate<std::int64_t>(me, count).get();
    for (std::size_t i = 0; i < count; ++i)
      roam::gas::local(mine, count)[i] = std::int64_t(me) * 100000 + std::int64_t(i);
    const auto theirs = roam::allgather(mine)[right_of(me)];
    const bool copied = roam::gas::local(theirs) == nullptr;
    roam::gas::cached_array<std::int64_t> array(theirs, count, block);
    std::atomic<long> wrong{0};
    roam::parallel_for(
        std::size_t{0}, count * 4,
        [&](std::size_t k) {
          const std::size_t i = (k * 7919) % count;  // every element, four times, out of order
          if (array[i] != std::int64_t(right_of(me)) * 100000 + std::int64_t(i)) ++wrong;
        },
        16);
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(array.size(), count);
    EXPECT_EQ(array.fetches(), copied ? (count + block - 1) / block : 0u);
    EXPECT_EQ(array.fetched_bytes(), copied ? count * sizeof(std::int64_t) : 0u);
    roam::barrier();
    roam::gas::deallocate(mine).get();
    roam::barrier();
    if (copied) {  // a fetch from freed memory is the reader's error; read blocks stay
      roam::gas::cached_array<std::int64_t> late(theirs, count, block);
      EXPECT_NE(memory_error_of([&] { (void)late[0]; }), "");
      EXPECT_NE(memory_error_of([&] { (void)late[0]; }), "");  // tried again, not stuck
    }
    roam::barrier();
  });
}

// Regression: readers of a block another task was fetching yielded in a loop, so every one
// stayed runnable; with more threads than cores they took the CPU from the processes whose
// progress the fetch needed (seconds per phase in examples/ebms with 4 ranks on 2 cores).
// Here the owner is busy for a while: the readers must wait without using the CPU. It checks
// where the fetch needs the owner (another process, or ROAM_GAS_PATH=am); where node 0 reads
// the memory directly there is nothing to wait for.
constexpr std::chrono::milliseconds owner_busy{400};

TEST(GlobalMemoryCache, ReadersOfABlockInFlightWaitWithoutSpinning) {
  roam::config cfg = roam::config::from_environment();
  cfg.set("threads", "1");
  ASSERT_EQ(
      roam::run(
          cfg,
          [] {
            const roam::node_id me = roam::this_node();
            const auto mine = roam::gas::allocate<std::int64_t>(me, 64).get();
            std::fill_n(roam::gas::local(mine, 64), 64, std::int64_t(me));
            const auto theirs = roam::allgather(mine)[right_of(me)];
            const bool copied = roam::gas::local(theirs) == nullptr;
            roam::barrier();
            if (me == 1) {
              // The owner's worker and application thread both busy: the first
              // fetch of its memory (which asks it) waits for them.
              roam::send(me, [] { std::this_thread::sleep_for(owner_busy); });
              std::this_thread::sleep_for(owner_busy);
            }
            if (me == 0 && copied && roam::num_nodes() > 1) {
              roam::gas::cached_array<std::int64_t> array(theirs, 64, 64);
              const auto cpu = [] {
                timespec t{};
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
                return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
              };
              const double cpu_before = cpu();
              const auto start = std::chrono::steady_clock::now();
              std::atomic<int> wrong{0};
              roam::parallel_for(
                  0, 32, [&](int) { wrong += array[7] != 1 ? 1 : 0; }, 1);
              const double wall =
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
              const double used = cpu() - cpu_before;
              EXPECT_EQ(wrong.load(), 0);
              EXPECT_EQ(array.fetches(), 1u);
              // Spinning readers use about all of the wait on every thread.
              if (wall > 0.2) {
                EXPECT_LT(used, 0.5 * wall)
                    << "readers used " << used << " s of CPU in " << wall << " s";
              }
            }
            roam::barrier();
            roam::gas::deallocate(mine).get();
          }),
      0);
}

// Regression: an application thread waiting for a block (the first reader of a phase) ran
// every task it found, each of which started, met the block in flight and suspended, and
// polled the network only when none was left: the request for the block and its reply went
// unreceived meanwhile (5-40 ms of every phase in examples/barnes_hut on 2 ranks). Counted
// here: the tasks started when the first read completed. Every node reads its right
// neighbour's memory at once, as the walks do; where that memory is read directly (nodes of
// one process) nothing is fetched.
TEST(GlobalMemoryCache, AReaderWaitingForABlockKeepsTheNetworkGoing) {
  roam::config cfg = roam::config::from_environment();
  cfg.set("threads", "1");
  ASSERT_EQ(roam::run(cfg,
                      [] {
                        const roam::node_id me = roam::this_node();
                        const auto mine = roam::gas::allocate<std::int64_t>(me, 64).get();
                        std::fill_n(roam::gas::local(mine, 64), 64, std::int64_t(me));
                        const auto theirs = roam::allgather(mine)[right_of(me)];
                        const bool copied = roam::gas::local(theirs) == nullptr;
                        roam::barrier();
                        if (copied) {
                          roam::gas::cached_array<std::int64_t> array(theirs, 64, 64);
                          constexpr int tasks = 2000;
                          std::atomic<int> started{0}, started_at_first_read{-1}, wrong{0};
                          roam::parallel_for(
                              0, tasks,
                              [&](int) {
                                started.fetch_add(1);
                                // Some work before the read: a thread that never polls starts
                                // them all long before any reply could come.
                                const auto until = std::chrono::steady_clock::now() +
                                                   std::chrono::microseconds(20);
                                while (std::chrono::steady_clock::now() < until) {
                                }
                                if (array[7] != std::int64_t(right_of(me))) ++wrong;
                                int none = -1;
                                started_at_first_read.compare_exchange_strong(none, started.load());
                              },
                              1);
                          EXPECT_EQ(wrong.load(), 0);
                          EXPECT_EQ(array.fetches(), 1u);
                          // 1996-2000 before the fix; a scheduling period or two of other ranks (3
                          // ranks on 2 cores) lets several hundred start meanwhile, hence the
                          // margin.
                          EXPECT_LT(started_at_first_read.load(), tasks - 100);
                        }
                        roam::barrier();
                        roam::gas::deallocate(mine).get();
                      }),
            0);
}

TEST(GlobalMemoryCache, UncachedAllocationsAlwaysFetch) {
  run_with_cache(std::uint64_t{1} << 20, [] {
    const auto p = blocks_on_right(cache_policy::none, 1, 1)[0];
    const auto before = roam::gas::node_cache_statistics();
    for (int i = 0; i < 5; ++i) (void)roam::gas::get(p).get();
    const auto after = roam::gas::node_cache_statistics();
    EXPECT_EQ(after.hits, before.hits);
    EXPECT_EQ(after.misses, before.misses);
    roam::barrier();
  });
}

}  // namespace
