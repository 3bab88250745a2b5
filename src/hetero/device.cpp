// The parts of the device API that every backend shares.
#include "roam/hetero/device.hpp"
#include <roam/base/detail/enum_names.hpp>

#include <roam/base/detail/page_size.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <sstream>

#include "backends.hpp"
#include "device_event_state.hpp"
#include "roam/hetero/kernel.hpp"

namespace roam {

const char* to_string(backend b) noexcept {
  static constexpr const char* names[] = {"host", "opencl", "cuda"};
  return detail::enum_name(b, names);
}

const char* to_string(device_type t) noexcept {
  static constexpr const char* names[] = {"cpu", "gpu", "accelerator", "any"};
  return detail::enum_name(t, names);
}

device_event device_event::completed() {
  auto state = std::make_shared<detail::device_event_state>();
  state->complete();
  return device_event(std::move(state));
}

bool device_event::ready() const noexcept {
  return !state_ || state_->done.load(std::memory_order_acquire);
}

namespace {
std::atomic<device_wait_hook> wait_hook{nullptr};
}  // namespace

void set_device_wait_hook(device_wait_hook hook) noexcept {
  wait_hook.store(hook, std::memory_order_release);
}

void device_event::wait() const {
  if (!ready()) {
    device_wait_hook hook = wait_hook.load(std::memory_order_acquire);
    if (hook == nullptr || !hook(*this)) detail::wait_until_done(*this);
  }
  if (auto failure = error()) std::rethrow_exception(failure);
}

std::exception_ptr device_event::error() const {
  // No lock: complete() writes the error once, before the release store of `done` that ready()
  // acquires, and never again; the engine asks this of every copy it touches per task.
  if (!state_ || !ready()) return nullptr;
  return state_->error;
}

void device_event::on_complete(std::function<void()> callback) const {
  if (state_) {
    std::unique_lock lock(state_->mutex);
    if (!state_->done.load(std::memory_order_relaxed)) {
      state_->callbacks.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

namespace {
/// Groups of `local` items covering `items` (at least one group), or a clear error.
std::uint32_t groups_covering(std::size_t items, std::uint32_t local) {
  if (local == 0) throw device_error("launch_dims with a work-group size of 0");
  const std::size_t groups = std::max<std::size_t>((items + local - 1) / local, 1);
  if (groups > std::numeric_limits<std::uint32_t>::max()) {
    throw device_error("launch_dims over " + std::to_string(items) +
                       " items needs more work-groups than a dimension holds (2^32 - 1); use "
                       "larger groups or more dimensions");
  }
  return static_cast<std::uint32_t>(groups);
}
}  // namespace

launch_dims launch_dims::linear(std::size_t items, std::uint32_t local) {
  launch_dims d;
  d.local = {local, 1, 1};
  d.groups = {groups_covering(items, local), 1, 1};
  return d;
}

launch_dims launch_dims::grid2d(std::size_t rows, std::size_t columns, std::uint32_t local) {
  launch_dims d;
  d.local = {local, local, 1};
  d.groups = {groups_covering(columns, local), groups_covering(rows, local), 1};
  return d;
}

namespace detail {
void* allocate_page_aligned(std::size_t bytes) {
  const std::size_t page = page_bytes();
  void* memory =
      std::aligned_alloc(page, (std::max<std::size_t>(bytes, 1) + page - 1) / page * page);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
}
void free_page_aligned(void* memory) noexcept { std::free(memory); }

namespace {
std::string describe(const kernel_parameter& p) {
  switch (p.what) {
    case kernel_parameter::kind::pointer:
      return p.bytes == 0
                 ? "a pointer to device memory"
                 : "a pointer to device memory (elements of " + std::to_string(p.bytes) + " bytes)";
    case kernel_parameter::kind::integer:
      return "an integer of " + std::to_string(p.bytes) + " bytes";
    case kernel_parameter::kind::floating:
      return "a floating-point scalar of " + std::to_string(p.bytes) + " bytes";
  }
  return "?";
}

std::string describe(const kernel_argument& a) {
  if (a.is_buffer) {
    return a.element_bytes == 0
               ? "device memory"
               : "an object (elements of " + std::to_string(a.element_bytes) + " bytes)";
  }
  return std::string(a.scalar_floating ? "a floating-point scalar" : "a scalar") + " of " +
         std::to_string(a.scalar_bytes) + " bytes";
}

bool matches(const kernel_parameter& p, const kernel_argument& a) {
  if (p.what == kernel_parameter::kind::pointer) {
    // A kernel may view memory as bytes (char*) or untyped; otherwise the element sizes agree.
    // An element may also be a whole number of the pointer's (a complex<double> or a struct
    // of floats viewed as double* or float*, as interleaved data is written in C).
    return a.is_buffer && (a.element_bytes == 0 || p.bytes <= 1 || a.element_bytes % p.bytes == 0);
  }
  return !a.is_buffer && a.scalar_bytes == p.bytes &&
         a.scalar_floating == (p.what == kernel_parameter::kind::floating);
}
}  // namespace

std::string beyond_device_limits(const device_info& device, const kernel& k,
                                 const launch_dims& dims, std::size_t local_bytes) {
  if (device.backend == backend::opencl && k.opencl_parameters == nullptr && local_bytes != 0) {
    return "dynamic local memory, for which a complete OpenCL source has no parameter (declare "
           "its __local arrays in the source instead)";
  }
  if (device.max_group_items != 0 && dims.local_count() > device.max_group_items) {
    return "work-groups of " + std::to_string(dims.local_count()) + " items; " + device.name +
           " takes at most " + std::to_string(device.max_group_items);
  }
  if (device.max_local_bytes != 0 && local_bytes > device.max_local_bytes) {
    return std::to_string(local_bytes) + " bytes of local memory per group; " + device.name +
           " has " + std::to_string(device.max_local_bytes);
  }
  return {};
}

void check_device_limits(const device_info& device, const kernel& k, const launch_dims& dims,
                         std::size_t local_bytes) {
  if (auto beyond = beyond_device_limits(device, k, dims, local_bytes); !beyond.empty()) {
    throw device_error("kernel '" + std::string(k.name != nullptr ? k.name : "?") + "' asks for " +
                       beyond);
  }
}

void check_launch(const kernel& k, const launch_dims& dims,
                  std::span<const kernel_argument> arguments) {
  // (The name is made into a string only for an error: this runs on every launch.)
  auto name = [&] { return std::string(k.name != nullptr ? k.name : "?"); };
  if (dims.group_count() == 0 || dims.local_count() == 0) {
    throw device_error("kernel '" + name() + "' launched with a zero dimension");
  }
  if (k.parameters == nullptr) return;  // filled by hand without its parameters
  if (arguments.size() != k.parameter_count) {
    throw device_error("kernel '" + name() + "' takes " + std::to_string(k.parameter_count) +
                       " arguments; it was given " + std::to_string(arguments.size()));
  }
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (!matches(k.parameters[i], arguments[i])) {
      throw device_error("kernel '" + name() + "', argument " + std::to_string(i + 1) +
                         ": the parameter is " + describe(k.parameters[i]) + "; it was given " +
                         describe(arguments[i]));
    }
  }
}
}  // namespace detail

void* device::allocate_host(std::size_t bytes) { return detail::allocate_page_aligned(bytes); }

void device::release_host(void* memory, std::size_t /*bytes*/) noexcept {
  detail::free_page_aligned(memory);
}

std::vector<device_event> device::native_events(std::span<const device_event> after) const {
  std::vector<device_event> native;
  for (const auto& event : after) {
    if (event.ready()) {
      if (auto failure = event.error()) std::rethrow_exception(failure);
      continue;
    }
    if (event.state()->owner == this && event.state()->native != nullptr) {
      native.push_back(event);
    } else {
      event.wait();
    }
  }
  return native;
}

namespace {
#if defined(ROAM_HAVE_OPENCL)
constexpr bool opencl_built = true;
#else
constexpr bool opencl_built = false;
#endif
#if defined(ROAM_HAVE_CUDA)
constexpr bool cuda_built = true;
#else
constexpr bool cuda_built = false;
#endif
}  // namespace

bool device::direct_host_transfers(const void* /*memory*/, std::size_t /*bytes*/) const noexcept {
  return true;
}

bool lock_host_memory(void* memory, std::size_t bytes) noexcept {
#if defined(ROAM_HAVE_CUDA)
  return detail::cuda_lock_host_memory(memory, bytes);
#else
  (void)memory;
  (void)bytes;
  return false;
#endif
}

void unlock_host_memory(void* memory) noexcept {
#if defined(ROAM_HAVE_CUDA)
  detail::cuda_unlock_host_memory(memory);
#else
  (void)memory;
#endif
}

bool backend_built(backend b) noexcept {
  return b == backend::host || (b == backend::opencl && opencl_built) ||
         (b == backend::cuda && cuda_built);
}

namespace {
/// The backends a list such as "host,cuda" names (all of them for an empty list); an unknown
/// name is an error.
std::array<bool, 3> backends_named(const std::string& list) {
  if (list.empty()) return {true, true, true};
  std::array<bool, 3> named{};
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool known = false;
    for (auto b : {backend::host, backend::opencl, backend::cuda}) {
      if (item == to_string(b)) named[static_cast<std::size_t>(b)] = known = true;
    }
    if (!known) {
      throw device_error("unknown backend '" + item +
                         "' in the backend list (expected host, opencl or cuda)");
    }
  }
  return named;
}
}  // namespace

std::vector<std::unique_ptr<device>> discover_devices(const device_discovery_options& options) {
  const auto wanted = backends_named(options.backends);
  std::vector<std::unique_ptr<device>> devices;
  if (wanted[static_cast<std::size_t>(backend::host)]) {
    devices.push_back(detail::make_host_device(0, options));
  }
#if defined(ROAM_HAVE_OPENCL)
  if (wanted[static_cast<std::size_t>(backend::opencl)]) {
    for (auto& d : detail::discover_opencl_devices(static_cast<int>(devices.size()), options))
      devices.push_back(std::move(d));
  }
#endif
#if defined(ROAM_HAVE_CUDA)
  if (wanted[static_cast<std::size_t>(backend::cuda)]) {
    for (auto& d : detail::discover_cuda_devices(static_cast<int>(devices.size()), options))
      devices.push_back(std::move(d));
  }
#endif
  return devices;
}

}  // namespace roam
