// The job ends while the balancers move objects: runs roam::run many times in one process;
// in each run node 0 makes objects whose load() hints change all the time (so a balancing
// policy with a short period never stops moving them), some larger than a transport frame,
// and every body returns while objects are on their way. After each run every object made
// must be resident on exactly one node: an object shipped to a rank that had already
// stopped used to vanish (small) or hang the job (larger than a frame).
//
//   lb_job_end [--policy NAME] [--runs N] [--body-ms MS]
//
// Exit status 0 when every run keeps every object; a report on stderr otherwise.
#include <roam/roam.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

constexpr int objects_per_run = 48;

/// Objects of this process destroyed where they were resident (not the copy a move left
/// behind): at the end of a run the nodes destroy the objects they host.
std::atomic<long> resident_at_end{0};

struct block {
  std::vector<char> bytes;  // every third block is larger than a transport frame
  int seed = 0;
  bool departed = false;  // serialized for a move: this copy is the one left behind

  block() = default;
  block(int s, std::size_t size) : bytes(size, 'x'), seed(s) {}
  ~block() {
    if (!departed) resident_at_end.fetch_add(1);
  }

  /// A hint that changes on every look, so that the plans never settle.
  double load() const {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return 1.0 + static_cast<double>((now / 1000 + static_cast<long>(seed) * 7919) % 16);
  }
  void touch() { bytes.front() = 'y'; }

  template <class Ar>
  void serialize(Ar& ar) {
    ar(bytes, seed);
    if constexpr (std::is_base_of_v<cereal::detail::OutputArchiveBase, Ar>) departed = true;
  }
};

const char* text_option(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

bool under_mpi() {
  int mpi = 0;
  MPI_Initialized(&mpi);
  return mpi != 0;
}

bool first_process() {
  int rank = 0;
  if (under_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

/// A count summed over the job's processes.
long job_sum(long here) {
  if (!under_mpi()) return here;  // one process: every node is here
  long total = 0;
  if (MPI_Allreduce(&here, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
    std::fprintf(stderr, "FAIL: MPI_Allreduce failed\n");
    std::exit(1);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string policy = text_option(argc, argv, "--policy", "greedy_refine");
  const int runs = std::atoi(text_option(argc, argv, "--runs", "100"));
  // How long the bodies let the balancers work before they return (plus 0-2 ms): a round of
  // greedy_refine's tree takes 2 steps per level each way, and 16 oversubscribed ranks poll
  // the network only every 0.1-1 ms while their threads sleep.
  const int body_ms = std::atoi(text_option(argc, argv, "--body-ms", "2"));

  roam::config cfg = roam::config::from_args(argc, argv);
  cfg.of<roam::lb::policy_settings>().policy = policy;
  cfg.threads = 1;
  cfg.of<roam::lb::policy_settings>().period_us = 50;  // balance all the time
  cfg.of<roam::lb::policy_settings>().threshold = 1;
  cfg.of<roam::lb::policy_settings>().tolerance = 0.0;
  long moved_total = 0;
  int failures = 0;
  for (int run = 0; run < runs; ++run) {
    std::atomic<long> moved{0};  // by this process's nodes
    const int status = roam::run(cfg, [&] {
      if (roam::this_node() == 0)
        for (int i = 0; i < objects_per_run; ++i) {
          auto p = roam::make_mobile<block>(i, i % 3 == 0 ? std::size_t{256} << 10 : 64);
          p.send<&block::touch>();
        }
      // Let the balancers start moving, then end while they still do.
      std::this_thread::sleep_for(std::chrono::milliseconds(body_ms + run % 3));
      moved.fetch_add(static_cast<long>(roam::lb::local_statistics().objects_moved));
    });
    if (status != 0) {
      std::fprintf(stderr, "FAIL: run %d: roam::run returned %d\n", run, status);
      return 1;
    }
    const long resident = job_sum(resident_at_end.exchange(0));
    moved_total += job_sum(moved.load());
    if (resident != objects_per_run) {
      std::fprintf(stderr, "FAIL: run %d: %ld objects resident at the end, %d made\n", run,
                   resident, objects_per_run);
      ++failures;
    }
  }
  if (first_process())
    std::fprintf(stderr,
                 "lb_job_end (%s): %d runs, %d of them lost or duplicated objects; the balancers "
                 "moved %ld objects before the bodies returned\n",
                 policy.c_str(), runs, failures, moved_total);
  if (moved_total == 0) {
    std::fprintf(stderr, "FAIL: the balancers never moved an object: the test tests nothing\n");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
