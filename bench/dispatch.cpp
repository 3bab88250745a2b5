// Empty local handlers per second on 1 and 2 workers of one node (inproc transport).
// Each worker starts with a seed handler that sends batches of empty handlers to its own
// node; the workers run them (stealing as they please) until all are done.
//   ./run bench dispatch [--json] [--handlers N]
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "empty_handlers.hpp"

#include <roam/roam.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

double handlers_per_second(unsigned workers, long handlers) {
  const long per_worker = handlers / static_cast<long>(workers);  // whole batches only
  const double seconds = roam_bench::seconds_to_quiescence(
      workers, [] {},
      [&](unsigned) { roam::send(0, roam_bench::send_empty_handlers, per_worker); });
  // The seed handlers (one per worker) run too.
  return static_cast<double>(per_worker * static_cast<long>(workers) + static_cast<long>(workers)) /
         seconds;
}

}  // namespace

int main(int argc, char** argv) {
  long handlers = 4000000;
  roam_bench::options_with_json command_line("dispatch");
  command_line.add("--handlers", handlers, "empty handlers per measurement").parse(argc, argv);
  std::vector<double> rates;
  std::printf("%8s %18s %14s\n", "workers", "handlers_per_s", "ns_per_handler");
  for (unsigned w : roam_bench::compared_worker_counts) {
    rates.push_back(handlers_per_second(w, handlers));
    std::printf("%8u %18.0f %14.1f\n", w, rates.back(), 1e9 / rates.back());
  }
  if (command_line.json)
    std::printf("{\"bench\":\"dispatch\",\"workers\":%s,\"handlers_per_s\":%s}\n",
                roam_bench::array(roam_bench::compared_worker_counts).c_str(),
                roam_bench::array(rates).c_str());
  return 0;
}
