// Idle workers must park: a job with many workers and nothing to do burns almost no CPU.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <time.h>

#include <atomic>
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

// Issue 25, defect 3: an application thread waiting for quiescence behind a long handler
// it cannot help with ran termination waves back to back and burned its core (99.9 % of
// it in bench_waiting_thread). It now backs off between waves and parks, like a worker.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::atomic<bool> long_handler_started{false};
std::atomic<bool> release_long_handler{false};

TEST(Idle, AThreadWaitingForQuiescenceDoesNotSpin) {
  roam::config cfg;
  cfg.transport = roam::transport_kind::inproc;
  cfg.nodes = 1;
  cfg.threads = 1;  // the application thread is lent (the default)
  long_handler_started = false;
  release_long_handler = false;
  double share = 1;
  ASSERT_EQ(
      roam::run(
          cfg,
          [&share] {
            // The worker holds this handler until the application thread has
            // waited 300 ms; nothing else is there to run.
            std::thread releaser;
            roam::send(0, [] {
              long_handler_started = true;
              while (!release_long_handler.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            });
            while (!long_handler_started.load())
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            releaser = std::thread([] {
              std::this_thread::sleep_for(std::chrono::milliseconds(300));
              release_long_handler = true;
            });
            const double cpu0 = thread_cpu_seconds();
            const auto start = std::chrono::steady_clock::now();
            roam::wait_quiescence();
            const double wall =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            share = (thread_cpu_seconds() - cpu0) / wall;
            releaser.join();
          }),
      0);
  // Back to back waves used the whole core; backing off uses about 6 %. The bound leaves
  // room for a slow (sanitized, oversubscribed) machine.
  EXPECT_LT(share, 0.5) << "the waiting thread used " << 100 * share << " % of a core";
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
