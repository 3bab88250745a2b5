// WARD regions: every node's writes merged at close (disjoint bytes keep each writer's value,
// overlapping bytes the highest-numbered writer's, unwritten bytes the memory's), reads of
// a node's own writes, the checker catching a read-after-write across nodes, and misuse.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

template <class Body>
void run_everywhere(Body body) {
  ASSERT_EQ(roam::run(roam::config::from_environment(), body), 0);
}

/// A block of `count` zeroed T on node 0, known to every node.
template <class T>
roam::global_ptr<T> zeroed_on_node0(std::size_t count) {
  roam::global_ptr<T> p;
  if (roam::this_node() == 0) {
    p = roam::gas::allocate<T>(0, count).get();
    std::memset(static_cast<void*>(roam::gas::local(p, count)), 0, count * sizeof(T));
  }
  return roam::broadcast_value(p, 0);
}

TEST(WardRegion, DisjointWritesOfEveryNodeAreMerged) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const std::size_t count = std::size_t{8} * n;
    const auto p = zeroed_on_node0<std::int64_t>(count);
    roam::gas::ward_region<std::int64_t> r(roam::collective, p, count);
    for (std::size_t i = me; i < count; i += n) r.write(i, std::int64_t(i) * 10 + 1);
    for (std::size_t i = me; i < count; i += n) EXPECT_EQ(r.read(i), std::int64_t(i) * 10 + 1);
    r.close();
    EXPECT_FALSE(r.is_open());
    std::vector<std::int64_t> back(count);
    roam::gas::get(p, back.data(), count).get();
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(back[i], std::int64_t(i) * 10 + 1) << i;
    roam::barrier();
    if (me == 0) roam::gas::deallocate(p).get();
  });
}

TEST(WardRegion, OverlappingBytesTakeTheHighestNumberedWriter) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const auto p = zeroed_on_node0<std::uint8_t>(64);
    {
      roam::gas::ward_region<std::uint8_t> r(roam::collective, p, 64);
      r.write(0, std::uint8_t(100 + me));       // every node: the highest id wins
      r.write(1 + me, std::uint8_t(200 + me));  // each node its own byte
      // Lower-numbered nodes write byte 40 last in time: the rule, not the timing, decides.
      if (me + 1 == n) r.write(40, std::uint8_t(7));
      roam::barrier();
      if (me + 1 != n) r.write(40, std::uint8_t(8 + me));
      EXPECT_EQ(r.read(0), std::uint8_t(100 + me));  // a node reads its own write
      r.close();
    }
    std::vector<std::uint8_t> back(64);
    roam::gas::get(p, back.data(), 64).get();
    EXPECT_EQ(back[0], std::uint8_t(100 + n - 1));
    for (roam::node_id k = 0; k < n; ++k) EXPECT_EQ(back[1 + k], std::uint8_t(200 + k));
    EXPECT_EQ(back[40], std::uint8_t(7));
    EXPECT_EQ(back[63], 0);  // nobody wrote it
    roam::barrier();
    if (me == 0) roam::gas::deallocate(p).get();
  });
}

TEST(WardRegion, UnwrittenBytesKeepWhatTheMemoryHolds) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node();
    const auto p = zeroed_on_node0<std::int32_t>(16);
    roam::gas::ward_region<std::int32_t> r(roam::collective, p, 16);
    if (me == 0) r.write(3, 33);
    roam::barrier();
    if (me == 0) roam::gas::local(p)[9] = 99;  // outside the region's writes: kept
    roam::barrier();
    EXPECT_EQ(r.read(9), 0);  // the copy is the memory as the region opened
    r.close();
    EXPECT_EQ(roam::gas::get(p + 9).get(), 99);
    EXPECT_EQ(roam::gas::get(p + 3).get(), 33);
    roam::barrier();
    if (me == 0) roam::gas::deallocate(p).get();
  });
}

TEST(WardRegion, TheCheckerCatchesAReadAfterWriteAcrossNodes) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const auto p = zeroed_on_node0<std::int32_t>(16);
    {
      // A node reading what it wrote itself, and bytes nobody wrote, keeps the contract.
      roam::gas::ward_region<std::int32_t> r(roam::collective, p, 16, roam::gas::ward_check::on);
      r.write(me % 16, int(me));
      EXPECT_EQ(r.read(me % 16), int(me));
      EXPECT_EQ(r.read(15), 0);
      EXPECT_NO_THROW(r.close());  // (nodes write distinct elements: the tests run < 16 nodes)
    }
    if (n >= 2) {
      roam::gas::ward_region<std::int32_t> r(roam::collective, p, 16, roam::gas::ward_check::on);
      if (me == 1) r.write(5, 55);
      if (me == 0) (void)r.read(5);  // whatever it saw, node 1 wrote it: not WARD
      std::string error;
      try {
        r.close();
      } catch (const roam::usage_error& e) {
        error = e.what();
      }
      EXPECT_NE(error.find("node 0 read byte 20"), std::string::npos) << error;
      EXPECT_NE(error.find("node 1 wrote"), std::string::npos) << error;
      EXPECT_EQ(roam::gas::get(p + 5).get(), 55);  // merged all the same
    }
    roam::barrier();
    if (me == 0) roam::gas::deallocate(p).get();
  });
}

TEST(WardRegion, MisuseIsAClearError) {
  run_everywhere([] {
    const roam::node_id me = roam::this_node(), n = roam::num_nodes();
    const auto p = zeroed_on_node0<std::int32_t>(8);
    roam::gas::ward_region<std::int32_t> r(roam::collective, p, 8);
    EXPECT_THROW(r.write(8, 1), roam::usage_error);
    EXPECT_THROW((void)r.read(7 + 1), roam::usage_error);
    r.close();
    EXPECT_THROW((void)r.read(0), roam::usage_error);
    EXPECT_THROW(r.close(), roam::usage_error);
    if (n >= 2) {
      // Nodes that open different ranges: every node is told.
      EXPECT_THROW(roam::gas::ward_region<std::int32_t>(roam::collective, p, me == 0 ? 8 : 4),
                   roam::usage_error);
      // One node's range leaves the allocation: it cannot fetch its copy, and every node is
      // told instead of waiting for it.
      EXPECT_THROW(roam::gas::ward_region<std::int32_t>(roam::collective, p, me == 0 ? 9 : 8),
                   roam::memory_error);
      // A node whose symmetric allocation fails: every node is told.
      EXPECT_THROW(roam::gas::distributed_array<char>(roam::collective,
                                                      me == 0 ? (std::uint64_t{1} << 40) : 8),
                   roam::error);
    }
    roam::barrier();
    if (me == 0) roam::gas::deallocate(p).get();
  });
}

}  // namespace
