// roam — runtime configuration from command-line flags and environment variables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace roam {

/// The largest stack a handler or tasklet may have (--roam-stack-size, roam::stack_size).
inline constexpr std::uint64_t max_stack_bytes = std::uint64_t{1} << 30;

/// How nodes are formed.
enum class transport_kind {
  automatic,  ///< mpi when launched by mpiexec with more than one rank, else inproc
  inproc,     ///< virtual nodes inside this process
  mpi,        ///< one node per MPI rank
};

/// Every setting of the runtime. Defaults are chosen for the machine the job runs on.
/// Flags (`--roam-threads 4` or `--roam-threads=4`) override environment variables
/// (`ROAM_THREADS=4`), which override the defaults below.
struct config {
  transport_kind transport = transport_kind::automatic;
  /// Virtual nodes of the inproc transport (ignored under mpi, where nodes = ranks).
  std::uint32_t nodes = 1;
  /// Worker threads per node; 0 = hardware threads - 1, shared among the nodes of one
  /// host, at least 1.
  std::uint32_t threads = 0;
  /// Dedicated communication thread (mpi). Off: idle workers take communication duty
  /// in turn.
  bool comm_thread = false;
  /// Payloads up to this many bytes travel inside the header message (mpi); the
  /// threshold actually used is frame_payload_bytes(), which is never smaller.
  std::uint32_t inline_bytes = 512;
  /// Size of a per-destination aggregation buffer of channels (docs/guide/aggregation.md),
  /// in bytes: a buffer ships when it is full, when its thread goes idle or waits, and on
  /// roam::flush(). 0 ships every channel message at once.
  std::uint32_t aggregate_bytes = 8192;
  /// A buffer that fills before its thread idles doubles for its next bundle, up to this
  /// factor (a power of two; 1 keeps every buffer at aggregate_bytes). It shrinks back to
  /// fit what its thread sends between idle moments.
  std::uint32_t aggregate_growth = 4;
  /// A waiting application thread runs its node's work (on), or only waits (off).
  bool lend_app_thread = true;
  /// Stack of every handler and tasklet, in bytes (a multiple of the page size is used;
  /// a guard page comes on top). A handler or tasklet that overflows it stops the job with
  /// "roam: stack overflow in handler '<name>' on node N". roam::spawn takes a larger stack
  /// for one tasklet (roam::stack_size).
  std::uint64_t stack_bytes = std::uint64_t{128} * 1024;
  /// Pin workers to cores through hwloc.
  bool pin = false;
  /// How long an idle worker searches for work before it parks, in microseconds.
  std::uint32_t spin_us = 50;
  /// How often a parked thread polls the network when it has communication duty, in
  /// microseconds (ten times less often while another thread of the node spins and polls).
  std::uint32_t poll_us = 100;
  /// Load balancing (docs/guide/load-balancing.md): none, work_stealing, diffusion,
  /// master_worker, greedy_refine, or the name of a policy registered by the application.
  std::string lb = "work_stealing";
  /// How often an idle node's policy balances, in microseconds (greedy_refine: the period
  /// of its rounds).
  std::uint32_t lb_period_us = 2000;
  /// A node whose load is below this asks for work (diffusion, master_worker); a donor
  /// keeps at least this much.
  double lb_threshold = 1.0;
  /// Neighbourhood size of diffusion.
  std::uint32_t lb_neighbors = 2;
  /// A fraction. greedy_refine: the makespan above the lower bound it leaves alone, and the
  /// least gain worth moving for; diffusion and master_worker: the relative load difference
  /// with the partner worth a request.
  double lb_tolerance = 0.05;
  /// The master node of master_worker.
  std::uint32_t lb_master = 0;
  /// Print the settings table and return without running the application.
  bool help = false;

  /// Parses roam flags out of argv (removing them, so the application sees only its own
  /// arguments) on top of the environment. Throws roam::config_error naming the flag or
  /// variable and the accepted values.
  static config from_args(int& argc, char** argv);
  /// Environment variables only.
  static config from_environment();
  /// The table printed by --roam-help.
  static std::string help_text();

  /// Payload bytes of one MPI frame (mpi transport): the larger of inline_bytes and the
  /// largest bundle (aggregate_bytes x aggregate_growth), the latter counted up to 64 KiB.
  /// A payload up to this size travels in one MPI message with its header, so a full
  /// aggregation bundle needs no second one; larger payloads follow their header in a
  /// second message. Ranks must agree on it (it is part of the binary fingerprint checked
  /// at start-up).
  std::uint32_t frame_payload_bytes() const noexcept;
};

}  // namespace roam
