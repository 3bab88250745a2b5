// The OpenCL backend: one context per device, in-order command queues (compute queues plus one
// copy queue per direction), kernels compiled at run time from the source text that
// ROAM_KERNEL keeps, cached per device.
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "backends.hpp"
#include "device_event_state.hpp"
#include "roam/hetero/kernel.hpp"

namespace roam::detail {
namespace {

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) {
    std::string message =
        std::string("OpenCL ") + what + " failed (error " + std::to_string(status) + ")";
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES)
      throw out_of_device_memory(message);
    throw device_error(message);
  }
}

// The dialect of kernel.hpp in OpenCL C.
constexpr const char* dialect_prelude = R"(
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define roam_local_id(d) ((unsigned)get_local_id(d))
#define roam_local_size(d) ((unsigned)get_local_size(d))
#define roam_group_id(d) ((unsigned)get_group_id(d))
#define roam_num_groups(d) ((unsigned)get_num_groups(d))
#define roam_global_id(d) ((unsigned)get_global_id(d))
#define roam_global __global
#define roam_local __local
#define roam_dynamic_local(T) ((__local T*)roam_detail_local)
)";

// OpenCL C has no variadic macros (NVIDIA's compiler rejects them), and a region's body may hold
// commas, so regions are expanded here: `roam_parallel_region( body )` becomes
// `body barrier(...);`, the body found by matching parentheses.
std::string expand_parallel_regions(std::string body) {
  static constexpr std::string_view marker = "roam_parallel_region";
  static constexpr std::string_view barrier =
      " barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);";
  for (std::size_t at = body.find(marker); at != std::string::npos; at = body.find(marker, at)) {
    std::size_t open = at + marker.size();
    while (open < body.size() && body[open] == ' ') ++open;
    if (open >= body.size() || body[open] != '(') {
      at = open;
      continue;
    }
    int depth = 0;
    std::size_t close = open;
    for (; close < body.size(); ++close) {
      if (body[close] == '(') ++depth;
      if (body[close] == ')' && --depth == 0) break;
    }
    if (close >= body.size()) throw device_error("unbalanced roam_parallel_region( in a kernel");
    const std::string inner = body.substr(open + 1, close - open - 1);
    body.replace(at, close + 1 - at, inner + std::string(barrier));
    at += inner.size() + barrier.size();
  }
  return body;
}

// The hidden dynamic-local parameter has a 32-byte element type (ulong4) so that the memory
// behind roam_dynamic_local(T) is aligned for any T up to double4: NVIDIA's OpenCL aligns a
// __local argument only to its declared element type, and with `__local char*` a kernel that
// stored 4-byte values through it faulted (the context was then lost: every later build and
// context creation of the process failed with -9999).
std::string kernel_source(const kernel& k) {
  if (k.opencl_parameters == nullptr) return k.opencl_body;
  std::string parameters = k.opencl_parameters;
  const auto close = parameters.rfind(')');
  if (close == std::string::npos) throw device_error("malformed kernel parameter list");
  parameters.erase(close);
  return std::string(dialect_prelude) + "__kernel void " + k.name + parameters +
         ", __local ulong4* roam_detail_local)\n" + expand_parallel_regions(k.opencl_body) + "\n";
}

template <class T>
T device_query(cl_device_id id, cl_device_info what) {
  T value{};
  check(clGetDeviceInfo(id, what, sizeof(T), &value, nullptr), "clGetDeviceInfo");
  return value;
}

std::string device_name(cl_device_id id) {
  std::size_t size = 0;
  check(clGetDeviceInfo(id, CL_DEVICE_NAME, 0, nullptr, &size), "clGetDeviceInfo");
  std::string name(size, '\0');
  check(clGetDeviceInfo(id, CL_DEVICE_NAME, size, name.data(), nullptr), "clGetDeviceInfo");
  while (!name.empty() && name.back() == '\0') name.pop_back();
  return name;
}

void CL_CALLBACK on_event_complete(cl_event event, cl_int status, void* user) {
  auto* state = static_cast<std::shared_ptr<device_event_state>*>(user);
  (void)event;
  if (status < 0) {
    (*state)->complete(std::make_exception_ptr(
        device_error("an OpenCL operation failed (status " + std::to_string(status) + ")")));
  } else {
    (*state)->complete();
  }
  delete state;
}

