// A node whose threads are busy with a fork-join tree still answers other nodes: a join runs
// the tree's tasklets inline and never returns to the worker loop, so it polls the network
// and lets queued arrivals run every so often (serve_arrivals_if_due). Before that, a request
// to such a node (a roam::call, a global memory request) waited until one of its threads ran
// out of tasklets.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

namespace {

constexpr int leaves = 400;
std::atomic<int> leaves_done{0};
std::atomic<bool> announced{false};
roam::promise<void> computing;  // on the asking node: node 0 has begun its tree

int leaves_done_now() { return leaves_done.load(); }
void node_zero_computes() { computing.set_value(); }

void busy_for(std::chrono::microseconds span) {
  const auto end = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < end) {
  }
}

roam::config one_worker_per_node() {
  roam::config cfg = roam::config::from_environment();
  cfg.threads = 1;
  if (cfg.transport != roam::transport_kind::mpi) {
    cfg.transport = roam::transport_kind::inproc;
    cfg.nodes = 2;
  }
  cfg.lend_app_thread = false;
  return cfg;
}

}  // namespace

TEST(BusyNode, AnswersOtherNodesWhileItsThreadsRunAForkJoinTree) {
  leaves_done = 0;
  announced = false;
  computing = roam::promise<void>();
  int seen = -1;
  bool asked = false;
  ASSERT_EQ(roam::run(one_worker_per_node(),
                      [&] {
                        const roam::node_id asker = roam::num_nodes() - 1;
                        roam::future<void> begun;
                        if (roam::this_node() == asker) begun = computing.get_future();
                        roam::barrier();
                        if (roam::this_node() == 0) {
                          roam::parallel_for(
                              0, leaves,
                              [asker](int) {
                                // The first leaf to run (not leaf 0, which runs last).
                                if (!announced.exchange(true))
                                  roam::send(asker, node_zero_computes);
                                busy_for(std::chrono::milliseconds(1));
                                leaves_done.fetch_add(1);
                              },
                              1);
                        } else if (roam::this_node() == asker) {
                          begun.get();
                          seen = roam::call(0, leaves_done_now).get();
                          asked = true;
                        }
                        roam::barrier();
                      }),
            0);
  // Under mpiexec only the asking rank has the answer.
  if (!asked) return;
  // Answered while the tree ran: each of node 0's two threads (its worker and its
  // application thread, joining) runs half of it inline, and the call used to wait for one
  // of them to finish its half.
  EXPECT_GE(seen, 0);
  EXPECT_LT(seen, leaves / 2);
}
