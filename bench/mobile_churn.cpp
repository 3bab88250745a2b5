// Objects created and destroyed at every step, as an adaptive code does: the rate, and the
// process's resident memory as steps go by (it stays flat when destroyed objects' directory
// entries are freed, ADR 46). Each step, every node creates objects on every node, calls
// one in four of all of them from every node, and destroys its own.
//   ROAM_NODES=4 ./run bench mobile_churn [--json] [--steps N] [--objects K]
//   mpiexec -n 4 bench_mobile_churn [--json]
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <roam/roam.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

namespace {

struct cell {
  long hits = 0;
  long look() const { return hits; }
};

long resident_kb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4;  // 4 KiB pages
}

}  // namespace

int main(int argc, char** argv) {
  long steps = 200, objects = 1024;
  roam_bench::options_with_json command_line("mobile_churn");
  command_line.add("--steps", steps, "steps")
      .add("--objects", objects, "objects created (and destroyed) per step, all nodes together")
      .parse(argc, argv);
  const int report_every = static_cast<int>(std::max(1L, steps / 5));
  std::vector<double> at_step, rate, rss;
  return roam::run(argc, argv, [&] {
    const roam::node_id me = roam::this_node(), nodes = roam::num_nodes();
    const long per_node = std::max(1L, objects / static_cast<long>(nodes));
    if (me == 0)
      std::printf("%8s %16s %14s   (%u nodes, %ld objects a step)\n", "step", "objects_per_s",
                  "rss_kb_max", nodes, per_node * static_cast<long>(nodes));
    auto start = std::chrono::steady_clock::now();
    long done = 0;
    for (int step = 1; step <= steps; ++step) {
      std::vector<roam::mobile_ptr<cell>> mine;
      mine.reserve(static_cast<std::size_t>(per_node));
      for (long i = 0; i < per_node; ++i)
        mine.push_back(
            roam::make_mobile<cell>(roam::node(static_cast<roam::node_id>((me + i) % nodes))));
      const auto all = roam::allgather(mine);
      std::vector<roam::future<long>> replies;
      for (const auto& of_node : all)
        for (std::size_t i = static_cast<std::size_t>(step) % 4; i < of_node.size(); i += 4)
          replies.push_back(of_node[i].call<&cell::look>());
      for (auto& r : replies) r.get();
      roam::barrier();
      std::vector<roam::future<void>> gone;
      gone.reserve(mine.size());
      for (auto& p : mine) gone.push_back(roam::destroy(p));
      for (auto& g : gone) g.get();
      roam::barrier();
      done += per_node * static_cast<long>(nodes);
      if (step % report_every == 0 || step == 1) {
        const long kb =
            roam::allreduce(resident_kb(), [](long a, long b) { return std::max(a, b); });
        const auto now = std::chrono::steady_clock::now();
        const double per_s =
            static_cast<double>(done) / std::chrono::duration<double>(now - start).count();
        if (me == 0) {
          std::printf("%8d %16.0f %14ld\n", step, per_s, kb);
          at_step.push_back(step);
          rate.push_back(per_s);
          rss.push_back(static_cast<double>(kb));
        }
        start = std::chrono::steady_clock::now();
        done = 0;
      }
    }
    if (me == 0 && command_line.json)
      std::printf(
          "{\"bench\":\"mobile_churn\",\"nodes\":%u,\"steps\":%s,\"objects_per_s\":%s,"
          "\"rss_kb\":%s}\n",
          nodes, roam_bench::array(at_step).c_str(), roam_bench::array(rate).c_str(),
          roam_bench::array(rss).c_str());
  });
}