class opencl_device final : public device {
 public:
  opencl_device(device_info info, cl_device_id id, unsigned compute_queues)
      : device(std::move(info)), id_(id) {
    cl_int status = CL_SUCCESS;
    context_ = clCreateContext(nullptr, 1, &id_, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    for (unsigned i = 0; i < compute_queues + 2; ++i) {
      queues_.push_back(clCreateCommandQueue(context_, id_, 0, &status));
      check(status, "clCreateCommandQueue");
    }
  }

  ~opencl_device() override {
    synchronize();
    for (auto& [k, entry] : kernels_) entry.release();
    for (auto q : queues_) clReleaseCommandQueue(q);
    clReleaseContext(context_);
  }

  unsigned compute_queue_count() const noexcept override {
    return static_cast<unsigned>(queues_.size() - 2);
  }

  device_buffer allocate(std::size_t bytes) override {
    if (bytes == 0) throw device_error("a device allocation of 0 bytes");
    cl_int status = CL_SUCCESS;
    cl_mem memory = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &status);
    check(status, "clCreateBuffer");
    return {memory, bytes};
  }

  void release(device_buffer buffer) noexcept override {
    if (buffer) clReleaseMemObject(static_cast<cl_mem>(buffer.handle));
  }

  device_event copy_to_device(device_queue queue, device_buffer destination, std::size_t offset,
                              const void* source, std::size_t bytes,
                              std::span<const device_event> after) override {
    auto waits = wait_list(after);
    cl_event event = nullptr;
    check(clEnqueueWriteBuffer(queue_of(queue), static_cast<cl_mem>(destination.handle), CL_FALSE,
                               offset, bytes, source, count(waits), data(waits), &event),
          "clEnqueueWriteBuffer");
    return track(queue, event);
  }

  device_event copy_to_host(device_queue queue, void* destination, device_buffer source,
                            std::size_t offset, std::size_t bytes,
                            std::span<const device_event> after) override {
    auto waits = wait_list(after);
    cl_event event = nullptr;
    check(clEnqueueReadBuffer(queue_of(queue), static_cast<cl_mem>(source.handle), CL_FALSE, offset,
                              bytes, destination, count(waits), data(waits), &event),
          "clEnqueueReadBuffer");
    return track(queue, event);
  }

  device_event copy_on_device(device_queue queue, device_buffer destination,
                              std::size_t destination_offset, device_buffer source,
                              std::size_t source_offset, std::size_t bytes,
                              std::span<const device_event> after) override {
    auto waits = wait_list(after);
    cl_event event = nullptr;
    check(clEnqueueCopyBuffer(queue_of(queue), static_cast<cl_mem>(source.handle),
                              static_cast<cl_mem>(destination.handle), source_offset,
                              destination_offset, bytes, count(waits), data(waits), &event),
          "clEnqueueCopyBuffer");
    return track(queue, event);
  }

  device_event launch(device_queue queue, const kernel& k, const launch_dims& dims,
                      std::span<const kernel_argument> arguments, std::size_t local_bytes,
                      std::span<const device_event> after) override {
    check_launch(k, dims, arguments);
    check_device_limits(info(), k, dims, local_bytes);
    auto waits = wait_list(after);
    auto& entry = compiled(k);
    std::size_t global[3];
    std::size_t local[3];
    for (int d = 0; d < 3; ++d) {
      global[d] = std::size_t{dims.groups[d]} * dims.local[d];
      local[d] = dims.local[d];
    }
    cl_event event = nullptr;
    {
      // A cl_kernel holds its arguments: setting them and enqueuing must not interleave.
      std::lock_guard lock(entry.mutex);
      cl_uint index = 0;
      for (const auto& argument : arguments) {
        cl_mem memory = static_cast<cl_mem>(argument.buffer.handle);
        const cl_int set = argument.is_buffer
                               ? clSetKernelArg(entry.handle, index, sizeof(cl_mem), &memory)
                               : clSetKernelArg(entry.handle, index, argument.scalar_bytes,
                                                argument.scalar.data());
        // (A hand-written source's parameters are not listed, so only OpenCL can check them.)
        if (set != CL_SUCCESS) {
          check(set, (std::string("clSetKernelArg for kernel '") + (k.name ? k.name : "?") +
                      "', argument " + std::to_string(index + 1))
                         .c_str());
        }
        ++index;
      }
      if (k.opencl_parameters != nullptr) {
        check(clSetKernelArg(entry.handle, index, std::max<std::size_t>(local_bytes, 8), nullptr),
              "clSetKernelArg (dynamic local memory)");
      }
      check(clEnqueueNDRangeKernel(queue_of(queue), entry.handle, 3, nullptr, global, local,
                                   count(waits), data(waits), &event),
            "clEnqueueNDRangeKernel");
    }
    return track(queue, event);
  }

  void synchronize() override {
    for (auto q : queues_) clFinish(q);
  }

 private:
  struct compiled_kernel {
    cl_program program = nullptr;
    cl_kernel handle = nullptr;
    std::mutex mutex;
    /// The texts it was built from: a kernel made at the address of one destroyed (a kernel
    /// filled by hand in a loop, say) is built again when its texts are other ones.
    const char* name = nullptr;
    const char* parameters = nullptr;
    const char* body = nullptr;

