// How roam's costs grow with the number of nodes P: resident memory per node (idle, and
// after an all-to-all burst), start-up, broadcast, quiescence and barrier latency, and one
// round of random traffic. Each size runs in a process (inproc) or an mpiexec job (mpi) of
// its own, started by this program, so that memory is measured per size.
//
//   ./run bench scale [--json] [--backend inproc|mpi] [--nodes 16,64,256,1024]
//                     [--ranks 2,4,8,16] [--repeat 15] [--messages 200] [--launcher CMD]
//                     [--traffic send|channel]
//
// - startup_ms: from the roam::run call to the end of the first barrier, on node 0;
// - broadcast_us: node 0 broadcasts an empty handler and waits until quiescence shows that
//   every node ran it (so it includes one quiescence detection);
// - quiescence_us: wait_quiescence on node 0 of an idle job;
// - barrier_us: one roam::barrier, seen from node 0;
// - random_msgs_per_s: every node sends --messages small messages to random nodes, until
//   all have been handled (barrier_all_handled).
// The burst and the random round send with roam::send, or (--traffic channel) through a
// channel, whose aggregation buffers are what --roam-route-min-nodes changes (ADR 43).
// One worker per node unless ROAM_THREADS says otherwise; other ROAM_* settings apply too.
// Latencies are medians of --repeat tries. The fitted exponent of a column is the slope of
// log(value) against log(P) by least squares, over all sizes and over those from 64 on.
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <roam/roam.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct row {
  double nodes = 0, rss_idle_kb = 0, rss_kb = 0, startup_ms = 0, broadcast_us = 0,
         quiescence_us = 0, barrier_us = 0, random_msgs_per_s = 0;
};

double microseconds_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

double process_rss_kb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1024.0;
}

std::atomic<int> nodes_here{0};  // this process's nodes (one process may host many)

void nothing() {}

/// Resident memory per node, averaged over the job: each node contributes its process's
/// share.
double rss_per_node_kb() {
  const double share = process_rss_kb() / nodes_here.load();
  return roam::allreduce(share, [](double a, double b) { return a + b; }) / roam::num_nodes();
}

/// Measures one size (this process is one of the job's) and prints it as a ROW line.
int measure(const std::string& backend, long nodes, int repeat, long messages, bool channel) {
  roam::config cfg = roam::config::from_environment();  // ROAM_* settings apply
  cfg.transport = backend == "mpi" ? roam::transport_kind::mpi : roam::transport_kind::inproc;
  if (backend != "mpi") cfg.nodes = static_cast<roam::node_id>(nodes);
  if (std::getenv("ROAM_THREADS") == nullptr) cfg.threads = 1;
  row r;
  const auto called = clock_type::now();
  const int status = roam::run(cfg, [&] {
    nodes_here.fetch_add(1);
    roam::barrier();
    const bool first = roam::this_node() == 0;
    const roam::node_id all = roam::num_nodes();
    if (first) {
      r.startup_ms = microseconds_since(called) / 1000.0;
      r.nodes = all;
    }
    const double idle = rss_per_node_kb();

    std::vector<double> quiescence, broadcast, barrier;
    for (int i = 0; i < repeat; ++i) {
      roam::barrier();
      if (first) {
        const auto t = clock_type::now();
        roam::wait_quiescence();
        quiescence.push_back(microseconds_since(t));
      }
      roam::barrier();
      if (first) {
        const auto t = clock_type::now();
        roam::broadcast(nothing);
        roam::wait_quiescence();
        broadcast.push_back(microseconds_since(t));
      }
      roam::barrier();
      const auto t = clock_type::now();
      roam::barrier();
      barrier.push_back(microseconds_since(t));
    }

    auto to_nothing = roam::channel(nothing);
    auto message_to = [&](roam::node_id d) {
      if (channel)
        to_nothing(d);
      else
        roam::send(d, nothing);
    };
    // The burst: one message from every node to every node.
    for (roam::node_id d = 0; d < all; ++d) message_to(d);
    roam::barrier_all_handled();
    const double after = rss_per_node_kb();

    std::mt19937_64 rng(roam::this_node() + 1);
    roam::barrier();
    const auto t = clock_type::now();
    for (long i = 0; i < messages; ++i) message_to(static_cast<roam::node_id>(rng() % all));
    roam::barrier_all_handled();
    const double seconds = microseconds_since(t) / 1e6;
    if (first) {
      r.rss_idle_kb = idle;
      r.rss_kb = after;
      r.quiescence_us = roam_bench::median(quiescence);
      r.broadcast_us = roam_bench::median(broadcast);
      r.barrier_us = roam_bench::median(barrier);
      r.random_msgs_per_s = static_cast<double>(messages) * all / seconds;
      std::printf("ROW %g %g %g %g %g %g %g %g\n", r.nodes, r.rss_idle_kb, r.rss_kb, r.startup_ms,
                  r.broadcast_us, r.quiescence_us, r.barrier_us, r.random_msgs_per_s);
      std::fflush(stdout);
    }
  });
  return status;
}

