// One-way latency, 8 B .. 4 MB: roam send round trips versus raw MPI Send/Recv between
// 2 ranks in the same program run, plus roam between 2 virtual nodes of the inproc
// transport. Run with `./run bench pingpong [--json]` (it starts 2 ranks itself).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "mpi_pair.hpp"
#include "pingpong_common.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using namespace roam_bench;
std::vector<std::size_t>& sizes = pingpong_sizes;

// roam: node 0 sends `ping` with the payload; node 1's handler sends the same buffer back
// with `pong`; node 0's pong handler fulfils the promise node 0's application thread waits
// on. roam::buffer moves without copies, like the raw MPI side.
roam::promise<void>* round_trip_done = nullptr;
void pong(roam::buffer<std::uint8_t>) { round_trip_done->set_value(); }
void ping(roam::buffer<std::uint8_t> payload) { roam::send(0, pong, std::move(payload)); }

std::vector<double> roam_one_way_us(roam::config cfg) {
  std::vector<double> result;
  roam::run(cfg, [&result] {
    if (roam::this_node() != 0) return;
    for (std::size_t size : sizes) {
      const int iters = iterations(size);
      auto trip = [size] {
        roam::promise<void> done;
        round_trip_done = &done;
        roam::send(1, ping, roam::buffer<std::uint8_t>(size));
        done.get_future().get();
      };
      for (int i = 0; i < iters / 10; ++i) trip();
      auto start = clock_type::now();
      for (int i = 0; i < iters; ++i) trip();
      result.push_back(
          std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / iters / 2);
    }
  });
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_bytes = 4194304, min_bytes = 0;
  roam_bench::options_with_json command_line("pingpong");
  command_line.add("--max-bytes", max_bytes, "largest message size measured")
      .add("--min-bytes", min_bytes, "smallest message size measured")
      .parse(argc, argv);
  std::erase_if(sizes, [=](std::size_t s) { return s > max_bytes || s < min_bytes; });
  const int rank = roam_bench::init_mpi_pair(argc, argv, "pingpong");

  std::vector<double> mpi_us;
  mpi_us.reserve(sizes.size());
  for (std::size_t size : sizes) mpi_us.push_back(mpi_one_way_us(size, rank));

  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  cfg.threads = 1;  // one worker per rank: the application thread waits and polls too
  std::vector<double> roam_us = roam_one_way_us(cfg);

  // The same between 2 virtual nodes of one process (rank 0 only; rank 1 waits).
  std::vector<double> inproc_us;
  if (rank == 0) {
    roam::config local = cfg;
    local.transport = roam::transport_kind::inproc;
    local.nodes = 2;
    inproc_us = roam_one_way_us(local);
  }
  sleepy_barrier();

  if (rank == 0) {
    std::vector<double> ratio;
    std::printf("%10s %12s %12s %8s %12s\n", "bytes", "roam_us", "mpi_us", "ratio", "inproc_us");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      ratio.push_back(roam_us[i] / mpi_us[i]);
      std::printf("%10zu %12.3f %12.3f %8.3f %12.3f\n", sizes[i], roam_us[i], mpi_us[i], ratio[i],
                  inproc_us[i]);
    }
    if (command_line.json)
      std::printf(
          "{\"bench\":\"pingpong\",\"sizes\":%s,\"roam_us\":%s,\"mpi_us\":%s,\"ratio\":%s,\"inproc_"
          "us\":%s}\n",
          roam_bench::array(sizes).c_str(), roam_bench::array(roam_us).c_str(),
          roam_bench::array(mpi_us).c_str(), roam_bench::array(ratio).c_str(),
          roam_bench::array(inproc_us).c_str());
  }
  MPI_Finalize();
  return 0;
}
