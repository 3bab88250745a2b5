// The bale kernels built on channels (examples/bale/) give exactly the serial results, in
// one process with 1-4 virtual nodes and under mpiexec with 2-4 ranks. Each node checks
// its own share against a serial replay of every node's random stream.
#include "bale/histogram.hpp"
#include "bale/index_gather.hpp"
#include "bale/toposort.hpp"

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
                              bale::histogram_table.local(),
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
                            bale::index_gather_state.local().gathered,
                            bale::index_gather_serial(setup, roam::num_nodes(), roam::this_node()));
                      }),
            0);
}

TEST(Bale, ToposortSerialReferenceIsUpperTriangular) {
  bale::toposort_setup setup;
  setup.rows_per_node = 3000;
  for (std::uint32_t nodes : {1u, 3u}) {
    const auto matrix = bale::toposort_matrix(setup, nodes);
    EXPECT_GT(matrix.nonzeros(), 5u * matrix.rows);  // the diagonal and ~5 more per row
    const auto result = bale::toposort_serial(matrix, nodes);
    EXPECT_TRUE(bale::toposort_is_upper_triangular(matrix, result));
    auto broken = result;  // the check itself must notice a wrong answer
    std::swap(broken.row_position[0], broken.row_position[1]);
    std::swap(broken.row_position[2], broken.row_position[3]);
    EXPECT_FALSE(bale::toposort_is_upper_triangular(matrix, broken));
  }
}

TEST(Bale, ToposortEqualsTheSerialPermutations) {
  bale::toposort_setup setup;
  setup.rows_per_node = 2000;
  ASSERT_EQ(roam::run(one_worker_per_node(),
                      [&] {
                        const auto matrix = bale::toposort_matrix(setup, roam::num_nodes());
                        const auto expected = bale::toposort_serial(matrix, roam::num_nodes());
                        for (int round = 0; round < 2; ++round) {  // the kernel may run again
                          bale::toposort_roam(matrix);
                          EXPECT_TRUE(
                              bale::toposort_share_equals(bale::toposort_state.local(), expected));
                        }
                      }),
            0);
}

}  // namespace
