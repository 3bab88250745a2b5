// The bale kernels built on channels (examples/bale/) give exactly the serial results, in
// one process with 1-4 virtual nodes and under mpiexec with 2-4 ranks. Each node checks
// its own share against a serial replay of every node's random stream.
#include "bale/histogram.hpp"
#include "bale/index_gather.hpp"

#include <gtest/gtest.h>

namespace {

roam::config one_worker_per_node() {
  return bale::one_worker_per_node(roam::config::from_environment());
}

TEST(Bale, HistogramEqualsTheSerialCount) {
  bale::histogram_setup setup;
  setup.updates = 200'000;
  setup.table_size = 1 << 12;  // many updates per slot: lost or doubled ones show
  ASSERT_EQ(roam::run(one_worker_per_node(),
                      [&] {
                        for (int round = 0; round < 2; ++round) {  // the kernel may run again
                          bale::histogram_roam(setup);
                          EXPECT_EQ(
                              bale::histogram_tables().mine(),
                              bale::histogram_serial(setup, roam::num_nodes(), roam::this_node()));
                        }
                      }),
            0);
}

TEST(Bale, IndexGatherEqualsTheSerialReads) {
  bale::index_gather_setup setup;
  setup.requests = 150'000;
  setup.table_size = 1 << 14;
  ASSERT_EQ(roam::run(one_worker_per_node(),
                      [&] {
                        bale::index_gather_roam(setup);
                        EXPECT_EQ(
                            bale::index_gather_nodes().mine().gathered,
                            bale::index_gather_serial(setup, roam::num_nodes(), roam::this_node()));
                      }),
            0);
}

}  // namespace
