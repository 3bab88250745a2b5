// What a waiting application thread adds: a tree search of many small handlers on one node
// whose application thread waits in wait_quiescence(), run three ways side by side:
//   lend        1 worker, the application thread lent (the default: 2 threads run handlers)
//   two         2 workers, the application thread only waits (--roam-lend-app-thread off)
//   one         1 worker, the application thread only waits (the serial reference)
// A waiting thread that runs work well makes `lend` as fast as `two`; one that spends its
// time on termination checks makes it as slow as `one` (issue 25, defect 3).
//   ./run bench waiting_thread [--json] [--depth D] [--work-ns N] [--rounds R]
// JSON: {"bench":"waiting_thread","handlers":...,"lend_s":...,"two_s":...,"one_s":...,
//        "lend_vs_two":...,"lend_speedup":...,"waiting_cpu_share":...}  (medians over
//        the rounds; the last: the application thread's CPU over the wall time while it
//        waits for quiescence behind one 200 ms handler)
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "one_node.hpp"

#include <roam/roam.hpp>

#include <time.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
long work_ns = 4000;
int max_depth = 8;
constexpr int fan_out = 4;

// Busy work of about `work_ns` (a spin on the clock, the same on every configuration).
void compute() {
  const auto until = clock_type::now() + std::chrono::nanoseconds(work_ns);
  while (clock_type::now() < until) {
  }
}

void visit(int depth) {
  compute();
  if (depth < max_depth)
    for (int c = 0; c < fan_out; ++c) roam::send(roam::this_node(), visit, depth + 1);
}

// The same tree searched by tasklets inside one handler: children are spawned, then joined
// oldest first (a thief takes the oldest; the joiner waits for it).
long search(int depth) {
  compute();
  if (depth == max_depth) return 1;
  std::vector<roam::task<long>> children;
  children.reserve(fan_out);
  for (int c = 0; c < fan_out; ++c)
    children.push_back(roam::spawn([depth] { return search(depth + 1); }));
  long total = 1;
  for (auto& child : children) total += child.join();
  return total;
}

bool with_tasklets = false;

double run_once(unsigned workers, bool lend) {
  double seconds = 0;
  roam::run(roam_bench::one_node_config(workers, lend), [&] {
    const auto start = clock_type::now();
    if (with_tasklets)
      roam::send(0, [] { (void)search(0); });
    else
      roam::send(0, visit, 0);
    roam::wait_quiescence();
    seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  });
  return seconds;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The CPU share the application thread takes while it waits for quiescence and the node's
// only work is one long handler it cannot help with: the cost of waiting itself.
double waiting_cpu_share() {
  double share = 0;
  static std::atomic<double> handler_cpu{0};
  static std::thread::id ran_on;
  roam::run(roam_bench::one_node_config(1, true), [&] {
    roam::send(0, [] {
      // The lent application thread may take this handler itself: its CPU is then not
      // the cost of waiting.
      ran_on = std::this_thread::get_id();
      const double t0 = thread_cpu_seconds();
      const auto until = clock_type::now() + std::chrono::milliseconds(200);
      while (clock_type::now() < until) {
      }
      handler_cpu = thread_cpu_seconds() - t0;
    });
    // A plain sleep, so that the worker takes the handler (usually).
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const double cpu0 = thread_cpu_seconds();
    const auto start = clock_type::now();
    roam::wait_quiescence();
    const double wall = std::chrono::duration<double>(clock_type::now() - start).count();
    double waiting_cpu = thread_cpu_seconds() - cpu0;
    if (ran_on == std::this_thread::get_id())
      waiting_cpu = std::max(0.0, waiting_cpu - handler_cpu);
    share = waiting_cpu / wall;
  });
  return share;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  roam_bench::options_with_json command_line("waiting_thread");
  command_line.add("--depth", max_depth, "depth of the tree (4-ary: (4^(D+1)-1)/3 handlers)")
      .add("--work-ns", work_ns, "busy work per handler, in nanoseconds")
      .add("--rounds", rounds, "rounds of the three configurations, alternated")
      .flag("--tasklets", with_tasklets,
            "search the tree with tasklets inside one handler instead of one message per tree node")
      .parse(argc, argv);
  long handlers = 0;
  for (long level = 1, d = 0; d <= max_depth; ++d, level *= fan_out) handlers += level;
  std::vector<double> lend, two, one, waiting;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    lend.push_back(run_once(1, true));
    two.push_back(run_once(2, false));
    one.push_back(run_once(1, false));
    waiting.push_back(waiting_cpu_share());
  }
  const double waiting_share = roam_bench::median(waiting);
  const double lend_s = roam_bench::median(lend), two_s = roam_bench::median(two),
               one_s = roam_bench::median(one);
  std::printf("%ld handlers of %ld ns, %d rounds (median [min, max] seconds)\n", handlers, work_ns,
              rounds);
  auto row = [](const char* name, const std::vector<double>& v) {
    std::printf("%-34s %8.3f [%6.3f, %6.3f]\n", name, roam_bench::median(v),
                *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  };
  row("1 worker + lent application thread", lend);
  row("2 workers, application thread off", two);
  row("1 worker, application thread off", one);
  std::printf(
      "lend / two = %.3f (1.0: the lent thread is as good as a worker); "
      "speedup of lending over one worker = %.2f\n",
      lend_s / two_s, one_s / lend_s);
  std::printf(
      "application thread's CPU while it waits for one 200 ms handler: %.1f %% "
      "[%.1f, %.1f]\n",
      100 * waiting_share, 100 * *std::min_element(waiting.begin(), waiting.end()),
      100 * *std::max_element(waiting.begin(), waiting.end()));
  if (command_line.json)
    std::printf(
        "{\"bench\":\"waiting_thread\",\"handlers\":%ld,\"lend_s\":%s,\"two_s\":%s,"
        "\"one_s\":%s,\"lend_vs_two\":%s,\"lend_speedup\":%s,"
        "\"waiting_cpu_share\":%s}\n",
        handlers, roam_bench::number(lend_s).c_str(), roam_bench::number(two_s).c_str(),
        roam_bench::number(one_s).c_str(), roam_bench::number(lend_s / two_s).c_str(),
        roam_bench::number(one_s / lend_s).c_str(), roam_bench::number(waiting_share).c_str());
  return 0;
}
