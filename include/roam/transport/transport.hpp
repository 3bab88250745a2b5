// roam — the transport interface: moves byte messages between nodes.
//
// Two backends implement it: `inproc` (virtual nodes inside one process) and `mpi`
// (--roam-nodes-per-rank nodes per MPI rank, one by default). Layers above never see which one
// runs.
#pragma once

#include <roam/transport/detail/exposed_memory.hpp>
#include <roam/transport/message.hpp>
#include <roam/transport/node_id.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace roam::detail {

/// Called by a transport for every message that arrives for a node hosted by this process.
/// It may be called from any thread, concurrently for different nodes. `sealed_here` is
/// true when the message was built and sealed by this process (inproc sends): its header
/// was checked when it was posted, so it is not validated again; bytes from anywhere else
/// (another rank, injected test bytes) are.
using delivery_function = std::function<void(message_ptr, bool sealed_here)>;

class transport {
 public:
  virtual ~transport() = default;

  /// Total number of nodes across the job.
  virtual node_id size() const noexcept = 0;
  /// Nodes hosted by this process: [first_local(), first_local() + local_count()).
  virtual node_id first_local() const noexcept = 0;
  virtual node_id local_count() const noexcept = 0;
  /// Processes of this job on this host (to share cores among them by default).
  virtual unsigned processes_on_host() const noexcept = 0;
  /// This process's index among those (0 .. processes_on_host()-1), for pinning.
  virtual unsigned index_on_host() const noexcept = 0;
  /// Name for messages and `--roam-help` ("inproc" or "mpi").
  virtual const char* name() const noexcept = 0;

  /// Hands a message (header.dest names a node hosted elsewhere) to the transport, which
  /// seals its header (checksum) if the bytes leave this process.
  /// Thread-safe. Messages handed over in a happens-before order by any threads of one
  /// source node reach one destination node in that order (FIFO per (source, dest)).
  /// The transport owns the message afterwards and releases it once it has left.
  virtual void send(message_ptr m) = 0;

  /// True if someone must call progress() for messages to move (mpi), false if sends
  /// deliver directly (inproc).
  virtual bool needs_progress() const noexcept = 0;

  /// Moves messages: starts queued sends, completes finished ones, receives and delivers.
  /// Safe to call from any thread; if another thread is already making progress it
  /// returns false at once. Returns true if it did any work.
  virtual bool progress() = 0;

  /// Blocks until every message handed to send() has left this process.
  virtual void drain() = 0;

  /// Bytes handed to send() that have not started leaving this process (waiting for a
  /// request slot or for the receiver's credit). Any thread; a snapshot.
  virtual std::uint64_t unsent_bytes() const noexcept { return 0; }

  /// Called while the transport delivers an arrival from node `source`, on the thread that
  /// delivers it: `bytes` of it were relayed on (routed aggregation). Their credit goes back
  /// to `source` only once the messages marked `relayed` that this process handed to send()
  /// and that wait to leave it are down to a window: a relay pushes back on the senders
  /// whose records it relays instead of queueing them without bound. (Relayed bundles are
  /// the records' last step, whose credit is never held this way, so holding cannot
  /// deadlock.) No-op where the bytes never met flow control.
  virtual void hold_credit_for_relay(node_id source, std::uint64_t bytes) {
    (void)source;
    (void)bytes;
  }

  /// Used by a dedicated communication thread when idle: returns when a send is queued or
  /// after `max`, whichever comes first.
  virtual void idle_wait(std::chrono::microseconds max) = 0;

  /// Checks that every process runs the same binary: `fingerprint` lists the handler table
  /// and wire-relevant settings, one entry per line. On mismatch, stops the job naming the
  /// first entry that differs. Collective over all processes; called before any traffic.
  virtual void validate_fingerprint(const std::string& fingerprint) = 0;

  /// The steady clock of the job's first process as this process sees it (for traces):
  /// `offset_ns` is this process's steady clock minus the first process's, `epoch_ns` a
  /// reading of the first process's clock taken during the call. Collective over all
  /// processes; call before any traffic. Under MPI the offset comes from the fastest of
  /// several round trips to the first process (Cristian's method): it is off by at most
  /// half that round trip.
  struct clock_alignment {
    std::int64_t offset_ns = 0;
    std::int64_t epoch_ns = 0;
  };
  virtual clock_alignment align_clocks() = 0;
  /// Fault injection for tests: ships `bytes` to node `dest` exactly as given, as if they
  /// were a message. The receiver validates them like any arriving message.
  virtual void send_raw_for_testing(node_id dest, std::vector<std::byte> bytes) = 0;
  /// Fault injection for tests: ships `bytes` as the separate payload frame of a large
  /// message (after a header frame sent with send_raw_for_testing). Throws usage_error on a
  /// transport without separate payload frames.
  virtual void send_raw_payload_for_testing(node_id dest, std::vector<std::byte> bytes) = 0;

  /// Exposes `bytes` bytes of every process to one-sided copies by the others. Collective
  /// over all processes, called while no other thread of the process uses the transport
  /// (before the nodes start). nullptr where the transport has none (inproc: one process).
  /// Stops the job, naming the cause, when the memory cannot be exposed.
  virtual std::unique_ptr<exposed_memory> expose(std::uint64_t bytes) {
    (void)bytes;
    return nullptr;
  }

  /// Synchronizes all processes outside the message layer, at shutdown. Keeps receiving while it
  /// waits, delivering what arrives, so that a peer still draining its sends to this process can
  /// finish (the caller discards such late, uncounted messages once its nodes have stopped).
  virtual void process_barrier() = 0;
};

}  // namespace roam::detail
