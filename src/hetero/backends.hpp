#pragma once
// The backends' factories; each backend file defines its own (the OpenCL and CUDA ones are
// compiled only when their toolkits are found).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "roam/hetero/device.hpp"

namespace roam::detail {

std::unique_ptr<device> make_host_device(int index, const device_discovery_options& options);
#if defined(ROAM_HAVE_OPENCL)
std::vector<std::unique_ptr<device>> discover_opencl_devices(
    int first_index, const device_discovery_options& options);
#endif
#if defined(ROAM_HAVE_CUDA)
std::vector<std::unique_ptr<device>> discover_cuda_devices(int first_index,
                                                           const device_discovery_options& options);
/// lock_host_memory / unlock_host_memory for CUDA: false until a CUDA device was discovered.
bool cuda_lock_host_memory(void* memory, std::size_t bytes) noexcept;
void cuda_unlock_host_memory(void* memory) noexcept;
#endif

/// Tests only: the next `count` copies between host memory and a host-backend device's own
/// memory (host_separate_memory) fail with a device_error, as a GPU's transfer may. The other
/// backends' copies cannot be made to fail on purpose, and the engine's handling of a failed
/// transfer must be tested somewhere.
void fail_next_host_copies(unsigned count) noexcept;
/// Tests only: host-backend devices with memory of their own refuse allocations beyond `bytes`
/// in all (0: no such cap), as a GPU whose memory another process holds refuses them while the
/// framework's own count shows room.
void cap_host_device_memory(std::size_t bytes) noexcept;

/// Checks a launch before any backend runs it, throwing a device_error that names the kernel:
/// no dimension is zero, and the arguments match the kernel's parameters (count, pointer or
/// scalar, sizes) when the kernel lists them. Every backend's launch() calls it, and
/// hetero_task's submit() with the task's arguments, so the mistake surfaces where it was made.
void check_launch(const kernel& k, const launch_dims& dims,
                  std::span<const kernel_argument> arguments);
/// Why `device` cannot run a launch of `dims` with `local_bytes` of dynamic local memory (a
/// group larger than it takes, more local memory than it has), or empty when it can. Every
/// backend's launch() throws it; the engine places tasks only on devices where it is empty.
[[nodiscard]] std::string beyond_device_limits(const device_info& device, const kernel& k,
                                               const launch_dims& dims, std::size_t local_bytes);
void check_device_limits(const device_info& device, const kernel& k, const launch_dims& dims,
                         std::size_t local_bytes);

/// Page-aligned host memory (whole pages, as DMA engines and vector loads like them).
void* allocate_page_aligned(std::size_t bytes);
void free_page_aligned(void* memory) noexcept;

/// The memory a device reports, capped by the configured limit (0: no limit).
inline std::size_t capped_memory(std::size_t device_bytes, std::size_t limit) {
  return limit != 0 && limit < device_bytes ? limit : device_bytes;
}

}  // namespace roam::detail