/// Runs `command` and reads the ROW line it prints.
bool run_size(const std::string& command, row& r) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return false;
  char line[512];
  bool found = false;
  while (std::fgets(line, sizeof line, pipe))
    if (std::sscanf(line, "ROW %lf %lf %lf %lf %lf %lf %lf %lf", &r.nodes, &r.rss_idle_kb,
                    &r.rss_kb, &r.startup_ms, &r.broadcast_us, &r.quiescence_us, &r.barrier_us,
                    &r.random_msgs_per_s) == 8)
      found = true;
  return pclose(pipe) == 0 && found;
}

/// Least-squares slope of log(y) against log(x), over the points with x >= from.
double growth_exponent(const std::vector<row>& rows, double row::*column, double from) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const row& r : rows) {
    if (r.nodes < from || r.*column <= 0) continue;
    const double x = std::log(r.nodes), y = std::log(r.*column);
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  if (n < 2 || n * sxx - sx * sx == 0) return NAN;
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false, one = false;
  std::string backend = "inproc";
  std::vector<long> nodes{16, 64, 256, 1024};
  std::vector<long> ranks{2, 4, 8, 16};
  int repeat = 15;
  long messages = 200;
  long size = 0;
  std::string launcher = "mpiexec --oversubscribe --bind-to none";
  std::string traffic = "send";
  roam_bench::options options("scale");
  options.flag("--json", json, "print one JSON object as the last line")
      .choice("--backend", backend, {"inproc", "mpi"},
              "virtual nodes in one process, or one MPI rank per node")
      .add("--nodes", nodes, "inproc: the numbers of virtual nodes")
      .add("--ranks", ranks, "mpi: the numbers of ranks (mpiexec -n)")
      .add("--repeat", repeat, "tries per latency (the median is reported)")
      .add("--messages", messages, "random messages per node")
      .add("--launcher", launcher, "mpi: the command that starts a job (before -n RANKS)")
      .choice("--traffic", traffic, {"send", "channel"},
              "the burst and random messages: roam::send, or a channel")
      .flag("--measure-one", one, "internal: measure the size of this process or job")
      .add("--size", size, "internal: the number of nodes for --measure-one (inproc)");
  options.parse(argc, argv);
  if (one) return measure(backend, size, repeat, messages, traffic == "channel");

  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) {
    std::fprintf(stderr, "bench_scale: cannot find its own executable\n");
    return 1;
  }
  self[length] = '\0';
  const std::string common = " --measure-one --backend " + backend + " --repeat " +
                             std::to_string(repeat) + " --messages " + std::to_string(messages) +
                             " --traffic " + traffic;
  std::vector<row> rows;
  for (long p : backend == "mpi" ? ranks : nodes) {
    std::string command = backend == "mpi" ? launcher + " -n " + std::to_string(p) + " " : "";
    command += self;
    command += common;
    if (backend != "mpi") command += " --size " + std::to_string(p);
    row r;
    if (!run_size(command, r)) {
      std::fprintf(stderr, "bench_scale: the run with %ld %s failed: %s\n", p,
                   backend == "mpi" ? "ranks" : "nodes", command.c_str());
      return 1;
    }
    rows.push_back(r);
  }

  std::printf("scale (%s; %s traffic; one worker per node; latencies are medians of %d)\n",
              backend.c_str(), traffic.c_str(), repeat);
  std::printf("%8s %12s %12s %11s %13s %14s %11s %14s\n", "nodes", "idle KB/node", "KB/node",
              "startup ms", "broadcast us", "quiescence us", "barrier us", "random msg/s");
  for (const row& r : rows)
    std::printf("%8.0f %12.0f %12.0f %11.1f %13.1f %14.1f %11.1f %14.0f\n", r.nodes, r.rss_idle_kb,
                r.rss_kb, r.startup_ms, r.broadcast_us, r.quiescence_us, r.barrier_us,
                r.random_msgs_per_s);
  struct column {
    const char* name;
    double row::*field;
  };
  const column columns[] = {{"KB/node after the burst", &row::rss_kb},
                            {"startup", &row::startup_ms},
                            {"broadcast", &row::broadcast_us},
                            {"quiescence", &row::quiescence_us},
                            {"barrier", &row::barrier_us},
                            {"random msg/s", &row::random_msgs_per_s}};
  std::printf("fitted growth exponent in P (all sizes / from 64 nodes):\n");
  for (const column& c : columns)
    std::printf("  %-24s %6.2f / %6.2f\n", c.name, growth_exponent(rows, c.field, 0),
                growth_exponent(rows, c.field, 64));
  if (json) {
    auto values = [&](double row::*field) {
      std::vector<double> v;
      v.reserve(rows.size());
      for (const row& r : rows) v.push_back(r.*field);
      return roam_bench::array(v);
    };
    std::printf(
        "{\"bench\":\"scale\",\"backend\":\"%s\",\"nodes\":%s,\"rss_kb_per_node\":%s,"
        "\"startup_ms\":%s,\"broadcast_us\":%s,\"quiescence_us\":%s,\"barrier_us\":%s,"
        "\"random_msgs_per_s\":%s}\n",
        backend.c_str(), values(&row::nodes).c_str(), values(&row::rss_kb).c_str(),
        values(&row::startup_ms).c_str(), values(&row::broadcast_us).c_str(),
        values(&row::quiescence_us).c_str(), values(&row::barrier_us).c_str(),
        values(&row::random_msgs_per_s).c_str());
  }
  return 0;
}
