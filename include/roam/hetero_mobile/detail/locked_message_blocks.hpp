#pragma once
// Large message blocks page-locked for the process' CUDA devices, so that a roam::buffer can be
// the host side of a device transfer: a halo read from a GPU lands in the buffer that becomes the
// message, and one that arrived by MPI goes to the GPU from where MPI put it, with no staging
// copy on either side (hetero_object::read_range, write_range taking the buffer over).
namespace roam::detail {

/// Installs lock_host_memory / unlock_host_memory as the transport's large-block locking
/// (set_large_block_locking). Blocks stay pageable until a hetero_runtime has found a CUDA
/// device; without one nothing is ever locked. Idempotent; returns true.
bool install_locked_message_blocks() noexcept;

/// Every program that includes roam/hetero_mobile.hpp installs it before main.
inline const bool locked_message_blocks_installed = install_locked_message_blocks();

}  // namespace roam::detail
