// The CUDA backend: one stream per queue, a CUDA event recorded after each operation (for
// native waits between queues, and polled for completion: cuda_event_poller.hpp), page-locked
// host memory, kernels launched through cudaLaunchKernel from the `__global__` form that
// ROAM_KERNEL makes in files nvcc compiles.
#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "backends.hpp"
#include "cuda_event_poller.hpp"
#include "device_event_state.hpp"
#include "roam/hetero/kernel.hpp"

namespace roam::detail {
namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::string message = std::string("CUDA ") + what + " failed: " + cudaGetErrorName(status) +
                        " (" + cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free allocation error
    throw out_of_device_memory(message);
  }
  throw device_error(message);
}

class cuda_device final : public device {
 public:
  cuda_device(device_info info, int ordinal, unsigned compute_queues)
      : device(std::move(info)), ordinal_(ordinal) {
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    for (unsigned i = 0; i < compute_queues + 2; ++i) {
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      streams_.push_back(stream);
    }
    poller_ = std::make_unique<cuda_event_poller>(ordinal_, streams_.size());
  }

  ~cuda_device() override {
    try {
      synchronize();
    } catch (const device_error&) {
      // A failed operation was reported through its event; the streams are drained either way.
    }
    poller_.reset();
    for (auto s : streams_) cudaStreamDestroy(s);
  }

  unsigned compute_queue_count() const noexcept override {
    return static_cast<unsigned>(streams_.size() - 2);
  }

  bool direct_host_transfers(const void* memory, std::size_t bytes) const noexcept override {
    return bytes == 0 ||
           (page_locked(memory) && page_locked(static_cast<const char*>(memory) + bytes - 1));
  }

  device_buffer allocate(std::size_t bytes) override {
    if (bytes == 0) throw device_error("a device allocation of 0 bytes");
    select();
    void* memory = nullptr;
    check(cudaMalloc(&memory, bytes), "cudaMalloc");
    return {memory, bytes};
  }
  void release(device_buffer buffer) noexcept override {
    if (!buffer) return;
    cudaSetDevice(ordinal_);
    cudaFree(buffer.handle);
  }

  void* allocate_host(std::size_t bytes) override {
    select();
    void* memory = nullptr;
    check(cudaHostAlloc(&memory, bytes, cudaHostAllocPortable), "cudaHostAlloc");
    return memory;
  }
  void release_host(void* memory, std::size_t /*bytes*/) noexcept override { cudaFreeHost(memory); }

  device_event copy_to_device(device_queue queue, device_buffer destination, std::size_t offset,
                              const void* source, std::size_t bytes,
                              std::span<const device_event> after) override {
    const auto stream = prepare(queue, after);
    check(cudaMemcpyAsync(static_cast<char*>(destination.handle) + offset, source, bytes,
                          cudaMemcpyHostToDevice, streams_[stream]),
          "cudaMemcpyAsync (host to device)");
    return track(stream);
  }

  device_event copy_to_host(device_queue queue, void* destination, device_buffer source,
                            std::size_t offset, std::size_t bytes,
                            std::span<const device_event> after) override {
    const auto stream = prepare(queue, after);
    check(cudaMemcpyAsync(destination, static_cast<const char*>(source.handle) + offset, bytes,
                          cudaMemcpyDeviceToHost, streams_[stream]),
          "cudaMemcpyAsync (device to host)");
    return track(stream);
  }

  device_event copy_on_device(device_queue queue, device_buffer destination,
                              std::size_t destination_offset, device_buffer source,
                              std::size_t source_offset, std::size_t bytes,
                              std::span<const device_event> after) override {
    const auto stream = prepare(queue, after);
    check(cudaMemcpyAsync(static_cast<char*>(destination.handle) + destination_offset,
                          static_cast<const char*>(source.handle) + source_offset, bytes,
                          cudaMemcpyDeviceToDevice, streams_[stream]),
          "cudaMemcpyAsync (device to device)");
    return track(stream);
  }

