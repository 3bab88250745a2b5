// What an idle node costs: the CPU time and context switches per second of a job whose
// workers have nothing to do, while the application thread sleeps. Parked threads still wake
// to poll the network (mpi transport); on a node whose cores compute (device kernels, other
// ranks) every wake-up is taken from that work.
//   ./run bench idle_cost [--json] [--seconds S]   (starts 2 ranks itself; ROAM_THREADS
//   sets the workers, default 4 here)
// JSON: {"bench":"idle_cost","ranks":2,"workers":4,"cpu_ms_per_s":...,"switches_per_s":...}
// (per rank, the mean over ranks; with the inproc transport the process's usage is counted
// once per virtual node).
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <roam/roam.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace {

struct usage {
  double cpu_s = 0;
  long switches = 0;
};

usage process_usage() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return {static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
              1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec),
          r.ru_nvcsw + r.ru_nivcsw};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace roam_bench;
  double seconds = 2.0;
  options_with_json command_line("idle_cost");
  command_line.add("--seconds", seconds, "how long the job stays idle").parse(argc, argv);
  roam::config cfg = roam::config::from_environment();
  if (std::getenv("ROAM_THREADS") == nullptr) cfg.threads = 4;
  const int status = roam::run(cfg, [&] {
    roam::barrier();
    const usage before = process_usage();
    const auto start = std::chrono::steady_clock::now();
    // A plain sleep, not a roam wait: the application thread takes no part.
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const usage after = process_usage();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double my_cpu = 1000 * (after.cpu_s - before.cpu_s) / elapsed;
    const double my_switches = static_cast<double>(after.switches - before.switches) / elapsed;
    const unsigned nodes = roam::num_nodes();
    const double cpu_ms = roam::allreduce(my_cpu, std::plus<>()) / nodes;
    const double switches = roam::allreduce(my_switches, std::plus<>()) / nodes;
    if (roam::this_node() != 0) return;
    std::printf("%-10s %6s %8s %14s %16s\n", "bench", "ranks", "workers", "cpu_ms_per_s",
                "switches_per_s");
    std::printf("%-10s %6u %8u %14.1f %16.0f\n", "idle_cost", nodes, cfg.threads, cpu_ms, switches);
    if (command_line.json)
      std::printf(
          "{\"bench\":\"idle_cost\",\"ranks\":%u,\"workers\":%u,\"cpu_ms_per_s\":%s,"
          "\"switches_per_s\":%s}\n",
          nodes, cfg.threads, number(cpu_ms).c_str(), number(switches).c_str());
  });
  return status;
}
