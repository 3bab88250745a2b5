// Start-up shared by the benchmarks that compare roam with raw MPI between two ranks.
#pragma once

#include <mpi.h>

#include <cstdio>

namespace roam_bench {

/// Initializes MPI (roam needs MPI_THREAD_SERIALIZED) and returns this process's rank;
/// aborts unless there are exactly two ranks. roam::run reuses the initialized MPI.
inline int init_mpi_pair(int& argc, char**& argv, const char* bench) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) {
    if (rank == 0) std::fprintf(stderr, "%s needs exactly 2 ranks (mpiexec -n 2)\n", bench);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return rank;
}

}  // namespace roam_bench