  device_event launch(device_queue queue, const kernel& k, const launch_dims& dims,
                      std::span<const kernel_argument> arguments, std::size_t local_bytes,
                      std::span<const device_event> after) override {
    check_launch(k, dims, arguments);
    check_device_limits(info(), k, dims, local_bytes);
    if (k.cuda_function == nullptr) {
      throw device_error(std::string("kernel '") + (k.name ? k.name : "?") +
                         "' has no CUDA form (compile the file that defines it with nvcc)");
    }
    const auto stream = prepare(queue, after);
    std::vector<void*> slots;
    slots.reserve(arguments.size());
    for (const auto& argument : arguments)
      slots.push_back(const_cast<void*>(argument.value_address()));
    const dim3 grid(dims.groups[0], dims.groups[1], dims.groups[2]);
    const dim3 block(dims.local[0], dims.local[1], dims.local[2]);
    check(
        cudaLaunchKernel(k.cuda_function, grid, block, slots.data(), local_bytes, streams_[stream]),
        "cudaLaunchKernel");
    return track(stream);
  }

  void synchronize() override {
    cudaSetDevice(ordinal_);
    for (auto s : streams_) check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

 private:
  void select() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

  static bool page_locked(const void* memory) noexcept {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, memory) != cudaSuccess) {
      cudaGetLastError();  // not an error worth keeping: the answer is "no"
      return false;
    }
    return attributes.type == cudaMemoryTypeHost;  // cudaHostAlloc'd or registered
  }

  /// The position of `queue`'s stream, after making it wait for `after` on the device.
  std::size_t prepare(device_queue queue, std::span<const device_event> after) {
    select();
    const std::size_t stream = queue_position(queue, streams_.size() - 2);
    for (const auto& e : native_events(after)) {
      check(cudaStreamWaitEvent(streams_[stream], static_cast<cudaEvent_t>(e.state()->native), 0),
            "cudaStreamWaitEvent");
    }
    return stream;
  }

  device_event track(std::size_t stream) {
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    if (const auto status = cudaEventRecord(event, streams_[stream]); status != cudaSuccess) {
      cudaEventDestroy(event);
      check(status, "cudaEventRecord");
    }
    auto state = std::make_shared<device_event_state>(
        this, event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
    poller_->watch(stream, event, state);
    return device_event(state);
  }

  int ordinal_;
  std::vector<cudaStream_t> streams_;
  std::unique_ptr<cuda_event_poller> poller_;  ///< after the streams: stops before they go
};

/// Set once a CUDA device was discovered: locking memory before is of no use (and would create
/// a CUDA context in programs that never use one).
std::atomic<bool> cuda_devices_found{false};
/// Registrations the driver refused; past a few, it is out of lockable memory and asking again
/// (for every message block reused) would only cost time.
std::atomic<int> cuda_lock_refusals{0};
constexpr int cuda_lock_refusal_limit = 8;

}  // namespace

bool cuda_lock_host_memory(void* memory, std::size_t bytes) noexcept {
  if (!cuda_devices_found.load(std::memory_order_acquire) || memory == nullptr || bytes == 0 ||
      cuda_lock_refusals.load(std::memory_order_relaxed) >= cuda_lock_refusal_limit)
    return false;
  if (cudaHostRegister(memory, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  cudaGetLastError();  // refused (too much locked, an overlap): the memory stays pageable
  cuda_lock_refusals.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void cuda_unlock_host_memory(void* memory) noexcept {
  // After the CUDA runtime's own teardown (a block freed at exit) this fails harmlessly.
  if (cudaHostUnregister(memory) != cudaSuccess) cudaGetLastError();
}

std::vector<std::unique_ptr<device>> discover_cuda_devices(
    int first_index, const device_discovery_options& options) {
  std::vector<std::unique_ptr<device>> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: the backend simply has no devices
    return devices;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, ordinal), "cudaGetDeviceProperties");
    device_info info;
    info.index = first_index + static_cast<int>(devices.size());
    info.backend = backend::cuda;
    info.type = device_type::gpu;
    info.name = properties.name;
    info.memory_bytes = capped_memory(properties.totalGlobalMem, options.memory_limit);
    info.compute_units = static_cast<unsigned>(properties.multiProcessorCount);
    info.max_group_items = static_cast<std::size_t>(properties.maxThreadsPerBlock);
    // Without cudaFuncSetAttribute, a launch may ask for this much dynamic shared memory.
    info.max_local_bytes = properties.sharedMemPerBlock;
    devices.push_back(std::make_unique<cuda_device>(std::move(info), ordinal,
                                                    std::max(1u, options.compute_queues)));
  }
  if (!devices.empty()) cuda_devices_found.store(true, std::memory_order_release);
  return devices;
}

}  // namespace roam::detail
