// Global memory (roam::gas): allocation, get/put, strided and indexed transfers, atomics,
// counters, put_then, gvar and distributed_array, and the errors of bad pointers. In one
// process with 1-4 virtual nodes (direct copies, and with ROAM_GAS_PATH=am active messages)
// and under mpiexec.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {

template <class Body>
void run_everywhere(Body body) {
  ASSERT_EQ(roam::run(roam::config::from_environment(), body), 0);
}

roam::node_id right_of(roam::node_id me) { return (me + 1) % roam::num_nodes(); }

/// The message of the memory_error `f` throws ("" when it throws none).
template <class F>
std::string memory_error_of(F&& f) {
  try {
    f();
  } catch (const roam::memory_error& e) {
    EXPECT_EQ(e.code(), roam::errc::global_memory);
    return e.message();
  }
  return "";
}

TEST(GlobalMemory, PutThenGetRoundTripsThroughTheRightNeighboursHeap) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    const auto p = roam::gas::allocate<int>(right_of(me), 1000).get();
    EXPECT_EQ(p.where(), right_of(me));
    std::vector<int> out(1000), in(1000, -1);
    std::iota(out.begin(), out.end(), int(me) * 10000);
    roam::gas::put(p, out.data(), out.size()).get();
    roam::gas::get(p, in.data(), in.size()).get();
    EXPECT_EQ(in, out);
    EXPECT_EQ(roam::gas::get(p + 17).get(), int(me) * 10000 + 17);
    roam::gas::put(p + 3, -5).get();
    EXPECT_EQ(roam::gas::get(p + 3).get(), -5);
    // Once the owner granted a lease, another process's memory is copied by RMA; a node of
    // this process directly (unless ROAM_GAS_PATH=am sends everything to the owner).
    const auto before = roam::gas::node_path_statistics();
    for (int i = 0; i < 200; ++i) (void)roam::gas::get(p + i % 1000).get();
    const auto after = roam::gas::node_path_statistics();
    EXPECT_EQ(
        after.direct + after.rma + after.messages - before.direct - before.rma - before.messages,
        200u);
    const char* path = std::getenv("ROAM_GAS_PATH");
    const bool am_only = path && std::string(path) == "am";
    const bool other_process = roam::gas::local(p) == nullptr;
    if (am_only && roam::num_nodes() > 1) {
      EXPECT_EQ(after.messages - before.messages, 200u);
    } else if (other_process) {
      EXPECT_LT(after.messages - before.messages, 10u);  // before the lease came
      EXPECT_GT(after.rma - before.rma, 190u);
    } else {
      EXPECT_EQ(after.direct - before.direct, 200u);
    }
    roam::gas::deallocate(p).get();
    roam::barrier();
  });
}

TEST(GlobalMemory, PointersSentToOtherNodesNameTheSameMemory) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const auto mine = roam::gas::allocate<long>(me, 64).get();
    long* here = roam::gas::local(mine, 64);
    ASSERT_NE(here, nullptr);  // a node's own memory is always in its process
    for (int i = 0; i < 64; ++i) here[i] = long(me) * 1000 + i;
    const auto all = roam::allgather(mine);
    ASSERT_EQ(all.size(), n);
    std::vector<long> seen(64);
    roam::gas::get(all[right_of(me)], seen.data(), 64).get();
    for (int i = 0; i < 64; ++i) EXPECT_EQ(seen[i], long(right_of(me)) * 1000 + i);
    roam::barrier();  // nobody reads `mine` after this
    roam::gas::deallocate(mine).get();
  });
}

// Regression: global_ptr had no serialize(), so a vector of them (or a structure holding one)
// could not be sent.
struct named_pointers {
  std::string name;
  std::vector<roam::global_ptr<long>> pointers;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(name, pointers);
  }
};

TEST(GlobalMemory, PointersInsideSerializedValuesNameTheSameMemory) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    std::vector<roam::global_ptr<long>> mine;
    for (int k = 0; k < 3; ++k) {
      mine.push_back(roam::gas::allocate<long>(me, 1).get());
      *roam::gas::local(mine.back()) = long(me) * 10 + k;
    }
    const auto all = roam::allgather(named_pointers{"node " + std::to_string(me), mine});
    const named_pointers& theirs = all[right_of(me)];
    EXPECT_EQ(theirs.name, "node " + std::to_string(right_of(me)));
    ASSERT_EQ(theirs.pointers.size(), 3u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(theirs.pointers[k].where(), right_of(me));
      EXPECT_EQ(roam::gas::get(theirs.pointers[k]).get(), long(right_of(me)) * 10 + k);
    }
    roam::barrier();
    for (const auto& p : mine) roam::gas::deallocate(p).get();
  });
}

