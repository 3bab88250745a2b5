// Small messages per second from rank 0 to rank 1, no aggregation: every message is its
// own MPI message. For context the table also shows raw MPI_Isend of the same 8 bytes
// (the JSON reports roam's rate only).
//   ./run bench msgrate [--json] [--messages N]   (starts 2 ranks itself)
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "mpi_pair.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

std::atomic<long> received{0};
void count_message(std::uint64_t) { received.fetch_add(1, std::memory_order_relaxed); }

double raw_mpi_rate(long messages, int rank) {
  constexpr int window = 256;
  std::vector<MPI_Request> requests(window);
  std::vector<std::uint64_t> buffers(window);
  MPI_Barrier(MPI_COMM_WORLD);
  auto start = std::chrono::steady_clock::now();
  for (long sent = 0; sent < messages; sent += window) {
    for (int i = 0; i < window; ++i) {
      if (rank == 0)
        MPI_Isend(&buffers[i], 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &requests[i]);
      else
        MPI_Irecv(&buffers[i], 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &requests[i]);
    }
    MPI_Waitall(window, requests.data(), MPI_STATUSES_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return static_cast<double>(messages) /
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  long messages = 1000000;
  roam_bench::options_with_json command_line("msgrate");
  command_line.add("--messages", messages, "messages from rank 0 to rank 1 per measurement")
      .parse(argc, argv);
  const int rank = roam_bench::init_mpi_pair(argc, argv, "msgrate");
  const double mpi_rate = raw_mpi_rate(messages, rank);

  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  cfg.threads = 1;
  double roam_rate = 0;
  roam::run(cfg, [&] {
    for (int round = 0; round < 2; ++round) {  // the first round warms pools and caches
      roam::barrier();
      auto start = std::chrono::steady_clock::now();
      if (roam::this_node() == 0) {
        for (long i = 0; i < messages; ++i)
          roam::send(1, count_message, static_cast<std::uint64_t>(i));
        roam::wait_quiescence();
        roam_rate = static_cast<double>(messages) /
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      roam::barrier();
    }
  });
  if (rank == 1 && received.load() != 2 * messages)
    std::fprintf(stderr, "msgrate: rank 1 received %ld of %ld messages\n", received.load(),
                 2 * messages);
  if (rank == 0) {
    std::printf("%12s %16s %16s %8s\n", "messages", "roam_msgs_per_s", "mpi_msgs_per_s", "ratio");
    std::printf("%12ld %16.0f %16.0f %8.3f\n", messages, roam_rate, mpi_rate, roam_rate / mpi_rate);
    if (command_line.json)
      std::printf("{\"bench\":\"msgrate\",\"msgs_per_s\":%s}\n",
                  roam_bench::number(roam_rate).c_str());
  }
  MPI_Finalize();
  return 0;
}
