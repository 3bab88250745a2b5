// Round trips shared by the benchmarks that compare roam with raw MPI between two ranks:
// message sizes, iteration counts, the raw MPI ping-pong, and a barrier that sleeps.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace roam_bench {

using clock_type = std::chrono::steady_clock;
inline std::vector<std::size_t> pingpong_sizes = {8,     64,     512,     4096,   32768,
                                                  65536, 262144, 1048576, 4194304};

inline int iterations(std::size_t size) {
  if (size <= 4096) return 20000;
  if (size <= 65536) return 4000;
  if (size <= 1048576) return 400;
  return 100;
}

inline double mpi_one_way_us(std::size_t size, int rank) {
  std::vector<std::uint8_t> buf(size, 1);
  const int count = static_cast<int>(size), peer = 1 - rank, iters = iterations(size);
  for (int warm = 0; warm < 2; ++warm) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = clock_type::now();
    for (int i = 0; i < (warm ? iters : iters / 10); ++i) {
      if (rank == 0) {
        MPI_Send(buf.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      }
    }
    if (warm)
      return std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / iters /
             2;
  }
  return 0;
}

// A barrier that sleeps instead of polling, so a waiting rank leaves the cores to the
// measurement (Open MPI's MPI_Barrier spins).
inline void sleepy_barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  for (int done = 0; !done;) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace roam_bench