TEST(GlobalMemory, AFreeRecallsTheLeasesOfOtherProcessesFirst) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    for (int round = 0; round < 3; ++round) {
      const auto mine = roam::gas::allocate<int>(me, 16).get();
      std::fill_n(roam::gas::local(mine, 16), 16, int(me) + round);
      const auto all = roam::allgather(mine);
      const auto theirs = all[right_of(me)];
      for (int i = 0; i < 50; ++i)
        ASSERT_EQ(roam::gas::get(theirs + i % 16).get(), int(right_of(me)) + round);
      // Another process's memory is copied by RMA once the owner's lease came (a reply that
      // may take a while on a loaded machine): the free below must recall it.
      if (roam::gas::local(theirs) == nullptr && !std::getenv("ROAM_GAS_PATH")) {
        const auto before = roam::gas::node_path_statistics();
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (roam::gas::node_path_statistics().rma == before.rma &&
               std::chrono::steady_clock::now() < give_up)
          ASSERT_EQ(roam::gas::get(theirs + 3).get(), int(right_of(me)) + round);
        EXPECT_GT(roam::gas::node_path_statistics().rma, before.rma);
      }
      roam::barrier();
      // The owner frees memory other processes read by RMA: each gives its lease back first,
      // and its next access goes to the owner, which refuses it.
      roam::gas::deallocate(mine).get();
      roam::barrier();
      EXPECT_NE(memory_error_of([&] { (void)roam::gas::get(theirs).get(); }).find("not allocated"),
                std::string::npos);
      EXPECT_NE(memory_error_of([&] { roam::gas::put(theirs, 1).get(); }), "");
      roam::barrier();
    }
  });
}

TEST(GlobalMemory, StridedAndIndexedTransfersMoveExactlyTheirElements) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    const auto p = roam::gas::allocate<int>(right_of(me), 100).get();
    std::vector<int> zeros(100, 0);
    roam::gas::put(p, zeros.data(), 100).get();
    // Columns 1..2 of a 10 x 10 matrix (row stride 10) from a packed 10 x 2 source.
    std::vector<int> source(20);
    std::iota(source.begin(), source.end(), 1);
    roam::gas::put_strided(p + 1, 10, source.data(), 2, 2, 10).get();
    std::vector<int> all(100);
    roam::gas::get(p, all.data(), 100).get();
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 10; ++c)
        EXPECT_EQ(all[r * 10 + c], (c == 1 || c == 2) ? source[r * 2 + c - 1] : 0) << r << "," << c;
    std::vector<int> column(30, -1);
    roam::gas::get_strided(p + 2, 10, column.data(), 3, 1, 10).get();
    for (int r = 0; r < 10; ++r) {
      EXPECT_EQ(column[std::size_t(r) * 3], source[std::size_t(r) * 2 + 1]);
      EXPECT_EQ(column[std::size_t(r) * 3 + 1], -1);  // between the blocks: untouched
    }
    const std::vector<std::uint64_t> at{99, 0, 50, 7};
    const std::vector<int> values{9, 8, 7, 6};
    roam::gas::put_indexed(p, std::span<const std::uint64_t>(at), values.data()).get();
    std::vector<int> back(4);
    roam::gas::get_indexed(p, std::span<const std::uint64_t>(at), back.data()).get();
    EXPECT_EQ(back, values);
    EXPECT_EQ(roam::gas::get(p + 99).get(), 9);
    roam::gas::deallocate(p).get();
    roam::barrier();
  });
}