    [[nodiscard]] bool built_from(const kernel& k) const {
      return handle != nullptr && name == k.name && parameters == k.opencl_parameters &&
             body == k.opencl_body;
    }
    void release() {
      if (handle != nullptr) clReleaseKernel(handle);
      if (program != nullptr) clReleaseProgram(program);
      handle = nullptr;
      program = nullptr;
    }
  };

  compiled_kernel& compiled(const kernel& k) {
    std::lock_guard lock(kernels_mutex_);
    auto found = kernels_.find(&k);
    if (found != kernels_.end() && found->second.built_from(k)) return found->second;
    if (k.opencl_body == nullptr) {
      throw device_error(std::string("kernel '") + (k.name ? k.name : "?") +
                         "' has no OpenCL form");
    }
    const std::string source = kernel_source(k);
    const char* text = source.c_str();
    cl_int status = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(context_, 1, &text, nullptr, &status);
    check(status, "clCreateProgramWithSource");
    if (const cl_int built = clBuildProgram(program, 1, &id_, "-cl-std=CL1.2", nullptr, nullptr);
        built != CL_SUCCESS) {
      std::size_t size = 0;
      clGetProgramBuildInfo(program, id_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(program, id_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      clReleaseProgram(program);
      throw device_error(std::string("OpenCL could not compile kernel '") + k.name + "' (error " +
                         std::to_string(built) + "):\n" + log);
    }
    cl_kernel handle = clCreateKernel(program, k.name, &status);
    if (status != CL_SUCCESS) clReleaseProgram(program);
    check(status, "clCreateKernel");
    auto& entry = kernels_[&k];
    std::lock_guard entry_lock(entry.mutex);  // (the old kernel's launches have been enqueued)
    entry.release();
    entry.program = program;
    entry.handle = handle;
    entry.name = k.name;
    entry.parameters = k.opencl_parameters;
    entry.body = k.opencl_body;
    return entry;
  }

  cl_command_queue queue_of(device_queue queue) const {
    return queues_[queue_position(queue, queues_.size() - 2)];
  }

  std::vector<cl_event> wait_list(std::span<const device_event> after) const {
    std::vector<cl_event> events;
    for (const auto& e : native_events(after))
      events.push_back(static_cast<cl_event>(e.state()->native));
    return events;
  }
  static cl_uint count(const std::vector<cl_event>& v) { return static_cast<cl_uint>(v.size()); }
  static const cl_event* data(const std::vector<cl_event>& v) {
    return v.empty() ? nullptr : v.data();
  }

  device_event track(device_queue queue, cl_event event) {
    auto state = std::make_shared<device_event_state>(
        this, event, [](void* e) { clReleaseEvent(static_cast<cl_event>(e)); });
    auto* callback_state = new std::shared_ptr<device_event_state>(state);
    const cl_int status = clSetEventCallback(event, CL_COMPLETE, on_event_complete, callback_state);
    if (status != CL_SUCCESS) {
      delete callback_state;
      check(status, "clSetEventCallback");
    }
    // Without a flush, an implementation may hold the command back until the next sync point.
    clFlush(queue_of(queue));
    return device_event(state);
  }

  cl_device_id id_;
  cl_context context_ = nullptr;
  std::vector<cl_command_queue> queues_;
  std::mutex kernels_mutex_;
  std::map<const kernel*, compiled_kernel> kernels_;
};

}  // namespace

std::vector<std::unique_ptr<device>> discover_opencl_devices(
    int first_index, const device_discovery_options& options) {
  std::vector<std::unique_ptr<device>> devices;
  cl_uint platform_count = 0;
  if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS || platform_count == 0)
    return devices;
  std::vector<cl_platform_id> platforms(platform_count);
  check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");
  for (auto platform : platforms) {
    cl_uint count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(count);
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr),
          "clGetDeviceIDs");
    for (auto id : ids) {
      device_info info;
      info.index = first_index + static_cast<int>(devices.size());
      info.backend = backend::opencl;
      const auto type = device_query<cl_device_type>(id, CL_DEVICE_TYPE);
      info.type = (type & CL_DEVICE_TYPE_GPU) != 0   ? device_type::gpu
                  : (type & CL_DEVICE_TYPE_CPU) != 0 ? device_type::cpu
                                                     : device_type::accelerator;
      info.name = device_name(id);
      info.memory_bytes = capped_memory(device_query<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE),
                                        options.memory_limit);
      info.compute_units = device_query<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
      info.max_group_items = device_query<std::size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      info.max_local_bytes = device_query<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
      devices.push_back(std::make_unique<opencl_device>(std::move(info), id,
                                                        std::max(1u, options.compute_queues)));
    }
  }
  return devices;
}

}  // namespace roam::detail
