// Factories of the two transport backends (internal).
#pragma once

#include <roam/core/config.hpp>
#include <roam/transport/transport.hpp>

#include <memory>

namespace roam::detail {

/// `nodes` virtual nodes in this process; send() delivers on the calling thread.
std::unique_ptr<transport> make_inproc_transport(node_id nodes, delivery_function deliver);

/// One node per MPI rank of MPI_COMM_WORLD (initializing MPI if needed).
std::unique_ptr<transport> make_mpi_transport(const config& cfg, delivery_function deliver);

/// True when this process was started by an MPI launcher with more than one process.
bool launched_with_several_mpi_processes() noexcept;

/// Reassembles a message from wire bytes (header + payload), checking that the sizes
/// agree; fatal (naming the cause) when they do not.
message_ptr message_from_wire(const std::byte* data, std::size_t size, node_id claimed_source);

/// Called by fatal() before the process exits, to take the other processes down too.
void set_job_abort_hook(void (*hook)()) noexcept;

}  // namespace roam::detail