TEST(GlobalMemory, AtomicsFromEveryNodeAreNotLost) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    roam::gas::gvar<long> total(roam::collective, 0L);
    roam::gas::gvar<std::int32_t> low(roam::collective, 1000);
    roam::gas::gvar<std::uint64_t> high(roam::collective, std::uint64_t{0});
    roam::gas::counter adds;
    for (int i = 0; i < 100; ++i) adds.add(roam::gas::fetch_add(total.on(0), 1L));
    adds.wait();
    (void)roam::gas::fetch_min(low.on(0), std::int32_t(me) - 5).get();
    (void)roam::gas::fetch_max(high.on(0), std::uint64_t{me} * 3).get();
    roam::barrier();
    if (me == 0) {
      EXPECT_EQ(total.local(), 100L * n);
      EXPECT_EQ(low.local(), -5);
      EXPECT_EQ(high.local(), std::uint64_t{n - 1} * 3);
    }
    roam::barrier();
    // compare_exchange: exactly one node wins the slot.
    roam::gas::gvar<std::int64_t> owner(roam::collective, std::int64_t{-1});
    const auto seen =
        roam::gas::compare_exchange(owner.on(0), std::int64_t{-1}, std::int64_t(me)).get();
    const long winners = roam::allreduce(seen == -1 ? 1L : 0L, std::plus<>{});
    EXPECT_EQ(winners, 1);
    const auto final_owner = roam::gas::atomic_load(owner.on(0)).get();
    EXPECT_GE(final_owner, 0);
    EXPECT_LT(final_owner, std::int64_t(n));
    roam::barrier();  // every node read the winner before one replaces it
    if (me == n - 1) {
      EXPECT_EQ(roam::gas::exchange(owner.on(0), std::int64_t{42}).get(), final_owner);
    }
    roam::barrier();
    EXPECT_EQ(roam::gas::atomic_load(owner.on(0)).get(), 42);
    roam::barrier();
  });
}

TEST(GlobalMemory, ACounterWaitsForItsWholeGroup) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    const auto p = roam::gas::allocate<double>(right_of(me), 500).get();
    roam::gas::counter done;
    for (int i = 0; i < 500; ++i) done.add(roam::gas::put(p + i, double(i) / 2));
    done.wait();
    EXPECT_EQ(done.pending(), 0u);
    std::vector<double> back(500);
    roam::gas::get(p, back.data(), 500).get();
    for (int i = 0; i < 500; ++i) EXPECT_EQ(back[i], double(i) / 2);
    // An error of one operation comes out of wait(), once.
    roam::gas::deallocate(p).get();
    done.add(roam::gas::put(p, 1.0));
    EXPECT_NE(memory_error_of([&] { done.wait(); }), "");
    done.wait();  // the error was reported
    roam::barrier();
  });
}

roam::node_local<std::atomic<long>> arrived_sum;

void sum_arrived(roam::global_ptr<long> where, long count) {
  long* data = roam::gas::local(where, count);
  long sum = 0;
  for (long i = 0; i < count; ++i) sum += data[i];
  arrived_sum.local() += sum;
}

TEST(GlobalMemory, PutThenRunsItsHandlerOnTheOwnerAfterTheData) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const auto slot = roam::gas::allocate<long>(me, 10).get();
    const auto slots = roam::allgather(slot);
    const auto target = slots[right_of(me)];
    const std::vector<long> values(10, long(me) + 1);
    roam::gas::put_then(target, values.data(), values.size(), &sum_arrived, target, 10L).get();
    roam::barrier_all_handled();
    const roam::node_id left = (me + n - 1) % n;
    EXPECT_EQ(arrived_sum.local().load(), 10L * (long(left) + 1));
    roam::barrier();
    roam::gas::deallocate(slot).get();
  });
}

TEST(GlobalMemory, AGvarHasOneInstancePerNode) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    struct pair_value {
      int a;
      double b;
    };
    roam::gas::gvar<pair_value> v(roam::collective, pair_value{7, 0.5});
    EXPECT_EQ(v.local().a, 7);
    roam::barrier();
    v.put(right_of(me), pair_value{int(me), double(me) * 2}).get();
    roam::barrier();
    const roam::node_id left = (me + roam::num_nodes() - 1) % roam::num_nodes();
    EXPECT_EQ(v.local().a, int(left));
    EXPECT_EQ(v.get(right_of(me)).get().b, double(me) * 2);
    roam::barrier();
  });
}

