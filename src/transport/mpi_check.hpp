// MPI's errors as roam's: every call's result is checked, and a failure stops the job.
#pragma once

#include <roam/base/detail/fatal.hpp>

#include <mpi.h>

#include <string>

namespace roam::detail {

/// MPI's text for an error code.
inline std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(length));
}

/// Every MPI call's result is checked: a failure stops the job naming the call, this rank,
/// the peer rank when there is one (`peer` >= 0), and MPI's cause.
inline void check_mpi(int rc, const char* call, int rank, int peer = -1) {
  if (rc == MPI_SUCCESS) return;
  fatal(std::string(call) + (peer >= 0 ? " with rank " + std::to_string(peer) : std::string()) +
        " failed" + (rank >= 0 ? " on rank " + std::to_string(rank) : std::string()) + ": " +
        mpi_error_text(rc));
}

}  // namespace roam::detail
