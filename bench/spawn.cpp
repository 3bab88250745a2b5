// Costs of the task layer on one worker:
// - handler_ns: an empty handler sent to the own node, created, run on a fiber, completed;
// - tasklet_ns: spawn + join of an empty tasklet (amortized over a loop);
// - suspend_resume_ns: one suspend/resume round trip (a handler yielding with nothing else
//   to run: suspend, requeue, resume).
//   ./run bench spawn [--json] [--count N]
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "empty_handlers.hpp"
#include "one_node.hpp"

#include <roam/roam.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

using clock_type = std::chrono::steady_clock;
long count = 2000000;

double per_item_ns(clock_type::time_point start, long items) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count() /
         static_cast<double>(items);
}

}  // namespace

int main(int argc, char** argv) {
  roam_bench::options_with_json command_line("spawn");
  command_line.add("--count", count, "handlers, tasklets and yields per measurement")
      .parse(argc, argv);
  double handler_ns = 0, tasklet_ns = 0, suspend_ns = 0;
  roam::run(roam_bench::one_node_config(1, false), [&] {
    for (int round = 0; round < 2; ++round) {  // the first round warms pools
      // Handlers: a batch sent from a handler on the worker, timed until all have run.
      auto start = clock_type::now();
      roam::send(0, roam_bench::send_empty_handlers, count);
      roam::wait_quiescence();
      handler_ns = per_item_ns(start, count);

      tasklet_ns = roam::call(0, [] {
                     const auto t0 = clock_type::now();
                     for (long i = 0; i < count; ++i) roam::spawn([] {}).join();
                     return per_item_ns(t0, count);
                   }).get();

      suspend_ns = roam::call(0, [] {
                     const auto t0 = clock_type::now();
                     for (long i = 0; i < count; ++i) roam::this_task::yield();
                     return per_item_ns(t0, count);
                   }).get();
    }
  });
  std::printf("%-22s %10s\n", "operation", "ns");
  std::printf("%-22s %10.1f\n%-22s %10.1f\n%-22s %10.1f\n", "handler", handler_ns,
              "tasklet spawn+join", tasklet_ns, "suspend/resume", suspend_ns);
  if (command_line.json)
    std::printf(
        "{\"bench\":\"spawn\",\"handler_ns\":%s,\"tasklet_ns\":%s,\"suspend_resume_ns\":%s}\n",
        roam_bench::number(handler_ns).c_str(), roam_bench::number(tasklet_ns).c_str(),
        roam_bench::number(suspend_ns).c_str());
  return 0;
}