void check_distribution(roam::gas::distribution layout, std::uint64_t size) {
  const roam::node_id me = roam::this_node(), n = roam::num_nodes();
  roam::gas::distributed_array<std::int64_t> x(roam::collective, size, layout, std::int64_t{-1});
  std::uint64_t held = 0;
  for (roam::node_id k = 0; k < n; ++k) held += x.local_size(k);
  EXPECT_EQ(held, size);
  auto part = x.local();
  ASSERT_EQ(part.size(), x.local_size(me));
  for (std::uint64_t i = 0; i < part.size(); ++i) {
    const std::uint64_t g = x.global_index(me, i);
    EXPECT_EQ(x.place(g).node, me);
    EXPECT_EQ(x.place(g).offset, i);
    part[i] = std::int64_t(g) * 3;
  }
  roam::barrier();
  std::vector<std::int64_t> all(size, -7);
  x.get(0, size, all.data()).get();
  for (std::uint64_t g = 0; g < size; ++g) ASSERT_EQ(all[g], std::int64_t(g) * 3) << g;
  if (size > 3) {
    EXPECT_EQ(x.get(size - 2).get(), std::int64_t(size - 2) * 3);
    std::vector<std::int64_t> middle(size - 3);
    x.get(1, size - 3, middle.data()).get();
    for (std::uint64_t i = 0; i < middle.size(); ++i) EXPECT_EQ(middle[i], std::int64_t(i + 1) * 3);
  }
  roam::barrier();
  if (me == 0) {
    std::vector<std::int64_t> ones(size, 1);
    x.put(0, size, ones.data()).get();
  }
  roam::barrier();
  for (std::int64_t v : x.local()) EXPECT_EQ(v, 1);
  EXPECT_THROW((void)x.get(size), roam::usage_error);
  roam::barrier();
}

TEST(GlobalMemory, DistributedArraysMapEveryIndexToOneNode) {
  run_everywhere([] {
    for (auto layout : {roam::gas::distribution::block, roam::gas::distribution::cyclic})
      for (std::uint64_t size : {1u, 7u, 1000u}) check_distribution(layout, size);
  });
}

TEST(GlobalMemory, LargeTransfersArriveWhole) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    const std::size_t count = (std::size_t{3} << 20) / sizeof(std::uint32_t);  // 3 MiB
    const auto p = roam::gas::allocate<std::uint32_t>(right_of(me), count).get();
    std::vector<std::uint32_t> out(count), in(count);
    for (std::size_t i = 0; i < count; ++i) out[i] = std::uint32_t(i * 2654435761u + me);
    roam::gas::put(p, out.data(), count).get();
    roam::gas::get(p, in.data(), count).get();
    EXPECT_TRUE(in == out);
    roam::gas::deallocate(p).get();
    roam::barrier();
  });
}

