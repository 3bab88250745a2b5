// Idle workers must park: a job with many workers and nothing to do burns almost no CPU.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <thread>

namespace {
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

TEST(Idle, ParkedWorkersBurnNoCpu) {
  roam::config cfg;
  cfg.transport = roam::transport_kind::inproc;
  cfg.nodes = 4;
  cfg.threads = 4;  // 16 workers on a machine that may have 2 cores
  double used = 0;
  ASSERT_EQ(roam::run(cfg,
                      [&used] {
                        roam::barrier();
                        if (roam::this_node() == 0) {
                          std::this_thread::sleep_for(
                              std::chrono::milliseconds(100));  // let everyone park
                          const double before = process_cpu_seconds();
                          std::this_thread::sleep_for(std::chrono::milliseconds(500));
                          used = process_cpu_seconds() - before;
                        }
                        roam::barrier();
                      }),
            0);
  // 16 spinning workers would use several CPU-seconds over 0.5 s wall time; parked ones
  // use next to nothing. The bound leaves room for a noisy machine.
  EXPECT_LT(used, 0.1) << "idle workers used " << used << " CPU-seconds in 0.5 s";
}

TEST(Pinning, PinnedWorkersRunHandlers) {
  roam::config cfg;
  cfg.transport = roam::transport_kind::inproc;
  cfg.nodes = 2;
  cfg.threads = 2;
  cfg.pin = true;
  long total = 0;
  ASSERT_EQ(roam::run(cfg,
                      [&total] {
                        long got = roam::call((roam::this_node() + 1) % roam::num_nodes(),
                                              [](long v) { return v * 2; }, 21L)
                                       .get();
                        long sum = roam::allreduce(got, [](long a, long b) { return a + b; });
                        if (roam::this_node() == 0) total = sum;
                      }),
            0);
  EXPECT_EQ(total, 84);
}
