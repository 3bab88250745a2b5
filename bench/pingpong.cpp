// One-way latency, 8 B .. 4 MB: roam send round trips versus raw MPI Send/Recv between
// 2 ranks in the same program run, plus roam between 2 virtual nodes of the inproc
// transport, and (in the table only) raw MPI with a runtime's non-blocking calls for the
// sizes that fit a frame. Run with `./run bench pingpong [--json]` (it starts 2 ranks
// itself).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "mpi_pair.hpp"
#include "pingpong_common.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
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

// The floor under roam's small-message latency: raw MPI making the calls a runtime that
// receives from any rank without blocking makes (as the mpi transport does): a ring of
// pre-posted any-source receives of a whole frame (32 KiB, roam's default), MPI_Test on the
// oldest, the message copied out and its receive posted again, the answer sent by
// MPI_Isend and completed by MPI_Testsome. Only for messages that fit a frame.
constexpr std::size_t frame_payload_bytes = 32768;
constexpr std::size_t frame_bytes = frame_payload_bytes + 64;  // and a header's room

double mpi_nonblocking_one_way_us(std::size_t size, int rank) {
  constexpr int ring = 64, tag = 2;
  const int count = static_cast<int>(size), peer = 1 - rank, iters = iterations(size);
  std::vector<std::vector<std::uint8_t>> frames(ring, std::vector<std::uint8_t>(frame_bytes));
  std::vector<MPI_Request> receives(ring);
  auto post = [&](int i) {
    MPI_Irecv(frames[i].data(), static_cast<int>(frame_bytes), MPI_BYTE, MPI_ANY_SOURCE, tag,
              MPI_COMM_WORLD, &receives[i]);
  };
  for (int i = 0; i < ring; ++i) post(i);
  // What arrived is copied out (as into a runtime's message block); the answer is sent from
  // another buffer, which is not touched until its send completed.
  std::vector<std::uint8_t> arrived(size, 1), message(size, 1);
  MPI_Request send = MPI_REQUEST_NULL;
  int head = 0;
  auto test_send = [&] {
    int done = 0, index = 0;
    if (send != MPI_REQUEST_NULL) MPI_Testsome(1, &send, &done, &index, MPI_STATUSES_IGNORE);
  };
  auto receive = [&] {
    for (int flag = 0; !flag;) {
      MPI_Test(&receives[head], &flag, MPI_STATUS_IGNORE);
      if (!flag) test_send();
    }
    std::memcpy(arrived.data(), frames[head].data(), size);
    post(head);
    head = (head + 1) % ring;
  };
  auto answer = [&] {
    while (send != MPI_REQUEST_NULL) test_send();
    message.swap(arrived);
    MPI_Isend(message.data(), count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &send);
    test_send();
  };
  double result = 0;
  for (int warm = 0; warm < 2; ++warm) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = clock_type::now();
    for (int i = 0; i < (warm ? iters : iters / 10); ++i) {
      if (rank == 0) {
        answer();
        receive();
      } else {
        receive();
        answer();
      }
    }
    result =
        std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / iters / 2;
  }
  MPI_Wait(&send, MPI_STATUS_IGNORE);
  for (MPI_Request& r : receives) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
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

  std::vector<double> mpi_us, floor_us;
  mpi_us.reserve(sizes.size());
  floor_us.reserve(sizes.size());
  for (std::size_t size : sizes) {
    mpi_us.push_back(mpi_one_way_us(size, rank));
    floor_us.push_back(size <= frame_payload_bytes ? mpi_nonblocking_one_way_us(size, rank) : 0);
  }

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
    // mpi_nb_us: raw MPI with a runtime's non-blocking calls (mpi_nonblocking_one_way_us),
    // for messages that fit a frame; nb_ratio is roam's time against it.
    std::printf("%10s %12s %12s %8s %12s %12s %9s\n", "bytes", "roam_us", "mpi_us", "ratio",
                "inproc_us", "mpi_nb_us", "nb_ratio");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      ratio.push_back(roam_us[i] / mpi_us[i]);
      std::printf("%10zu %12.3f %12.3f %8.3f %12.3f", sizes[i], roam_us[i], mpi_us[i], ratio[i],
                  inproc_us[i]);
      if (floor_us[i] > 0)
        std::printf(" %12.3f %9.3f\n", floor_us[i], roam_us[i] / floor_us[i]);
      else
        std::printf(" %12s %9s\n", "-", "-");
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