TEST(GlobalMemory, BadPointersAreClearErrorsAndCorruptNothing) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const roam::node_id other = right_of(me);
    int x = 0;
    EXPECT_NE(
        memory_error_of([&] { (void)roam::gas::get(roam::global_ptr<int>()).get(); }).find("null"),
        std::string::npos);
    EXPECT_NE(memory_error_of([&] { roam::gas::put(roam::global_ptr<int>(), 1).get(); }), "");
    // Out of bounds: nothing is written, even the bytes that were in bounds.
    const auto p = roam::gas::allocate<int>(other, 4).get();
    const std::vector<int> zeros(4, 0), five(5, 5);
    roam::gas::put(p, zeros.data(), 4).get();
    EXPECT_NE(memory_error_of([&] { roam::gas::put(p, five.data(), 5).get(); }).find("leave"),
              std::string::npos);
    EXPECT_NE(memory_error_of([&] { roam::gas::get(p + 2, &x, 3).get(); }), "");
    std::vector<int> back(4, -1);
    roam::gas::get(p, back.data(), 4).get();
    EXPECT_EQ(back, zeros);
    // Freed: by its owner or any node; every copy of the pointer is refused afterwards.
    const auto all = roam::allgather(p);
    roam::barrier();
    if (me == 0) roam::gas::deallocate(all[n - 1]).get();
    roam::barrier();
    const auto freed = all[(me + n - 1) % n];  // allocated by my left neighbour, on me
    if (me == 0 || n == 1) {
      EXPECT_NE(memory_error_of([&] { roam::gas::put(all[n - 1], 1).get(); }).find("not allocated"),
                std::string::npos);
      EXPECT_NE(memory_error_of([&] { roam::gas::deallocate(all[n - 1]).get(); }), "");
    }
    (void)freed;
    roam::barrier();
    if (me != n - 1) roam::gas::deallocate(p).get();
    // A new allocation (in another slot) works beside the freed pointer.
    const auto again = roam::gas::allocate<int>(other, 4).get();
    EXPECT_NE(memory_error_of([&] { (void)roam::gas::get(p).get(); }), "");
    roam::gas::put(again, 3).get();
    EXPECT_EQ(roam::gas::get(again).get(), 3);
    roam::gas::deallocate(again).get();
    // Misaligned atomics and symmetric allocations are refused; an exhausted heap says so.
    const auto bytes = roam::gas::allocate<std::byte>(other, 16).get();
    EXPECT_NE(
        memory_error_of([&] {
          (void)roam::gas::fetch_add(roam::reinterpret_pointer_cast<long>(bytes + 4), 1L).get();
        }).find("aligned"),
        std::string::npos);
    roam::gas::deallocate(bytes).get();
    roam::gas::gvar<int> g(roam::collective, 0);
    EXPECT_NE(memory_error_of([&] { roam::gas::deallocate(g.on(other)).get(); }).find("symmetric"),
              std::string::npos);
    EXPECT_NE(memory_error_of([&] {
                (void)roam::gas::allocate<char>(other, std::size_t{1} << 40).get();
              }).find("cannot hold"),
              std::string::npos);
    EXPECT_THROW((void)roam::gas::allocate<int>(n, 1), roam::usage_error);
    roam::barrier();
  });
}

TEST(GlobalMemory, AReusedSlotDoesNotReviveItsOldPointers) {
  roam::config cfg = roam::config::from_environment();
  cfg.set("gas-max-allocations", "16");  // slots are reused first in, first out
  ASSERT_EQ(roam::run(cfg,
                      [] {
                        const roam::node_id other = right_of(roam::this_node());
                        const auto old = roam::gas::allocate<int>(other, 4).get();
                        roam::gas::put(old, 7).get();
                        roam::gas::deallocate(old).get();
                        std::vector<roam::global_ptr<int>> later;
                        later.reserve(15);
                        for (int i = 0; i < 15; ++i)
                          later.push_back(roam::gas::allocate<int>(other, 4).get());
                        // The other nodes allocate on `other` too: each node frees what it holds,
                        // so that every node's next allocation reuses a freed slot.
                        roam::barrier();
                        for (auto& p : later) roam::gas::deallocate(p).get();
                        roam::barrier();
                        std::vector<roam::global_ptr<int>> reused;
                        reused.reserve(16);
                        for (int i = 0; i < 16 / int(roam::num_nodes()); ++i)
                          reused.push_back(roam::gas::allocate<int>(other, 4).get());
                        for (auto& p : reused) roam::gas::put(p, 9).get();
                        EXPECT_NE(memory_error_of([&] { (void)roam::gas::get(old).get(); }), "");
                        EXPECT_NE(memory_error_of([&] { roam::gas::put(old, 1).get(); }), "");
                        for (auto& p : reused) EXPECT_EQ(roam::gas::get(p).get(), 9);
                        roam::barrier();
                        for (auto& p : reused) roam::gas::deallocate(p).get();
                        roam::barrier();
                      }),
            0);
}

TEST(GlobalMemory, OnlyTheStartOfAnAllocationFreesIt) {
  run_everywhere([] {
    const auto p = roam::gas::allocate<int>(right_of(roam::this_node()), 8).get();
    EXPECT_NE(
        memory_error_of([&] { roam::gas::deallocate(p + 2).get(); }).find("into its allocation"),
        std::string::npos);
    roam::gas::put(p + 7, 3).get();  // still allocated
    roam::gas::deallocate(p).get();
    roam::barrier();
  });
}

TEST(GlobalMemory, OperationsOutsideARunAreUsageErrors) {
  EXPECT_THROW((void)roam::gas::allocate<int>(0, 1), roam::usage_error);
  EXPECT_THROW((void)roam::gas::get(roam::global_ptr<int>()), roam::usage_error);
}

}  // namespace
