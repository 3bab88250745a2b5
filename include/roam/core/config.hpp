// roam — runtime configuration from command-line flags and environment variables.
#pragma once

#include <roam/base/settings.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roam {

/// The largest stack a handler or tasklet may have (--roam-stack-size, roam::stack_size).
inline constexpr std::uint64_t max_stack_bytes = std::uint64_t{1} << 30;

/// How nodes are formed.
enum class transport_kind {
  automatic,  ///< mpi when launched by mpiexec with more than one rank, else inproc
  inproc,     ///< virtual nodes inside this process
  mpi,        ///< nodes_per_rank nodes per MPI rank (one by default)
};

/// The settings of a job: the node runtime's own (the fields below) and those of every other
/// linked layer (`of<T>()`). Defaults are chosen for the machine the job runs on. Flags
/// (`--roam-threads 4` or `--roam-threads=4`) override environment variables
/// (`ROAM_THREADS=4`), which override the defaults. A plain value: copying copies every layer's
/// settings; not synchronized (set it up before roam::run, which copies it).
struct config {
  /// How nodes are formed (--roam-transport).
  transport_kind transport = transport_kind::automatic;
  /// Virtual nodes of the inproc transport (ignored under mpi: see nodes_per_rank).
  std::uint32_t nodes = 1;
  /// Nodes hosted by each MPI rank (mixed mode): the job has ranks x nodes_per_rank nodes,
  /// rank r hosting nodes [r x K, (r + 1) x K); messages between nodes of one rank never
  /// touch MPI. Ranks must agree on it (part of the binary fingerprint). In one process
  /// (inproc), which is one rank, it sets the nodes too; roam::run throws usage_error when
  /// it and `nodes` are both set and differ.
  std::uint32_t nodes_per_rank = 1;
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
  /// Flow control between ranks (mpi): bytes one rank may have on their way to another
  /// before the other hands them to its nodes and grants them back. Ranks must agree on it.
  std::uint64_t send_window_bytes = std::uint64_t{256} << 10;
  /// An application thread that sends waits (driving the network, running no handlers)
  /// while its process holds more than this many bytes it could not send yet (mpi: no
  /// credit or no request slot). Handlers are never held back.
  std::uint64_t send_backlog_bytes = std::uint64_t{64} << 20;
  /// Messages queued at a node by other nodes beyond which an application thread sending
  /// to it from the same process waits, and the node's process holds its grants of send
  /// credit (so that other ranks' senders wait too).
  std::uint32_t inbox_limit = 65536;
  /// Jobs of at least this many nodes route channel traffic through a grid of the nodes
  /// (ADR 43, docs/guide/aggregation.md): a thread keeps about 4 sqrt(P) aggregation
  /// buffers instead of 2P, records take two steps, and direct sends to nodes outside the
  /// sender's row and column follow them. 0: never. The default, 1024, is where direct
  /// lanes took 6 times the memory per node after a burst to every node (8 MB against
  /// 1.3 MB) and routed random traffic stayed next to direct (docs/performance.md). Ranks
  /// must agree.
  std::uint32_t route_min_nodes = 1024;
  /// A waiting application thread runs its node's work (on), or only waits (off).
  bool lend_app_thread = true;
  /// Stack of every handler and tasklet, in bytes (a multiple of the page size is used;
  /// a guard page comes on top). A handler or tasklet that overflows it stops the job with
  /// "roam: stack overflow in handler '<name>' on node N". roam::spawn takes a larger stack
  /// for one tasklet (roam::stack_size). Each worker's loop runs on a stack of this size too,
  /// with what it does between handlers: polling the network, admitting arrivals (a
  /// migrating object's deserialization), load-balancing messages.
  std::uint64_t stack_bytes = std::uint64_t{128} * 1024;
  /// Handlers and tasklets that may be suspended at once in a process (each holds a stack
  /// and two memory maps). Beyond it the job stops naming this setting, instead of failing
  /// to map a stack. 0: what the kernel's map limit (vm.max_map_count) leaves, about 30 000
  /// with Linux's default.
  std::uint32_t max_suspended = 0;
  /// Pin workers to cores through hwloc.
  bool pin = false;
  /// How long an idle worker searches for work before it parks, in microseconds.
  std::uint32_t spin_us = 50;
  /// How often a parked thread polls the network when it has communication duty, in
  /// microseconds (ten times less often while another thread of the node spins and polls).
  std::uint32_t poll_us = 100;
  /// Print the settings table and return without running the application.
  bool help = false;
  /// The settings of the layers above the node runtime (load balancing, the heterogeneous
  /// framework, ...), one struct per layer; see of<T>().
  layer_settings layers;

  /// The settings of the layer whose settings struct is `T` (`roam::lb::policy_settings`,
  /// ...), with their defaults until changed.
  template <class T>
  T& of() {
    return layers.get<T>();
  }
  /// The same, read-only: the defaults when the layer's settings were never changed.
  template <class T>
  const T& of() const {
    return layers.get<T>();
  }
  /// Sets any layer's setting by its flag name, as `--roam-<flag> <value>` would:
  /// `cfg.set("lb", "diffusion")`. Throws roam::config_error for an unknown flag or an invalid
  /// value.
  void set(std::string_view flag, std::string_view value);

  /// Parses roam flags out of argv (removing them, so the application sees only its own
  /// arguments) on top of the environment. Throws roam::config_error naming the flag or
  /// variable and the accepted values.
  static config from_args(int& argc, char** argv);
  /// Environment variables only.
  static config from_environment();
  /// The table printed by --roam-help: the settings of every linked layer.
  static std::string help_text();
  /// The node runtime's settings in the registry (see roam/base/settings.hpp).
  static const detail::settings_group& registration();

  /// Payload bytes of one MPI frame (mpi transport): the larger of inline_bytes and the
  /// largest bundle (aggregate_bytes x aggregate_growth), the latter counted up to 64 KiB.
  /// A payload up to this size travels in one MPI message with its header, so a full
  /// aggregation bundle needs no second one; larger payloads follow their header in a
  /// second message. Ranks must agree on it (it is part of the binary fingerprint checked
  /// at start-up).
  std::uint32_t frame_payload_bytes() const noexcept;
};

}  // namespace roam
