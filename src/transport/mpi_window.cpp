// MPI-3 RMA for one-sided copies: a window from MPI_Win_allocate (MPI places it: shared
// memory between processes of a host), one lock_all epoch, and MPI_Get/MPI_Put closed by
// MPI_Win_flush before the call returns. Measured against request-based operations and a
// window over memory of our own in docs/performance.md (gas_latency); ADR 55.
#include "mpi_window.hpp"

#include "mpi_check.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>

namespace roam::detail {
namespace {

/// MPI counts are ints: a run moves in pieces of at most this many bytes.
constexpr std::uint64_t piece_bytes = std::uint64_t{1} << 30;

class mpi_window final : public exposed_memory {
 public:
  mpi_window(MPI_Win window, std::byte* base, int rank, std::function<void()> lock,
             std::function<void()> unlock)
      : window_(window),
        base_(base),
        rank_(rank),
        lock_(std::move(lock)),
        unlock_(std::move(unlock)) {}

  ~mpi_window() override {
    check_mpi(MPI_Win_unlock_all(window_), "MPI_Win_unlock_all", rank_);
    check_mpi(MPI_Win_free(&window_), "MPI_Win_free", rank_);
  }

  std::byte* local_part() noexcept override { return base_; }

  void get(unsigned process, std::span<const exposed_run> runs, std::byte* packed) override {
    transfer(process, runs, [&](std::uint64_t offset, int bytes, int target) {
      check_mpi(MPI_Get(packed, bytes, MPI_BYTE, target, static_cast<MPI_Aint>(offset), bytes,
                        MPI_BYTE, window_),
                "MPI_Get", rank_, target);
      packed += bytes;
    });
  }

  void put(unsigned process, std::span<const exposed_run> runs, const std::byte* packed) override {
    transfer(process, runs, [&](std::uint64_t offset, int bytes, int target) {
      check_mpi(MPI_Put(packed, bytes, MPI_BYTE, target, static_cast<MPI_Aint>(offset), bytes,
                        MPI_BYTE, window_),
                "MPI_Put", rank_, target);
      packed += bytes;
    });
  }

 private:
  /// Issues `each(offset, bytes, target)` for every piece of the runs, then flushes: the
  /// operations are complete at the origin and at the target when it returns.
  template <class Each>
  void transfer(unsigned process, std::span<const exposed_run> runs, Each&& each) {
    const int target = static_cast<int>(process);
    lock_();
    for (const exposed_run& r : runs)
      for (std::uint64_t at = 0; at < r.bytes; at += piece_bytes)
        each(r.offset + at, static_cast<int>(std::min(piece_bytes, r.bytes - at)), target);
    check_mpi(MPI_Win_flush(target, window_), "MPI_Win_flush", rank_, target);
    unlock_();
  }

  MPI_Win window_;
  std::byte* base_;
  int rank_;
  std::function<void()> lock_, unlock_;
};

}  // namespace

std::unique_ptr<exposed_memory> make_mpi_window(MPI_Comm comm, int rank, std::uint64_t bytes,
                                                std::function<void()> lock,
                                                std::function<void()> unlock) {
  MPI_Info info;
  check_mpi(MPI_Info_create(&info), "MPI_Info_create", rank);
  // Every process exposes as much, in bytes; no accumulate is ordered (roam issues none).
  check_mpi(MPI_Info_set(info, "same_size", "true"), "MPI_Info_set", rank);
  check_mpi(MPI_Info_set(info, "same_disp_unit", "true"), "MPI_Info_set", rank);
  check_mpi(MPI_Info_set(info, "accumulate_ordering", "none"), "MPI_Info_set", rank);
  void* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  const int rc = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, info, comm, &base, &window);
  check_mpi(MPI_Info_free(&info), "MPI_Info_free", rank);
  // An MPI without one-sided support over this network refuses the window everywhere: the
  // layer above then goes through active messages. Refused on some processes only, it is
  // the job's memory that is short.
  int made = rc == MPI_SUCCESS ? 1 : 0, made_everywhere = 0, made_somewhere = 0;
  check_mpi(MPI_Allreduce(&made, &made_everywhere, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce",
            rank);
  check_mpi(MPI_Allreduce(&made, &made_somewhere, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce",
            rank);
  if (!made_somewhere) {
    if (rank == 0)
      std::fprintf(stderr,
                   "roam: warning: MPI cannot make a window for one-sided copies (%s); global "
                   "memory goes through active messages\n",
                   mpi_error_text(rc).c_str());
    return nullptr;
  }
  if (!made_everywhere)
    fatal("MPI_Win_allocate of " + std::to_string(bytes) + " bytes failed on " +
          (made ? std::string("another rank")
                : "rank " + std::to_string(rank) + ": " + mpi_error_text(rc)) +
          " (the global heaps of a process's nodes: make --roam-gas-heap or "
          "--roam-gas-symmetric-heap smaller, or give MPI more shared memory)");
  check_mpi(MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler", rank);
  int* model = nullptr;
  int found = 0;
  check_mpi(MPI_Win_get_attr(window, MPI_WIN_MODEL, &model, &found), "MPI_Win_get_attr", rank);
  if (!found || *model != MPI_WIN_UNIFIED) {
    check_mpi(MPI_Win_free(&window), "MPI_Win_free", rank);
    return nullptr;
  }
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, window), "MPI_Win_lock_all", rank);
  return std::make_unique<mpi_window>(window, static_cast<std::byte*>(base), rank, std::move(lock),
                                      std::move(unlock));
}

}  // namespace roam::detail
