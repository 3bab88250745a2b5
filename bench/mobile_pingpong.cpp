// Per-layer overhead (thesis Fig. 9-10): one-way latency, 8 B .. 1 MB, of a round trip
// between two mobile objects on two ranks, next to node-level roam::send and raw MPI
// Send/Recv in the same program run. Run with `./run bench mobile_pingpong [--json]` (it
// starts 2 ranks itself).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "mobile_pair.hpp"
#include "mpi_pair.hpp"
#include "pingpong_common.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace {

using namespace roam_bench;

roam::promise<void>* round_trip_done = nullptr;

// Node level: node 0 sends `ping`, node 1 answers with `pong`.
void node_pong(roam::buffer<std::uint8_t>) { round_trip_done->set_value(); }
void node_ping(roam::buffer<std::uint8_t> payload) { roam::send(0, node_pong, std::move(payload)); }

// Mobile level: the same between two objects, one per rank; each knows the other.
struct endpoint {
  roam::mobile_ptr<endpoint> peer;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(peer);
  }
  void ping(roam::buffer<std::uint8_t> payload) { peer.send<&endpoint::pong>(std::move(payload)); }
  void pong(roam::buffer<std::uint8_t>) { round_trip_done->set_value(); }
};

template <class Trip>
double one_way_us(std::size_t size, Trip trip) {
  const int iters = std::max(20, iterations(size) / 5);
  for (int i = 0; i < iters / 10; ++i) trip(size);
  auto start = clock_type::now();
  for (int i = 0; i < iters; ++i) trip(size);
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / iters / 2;
}

void run_roam(std::vector<double>& mobile_us, std::vector<double>& node_us) {
  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  cfg.threads = 1;  // one worker per rank: the application thread waits and polls too
  roam::run(cfg, [&] {
    const auto both = paired_endpoints<endpoint>();
    if (roam::this_node() != 0) return;
    const auto remote = both[1];
    auto mobile_trip = [&](std::size_t bytes) {
      roam::promise<void> done;
      round_trip_done = &done;
      remote.send<&endpoint::ping>(roam::buffer<std::uint8_t>(bytes));
      done.get_future().get();
    };
    auto node_trip = [](std::size_t bytes) {
      roam::promise<void> done;
      round_trip_done = &done;
      roam::send(1, node_ping, roam::buffer<std::uint8_t>(bytes));
      done.get_future().get();
    };
    // Both layers warm up, then take turns (median of 5 each): the machine's noise hits
    // both alike.
    for (int i = 0; i < 2000; ++i) {
      mobile_trip(8);
      node_trip(8);
    }
    for (std::size_t size : pingpong_sizes) {
      std::vector<double> mobile, node;
      for (int rep = 0; rep < 5; ++rep) {
        mobile.push_back(one_way_us(size, mobile_trip));
        node.push_back(one_way_us(size, node_trip));
      }
      std::sort(mobile.begin(), mobile.end());
      std::sort(node.begin(), node.end());
      mobile_us.push_back(mobile[2]);
      node_us.push_back(node[2]);
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_bytes = 1048576;
  options_with_json command_line("mobile_pingpong");
  command_line.add("--max-bytes", max_bytes, "largest message size measured").parse(argc, argv);
  std::erase_if(pingpong_sizes, [=](std::size_t s) { return s > max_bytes; });
  const int rank = init_mpi_pair(argc, argv, "mobile_pingpong");

  std::vector<double> mpi_us;
  mpi_us.reserve(pingpong_sizes.size());
  for (std::size_t size : pingpong_sizes) mpi_us.push_back(mpi_one_way_us(size, rank));
  std::vector<double> mobile_us, node_us;
  run_roam(mobile_us, node_us);
  sleepy_barrier();

  if (rank == 0) {
    std::printf("%10s %12s %12s %12s %12s %12s\n", "bytes", "mobile_us", "node_us", "mpi_us",
                "mobile/node", "mobile/mpi");
    for (std::size_t i = 0; i < pingpong_sizes.size(); ++i)
      std::printf("%10zu %12.3f %12.3f %12.3f %12.3f %12.3f\n", pingpong_sizes[i], mobile_us[i],
                  node_us[i], mpi_us[i], mobile_us[i] / node_us[i], mobile_us[i] / mpi_us[i]);
    if (command_line.json)
      std::printf(
          "{\"bench\":\"mobile_pingpong\",\"sizes\":%s,\"mobile_us\":%s,\"node_us\":%s,\"mpi_us\":"
          "%s}\n",
          array(pingpong_sizes).c_str(), array(mobile_us).c_str(), array(node_us).c_str(),
          array(mpi_us).c_str());
  }
  MPI_Finalize();
  return 0;
}
