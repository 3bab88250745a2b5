// The thesis' Fig. 23 experiment: many handlers, of which a fraction needs a lock that is
// held for a while (the holder waits, e.g. for I/O or a remote answer, modelled by a sleep).
// With std::mutex a waiting handler blocks its worker; with roam::mutex it is suspended and
// the worker runs other handlers. Both versions run the same workload in one program.
//   ./run bench blocking [--json] [--handlers N] [--locking-percent P] [--hold-us U]
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "one_node.hpp"

#include <roam/roam.hpp>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

namespace {

using clock_type = std::chrono::steady_clock;
int hold_us = 200;
std::mutex std_lock;
roam::mutex roam_lock;

void compute() {  // the ordinary handlers' work: about 20 µs
  volatile double x = 1;
  for (int i = 0; i < 4000; ++i) x = x * 1.0000001 + 1e-9;
}
void hold() { roam::this_task::sleep_for(std::chrono::microseconds(hold_us)); }
void with_std_mutex(bool locks) {
  if (locks) {
    std::lock_guard guard(std_lock);
    std::this_thread::sleep_for(std::chrono::microseconds(hold_us));  // blocks the worker
  }
  compute();
}
void with_roam_mutex(bool locks) {
  if (locks) {
    std::lock_guard guard(roam_lock);
    hold();  // suspends: the worker runs other handlers
  }
  compute();
}

}  // namespace

int main(int argc, char** argv) {
  long handlers = 4000, percent = 10;
  roam_bench::options_with_json command_line("blocking");
  command_line.add("--handlers", handlers, "handlers per measurement")
      .add("--locking-percent", percent, "percentage of the handlers that take the lock")
      .add("--hold-us", hold_us, "microseconds the lock is held")
      .parse(argc, argv);
  constexpr unsigned workers = 2;
  double std_s = 0, roam_s = 0;
  roam::run(roam_bench::one_node_config(workers, false), [&] {
    auto measure = [&](auto handler) {
      const auto start = clock_type::now();
      for (long i = 0; i < handlers; ++i) roam::send(0, handler, i % 100 < percent);
      roam::wait_quiescence();
      return std::chrono::duration<double>(clock_type::now() - start).count();
    };
    measure(with_roam_mutex);  // warm-up
    std_s = measure(with_std_mutex);
    roam_s = measure(with_roam_mutex);
  });
  std::printf("%u workers, %ld handlers, %ld%% take a lock held %d us\n", workers, handlers,
              percent, hold_us);
  std::printf("%-12s %10s\n%-12s %10.4f\n%-12s %10.4f\n%-12s %10.3f\n", "mutex", "seconds",
              "std::mutex", std_s, "roam::mutex", roam_s, "roam/std", roam_s / std_s);
  if (command_line.json)
    std::printf(
        "{\"bench\":\"blocking\",\"handlers\":%ld,\"locking_percent\":%ld,\"hold_us\":%d,\"std_"
        "mutex_s\":%s,"
        "\"roam_mutex_s\":%s,\"ratio\":%s}\n",
        handlers, percent, hold_us, roam_bench::number(std_s).c_str(),
        roam_bench::number(roam_s).c_str(), roam_bench::number(roam_s / std_s).c_str());
  return 0;
}
