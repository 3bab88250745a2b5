// roam — the two transport backends, for the node runtime that picks one. Not for
// applications.
#pragma once

#include <roam/transport/transport.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace roam::detail {

/// `nodes` virtual nodes in this process; send() delivers on the calling thread.
std::unique_ptr<transport> make_inproc_transport(node_id nodes, delivery_function deliver);

/// What the MPI backend needs of the job's settings.
struct mpi_transport_options {
  /// A payload up to this size travels in one MPI message with its header (the frame size);
  /// larger ones follow their header in a second message. Ranks must agree on it.
  std::uint32_t frame_payload_bytes = 512;
  /// Threads that send start their MPI sends themselves (no dedicated communication thread).
  bool direct_sends = true;
  /// Nodes hosted by each rank: rank r hosts nodes [r x K, (r + 1) x K). A message between
  /// two of them is delivered on the sending thread, as inproc does.
  std::uint32_t nodes_per_rank = 1;
  /// Bytes this rank may have on their way to one other rank before that rank hands them
  /// to its nodes (send_credits.hpp). Ranks must agree on it.
  std::uint64_t send_window_bytes = std::uint64_t{256} << 10;
  /// Whether this process's nodes have more queued than they should take in: grants of
  /// send credit wait while it is true. Called by the thread driving MPI; may be empty.
  std::function<bool()> receiver_overloaded;
};

/// `options.nodes_per_rank` nodes per MPI rank of MPI_COMM_WORLD (initializing MPI if needed).
std::unique_ptr<transport> make_mpi_transport(const mpi_transport_options& options,
                                              delivery_function deliver);

/// True when this process was started by an MPI launcher with more than one process.
bool launched_with_several_mpi_processes() noexcept;

/// Reassembles a message from wire bytes (header + payload), checking that the sizes
/// agree; fatal (naming the cause) when they do not.
message_ptr message_from_wire(const std::byte* data, std::size_t size, node_id claimed_source);

}  // namespace roam::detail
