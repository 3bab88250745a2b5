// The MPI backend's exposed memory: one MPI-3 RMA window per job.
#pragma once

#include <roam/transport/detail/exposed_memory.hpp>

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace roam::detail {

/// A window of `bytes` per process over `comm` (collective; MPI_Win_allocate, passive target,
/// one MPI_Win_lock_all epoch for its whole life). `lock`/`unlock` bracket every MPI call
/// (the transport's lock on MPI). nullptr when MPI's window is not in the unified memory
/// model (a process's own loads and stores would not see the others' puts): the layer above
/// then goes through active messages. Stops the job when MPI cannot make the window.
std::unique_ptr<exposed_memory> make_mpi_window(MPI_Comm comm, int rank, std::uint64_t bytes,
                                                std::function<void()> lock,
                                                std::function<void()> unlock);

}  // namespace roam::detail
