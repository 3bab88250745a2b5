// Local handlers per second on mobile objects, exclusive and shared, on 1 and 2 workers
// of one node (inproc transport), next to empty node-level handlers in the same run.
// Each worker starts with a seed handler that sends batches of empty handlers to its own
// objects (one message to each of its 1024 objects per batch) until all are sent.
//   ./run bench mobile_dispatch [--json] [--handlers N]
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "empty_handlers.hpp"

#include <roam/roam.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {

struct cell {
  long hits = 0;
  void touch() { ++hits; }            // exclusive
  long look() const { return hits; }  // shared
};

// Each batch sends one message to each of a worker's objects, then the seed sends itself
// again: messages to one object do not pile up, and at most two batches are queued.
constexpr std::size_t objects_per_worker = 1024;
std::vector<std::vector<roam::mobile_ptr<cell>>> object_sets;

template <bool Shared>
void send_to_objects(unsigned set, long remaining) {
  const auto& objects = object_sets[set];
  const long now = std::min(static_cast<long>(objects.size()), remaining);
  for (long i = 0; i < now; ++i) {
    auto& p = objects[static_cast<std::size_t>(i)];
    if constexpr (Shared)
      p.send<&cell::look>();
    else
      p.send<&cell::touch>();
  }
  if (remaining > now) roam::send(roam::this_node(), send_to_objects<Shared>, set, remaining - now);
}

enum class kind { exclusive, shared, node };

double handlers_per_second(unsigned workers, long handlers, kind k) {
  const long per_worker = handlers / static_cast<long>(workers);
  auto setup = [&] {
    object_sets.assign(workers, {});
    for (auto& set : object_sets)
      for (std::size_t i = 0; i < objects_per_worker; ++i) set.push_back(roam::make_mobile<cell>());
  };
  auto start = [&](unsigned w) {
    if (k == kind::node)
      roam::send(0, roam_bench::send_empty_handlers, per_worker);
    else if (k == kind::shared)
      roam::send(0, send_to_objects<true>, w, per_worker);
    else
      roam::send(0, send_to_objects<false>, w, per_worker);
  };
  return static_cast<double>(per_worker * static_cast<long>(workers)) /
         roam_bench::seconds_to_quiescence(workers, setup, start);
}

}  // namespace

int main(int argc, char** argv) {
  long handlers = 2000000;
  roam_bench::options_with_json command_line("mobile_dispatch");
  command_line.add("--handlers", handlers, "handlers per measurement").parse(argc, argv);
  std::vector<double> exclusive, shared, node;
  std::printf("%8s %16s %16s %16s %14s\n", "workers", "exclusive_per_s", "shared_per_s",
              "node_per_s", "mobile/node");
  for (unsigned w : roam_bench::compared_worker_counts) {
    exclusive.push_back(handlers_per_second(w, handlers, kind::exclusive));
    shared.push_back(handlers_per_second(w, handlers, kind::shared));
    node.push_back(handlers_per_second(w, handlers, kind::node));
    std::printf("%8u %16.0f %16.0f %16.0f %14.2f\n", w, exclusive.back(), shared.back(),
                node.back(), exclusive.back() / node.back());
  }
  if (command_line.json)
    std::printf(
        "{\"bench\":\"mobile_dispatch\",\"workers\":%s,\"exclusive_per_s\":%s,\"shared_per_s\":%s}"
        "\n",
        roam_bench::array(roam_bench::compared_worker_counts).c_str(),
        roam_bench::array(exclusive).c_str(), roam_bench::array(shared).c_str());
  return 0;
}
