// roam — the two transport backends, for the node runtime that picks one. Not for
// applications.
#pragma once

#include <roam/transport/transport.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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

// ---- decoders of bytes from other processes (each fuzzed: fuzz/) -------------------------

/// Reassembles a message from wire bytes (header + payload). Throws deserialization_error
/// when they cannot be one: fewer bytes than a header, or a payload size in the header that
/// disagrees with the bytes that came.
message_ptr decode_frame(const std::byte* data, std::size_t size);
/// decode_frame(), fatal (naming `claimed_source` and the cause) instead of throwing.
message_ptr message_from_wire(const std::byte* data, std::size_t size, node_id claimed_source);

/// The nodes of a job and those of the process that receives: what an arriving header must
/// agree with.
struct frame_layout {
  node_id nodes = 1;        ///< in the job
  node_id first_local = 0;  ///< the receiving process hosts [first_local,
  node_id local_count = 1;  ///< first_local + local_count); every process hosts as many
};
/// Why a header that arrived from another process cannot be a message for this one (bad
/// magic, checksum, flags, source or destination, a broadcast copy that did not come from
/// another process to this process's first node), or nullptr if it can.
const char* header_problem(const message_header& h, const frame_layout& job) noexcept;

/// Where two fingerprints (lines of text) that differ first differ.
struct fingerprint_difference {
  std::size_t line = 0;  ///< the first line that differs (from 0)
  /// Each side's text of that line, or nullopt where its text has no such line.
  std::optional<std::string> ours, theirs;
  /// Every line is the same: one text ends with a line break and the other does not.
  bool final_break_only = false;
  /// How an error names one side ("'<line>'", "no line N", "a final line break" ...).
  static std::string describe(const std::optional<std::string>& line, std::size_t index,
                              bool final_break_only, bool breaks);
};
fingerprint_difference first_difference(std::string_view ours, std::string_view theirs);

}  // namespace roam::detail
