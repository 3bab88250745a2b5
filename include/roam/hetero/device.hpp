#pragma once
// The device API: the bottom layer of roam's heterogeneous framework (thesis Fig. 48).
//
// One abstract class, `roam::device`, with three backends behind it:
//   host    CPU worker threads of roam's own (always built);
//   opencl  any OpenCL 1.2+ device (PoCL on CPUs in CI; built when OpenCL is found);
//   cuda    NVIDIA GPUs (built when nvcc is found).
// The heterogeneous runtime (`hetero_runtime.hpp`) drives devices through this interface; it is
// public so that code can also be written directly against it (the hetero_dgemm benchmark's
// "direct" side is written this way for comparison with raw OpenCL/CUDA).
//
// Threading: every member function of a device may be called from any thread concurrently.
// Ordering: operations issued to one queue run in issue order (an in-order queue); operations on
// different queues are unordered unless one names the other's event in its `after` list.
// Lifetime: a device outlives every buffer, event and operation it hands out; events may be
// kept after their device is gone only to read `ready()`.
#include <roam/base/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace roam {

struct kernel;

/// Which backend drives a device.
enum class backend : std::uint8_t { host, opencl, cuda };
/// What kind of processor a device is; a hetero_task names one and the runtime picks the device.
enum class device_type : std::uint8_t { cpu, gpu, accelerator, any };

[[nodiscard]] const char* to_string(backend b) noexcept;
[[nodiscard]] const char* to_string(device_type t) noexcept;

/// What a device is. `memory_bytes` is the memory the runtime may use on it: the device's own
/// size, or the configured limit when one is set and smaller.
struct device_info {
  int index = 0;                          ///< position in hetero_runtime::devices()
  roam::backend backend = backend::host;  ///< the backend that drives the device
  device_type type = device_type::cpu;    ///< what hetero_task::on(device_type) matches
  std::string name;                       ///< the driver's device name, or "host (N threads)"
  std::size_t memory_bytes = 0;           ///< usable bytes: its memory, or a smaller limit
  /// Its parallel units: worker threads (host), compute units (OpenCL) or multiprocessors (CUDA).
  unsigned compute_units = 0;
  /// The most work-items one work-group may have (0: no limit, the host backend).
  std::size_t max_group_items = 0;
  /// The most dynamic local memory a work-group may have, in bytes (0: no limit).
  std::size_t max_local_bytes = 0;
  /// True when the device computes directly on host memory (the host backend): its data needs
  /// no copies and shares the host's coherence state.
  bool shares_host_memory = false;
};

/// Memory on one device: a host pointer (host backend), a `cl_mem` (OpenCL) or a device pointer
/// (CUDA). Plain value; freed only through device::release.
struct device_buffer {
  void* handle = nullptr;  ///< the backend's handle (see above); null for no buffer
  std::size_t bytes = 0;   ///< the buffer's size
  /// True when the buffer holds memory (its handle is not null).
  explicit operator bool() const noexcept { return handle != nullptr; }
};

namespace detail {
struct device_event_state;
}

/// The completion of one asynchronous device operation. Copyable handle; cheap to poll.
/// `on_complete` callbacks run once, on whichever thread completes the operation (a backend
/// thread), or at once on the calling thread if it already completed: keep them short and
/// never call into a device from them.
class device_event {
 public:
  device_event() = default;
  /// An event of `state`, the backend's record of one operation (backends make events this way).
  explicit device_event(std::shared_ptr<detail::device_event_state> state)
      : state_(std::move(state)) {}

  /// An event that is already complete.
  [[nodiscard]] static device_event completed();

  /// True once the operation finished (successfully or not). A default event is ready.
  [[nodiscard]] bool ready() const noexcept;
  /// Blocks the calling thread until ready; rethrows the operation's error, if any.
  void wait() const;
  /// The operation's error, or null.
  [[nodiscard]] std::exception_ptr error() const;
  /// Runs `callback` once the operation finished: at once on this thread if it has, otherwise
  /// on the thread that completes it (a backend or engine thread: keep callbacks short).
  void on_complete(std::function<void()> callback) const;

  /// The backend's record of the operation, shared by every copy of the event; null for a
  /// default event.
  [[nodiscard]] const std::shared_ptr<detail::device_event_state>& state() const noexcept {
    return state_;
  }

 private:
  std::shared_ptr<detail::device_event_state> state_;
};

/// How a thread waits for a device_event that is not complete yet: device_event::wait and what
/// is built on it (hetero_task::wait, hetero_future::get, hetero_object::to_vector). A hook
/// returns true once the event is complete, having waited its own way, or false to let the
/// calling thread block as usual. roam's mobile-object integration (roam/hetero_mobile.hpp)
/// installs one that suspends a handler's lightweight thread instead of blocking its worker.
using device_wait_hook = bool (*)(const device_event& event);

/// Installs `hook` (null: none) for the whole process. Threading: atomic; waits that already
/// started keep the hook they began with.
void set_device_wait_hook(device_wait_hook hook) noexcept;

/// Launch geometry, up to three dimensions: `groups` work-groups of `local` work-items each
/// (CUDA: grid and block; OpenCL: global = groups * local).
struct launch_dims {
  std::array<std::uint32_t, 3> groups{1, 1, 1};  ///< work-groups per dimension
  std::array<std::uint32_t, 3> local{1, 1, 1};   ///< work-items per group, per dimension

  /// One dimension covering at least `items` work-items, `local` per group.
  [[nodiscard]] static launch_dims linear(std::size_t items, std::uint32_t local = 128);
  /// Two dimensions covering at least rows x columns, `local` x `local` per group.
  [[nodiscard]] static launch_dims grid2d(std::size_t rows, std::size_t columns,
                                          std::uint32_t local = 16);
  /// The number of work-groups, over all dimensions.
  [[nodiscard]] std::size_t group_count() const noexcept {
    return std::size_t{groups[0]} * groups[1] * groups[2];
  }
  /// The number of work-items in one work-group, over all dimensions.
  [[nodiscard]] std::size_t local_count() const noexcept {
    return std::size_t{local[0]} * local[1] * local[2];
  }
};

/// One kernel argument: a device buffer (the kernel sees a pointer) or a scalar of up to 16
/// bytes passed by value.
struct kernel_argument {
  static constexpr std::size_t max_scalar_bytes = 16;  ///< the largest scalar passed by value
  bool is_buffer = false;                              ///< true: the buffer; false: the scalar
  device_buffer buffer;                                ///< the buffer, when is_buffer
  std::array<std::byte, max_scalar_bytes> scalar{};    ///< the scalar, in its first scalar_bytes
  std::uint8_t scalar_bytes = 0;                       ///< the scalar's size, in bytes
  bool scalar_floating = false;  ///< a float or double, checked against the kernel's parameter
  /// A buffer's element size when known (hetero_task's objects), checked against what the
  /// kernel's parameter points to; 0 when not known (a raw device_buffer).
  std::size_t element_bytes = 0;

  /// An argument passing `b` (its element size not known: not checked against the kernel).
  [[nodiscard]] static kernel_argument of_buffer(device_buffer b) {
    kernel_argument a;
    a.is_buffer = true;
    a.buffer = b;
    return a;
  }
  /// Where the value lies, as launch APIs take each argument (CUDA's `void** args`, the host
  /// backend's slots, clSetKernelArg): the buffer's handle, or the scalar's bytes.
  [[nodiscard]] const void* value_address() const noexcept {
    return is_buffer ? static_cast<const void*>(&buffer.handle)
                     : static_cast<const void*>(scalar.data());
  }

  /// An argument passing `value` by value: trivially copyable, at most max_scalar_bytes bytes.
  template <class T>
  [[nodiscard]] static kernel_argument of_value(const T& value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= max_scalar_bytes,
                  "kernel scalars are trivially copyable and at most 16 bytes");
    kernel_argument a;
    std::memcpy(a.scalar.data(), &value, sizeof(T));
    a.scalar_bytes = sizeof(T);
    a.scalar_floating = std::is_floating_point_v<T>;
    return a;
  }
};

/// A queue of a device. Each device has `compute_queue_count()` compute queues and one copy
/// queue per direction, so copies overlap kernels (thesis Fig. 54).
struct device_queue {
  /// A compute queue, or the copy queue of one direction.
  enum class kind : std::uint8_t { compute, host_to_device, device_to_host };
  kind which = kind::compute;  ///< which kind of queue
  unsigned index = 0;          ///< among compute queues
  /// Compute queue `i`, taken modulo the device's compute_queue_count().
  [[nodiscard]] static device_queue compute(unsigned i) { return {kind::compute, i}; }
  /// The copy queue of one direction: to the device, or to the host.
  ///@{
  [[nodiscard]] static device_queue host_to_device() { return {kind::host_to_device, 0}; }
  [[nodiscard]] static device_queue device_to_host() { return {kind::device_to_host, 0}; }
  ///@}
};

/// One device. Operations take an `after` list: the operation starts only once those events
/// are ready. Events of this device become native waits (no host round trip); events of other
/// devices are waited for by the issuing thread before the operation is issued.
class device {
 public:
  virtual ~device() = default;
  device(const device&) = delete;
  device& operator=(const device&) = delete;

  /// What the device is, as discovery found it.
  [[nodiscard]] const device_info& info() const noexcept { return info_; }
  /// How many compute queues the device has (device_discovery_options::compute_queues).
  [[nodiscard]] virtual unsigned compute_queue_count() const noexcept = 0;

  /// Device memory of `bytes` (> 0). Throws out_of_device_memory when the device (or its
  /// configured limit) has no room.
  [[nodiscard]] virtual device_buffer allocate(std::size_t bytes) = 0;
  /// Frees a buffer from allocate(). The caller guarantees no operation still uses it.
  virtual void release(device_buffer buffer) noexcept = 0;

  /// Host memory the device copies from and to fastest (page-locked for CUDA); plain aligned
  /// memory for the other backends. Freed with release_host.
  [[nodiscard]] virtual void* allocate_host(std::size_t bytes);
  /// Frees memory from allocate_host(); `bytes` is the size it was allocated with.
  virtual void release_host(void* memory, std::size_t bytes) noexcept;

  /// Whether copies between this device and the host memory [memory, memory + bytes) run
  /// straight from and to it, asynchronously and at full speed: any memory for the host and
  /// OpenCL backends; for CUDA only page-locked memory (allocate_host's, or ranges
  /// lock_host_memory locked; both ends of the range are checked), since a CUDA copy from
  /// pageable memory waits for the stream and goes through the driver's own staging. The
  /// framework stages range copies through its page-locked pool otherwise. Thread-safe.
  [[nodiscard]] virtual bool direct_host_transfers(const void* memory,
                                                   std::size_t bytes) const noexcept;

  /// Asynchronous copies of `bytes` bytes to or from a buffer at `offset`, or between two buffers
  /// (copy_on_device). Host memory must stay valid and untouched until the event is ready.
  ///@{
  virtual device_event copy_to_device(device_queue queue, device_buffer destination,
                                      std::size_t offset, const void* source, std::size_t bytes,
                                      std::span<const device_event> after) = 0;
  virtual device_event copy_to_host(device_queue queue, void* destination, device_buffer source,
                                    std::size_t offset, std::size_t bytes,
                                    std::span<const device_event> after) = 0;
  virtual device_event copy_on_device(device_queue queue, device_buffer destination,
                                      std::size_t destination_offset, device_buffer source,
                                      std::size_t source_offset, std::size_t bytes,
                                      std::span<const device_event> after) = 0;
  ///@}

  /// Runs `k` over `dims`. `local_bytes` is the kernel's dynamic local memory (0 for none).
  /// Compile errors (OpenCL run-time compilation) are thrown here, with the build log.
  virtual device_event launch(device_queue queue, const kernel& k, const launch_dims& dims,
                              std::span<const kernel_argument> arguments, std::size_t local_bytes,
                              std::span<const device_event> after) = 0;

  /// Blocks until every operation issued so far on this device has finished.
  virtual void synchronize() = 0;

 protected:
  /// A device described by `info` (its backend's discovery fills it in).
  explicit device(device_info info) : info_(std::move(info)) {}
  /// Every backend keeps its queues in one array: the compute queues, then the copy queue to
  /// the device, then the copy queue to the host. The position of `queue` in it.
  [[nodiscard]] static std::size_t queue_position(device_queue queue,
                                                  std::size_t compute_queues) noexcept {
    switch (queue.which) {
      case device_queue::kind::host_to_device:
        return compute_queues;
      case device_queue::kind::device_to_host:
        return compute_queues + 1;
      case device_queue::kind::compute:
        break;
    }
    return queue.index % compute_queues;
  }
  /// Waits for the events of `after` that belong to other devices; returns those of this one.
  [[nodiscard]] std::vector<device_event> native_events(std::span<const device_event> after) const;

  device_info info_;  ///< what info() returns
};

/// Every device the built backends find on this machine, host first. `options` may limit which
/// backends are used ("host,opencl,cuda"; empty: all built ones) and cap each device's memory
/// (0: none).
struct device_discovery_options {
  std::string backends;               ///< "host,opencl,cuda" or a subset (empty: all built)
  std::size_t memory_limit = 0;       ///< per device, bytes (0: the device's memory)
  unsigned host_threads = 0;          ///< host backend worker threads; 0: hardware threads
  bool host_separate_memory = false;  ///< host backend copies data like a discrete device
  unsigned compute_queues = 2;        ///< per device
};
[[nodiscard]] std::vector<std::unique_ptr<device>> discover_devices(
    const device_discovery_options& options);

/// Which backends this build of roam contains.
[[nodiscard]] bool backend_built(backend b) noexcept;

/// Page-locks the host memory [memory, memory + bytes) for the process' CUDA devices, so that
/// copies between it and them run asynchronously at full speed: hetero_object::read_range into
/// it and write_range from it (taking the source over) then make no staging copy. Returns false
/// and changes nothing when there is no use for it or it failed: no CUDA backend in this build,
/// no hetero_runtime has used a CUDA device yet in this process, or the driver refused (the
/// memory then works as before, through staging). Locking costs about as much as touching every
/// page once; lock memory that is reused, not each new block. Memory locked must be unlocked with
/// unlock_host_memory before it is freed, and ranges must not overlap (whole pages are locked).
/// After 8 refusals by the driver (out of lockable memory, say) it stops trying for the rest of
/// the process. Large message blocks (roam::buffer's among them) are locked this way by
/// roam::hetero_mobile. Thread-safe.
bool lock_host_memory(void* memory, std::size_t bytes) noexcept;
/// Undoes lock_host_memory(memory, ...), which returned true. Thread-safe.
void unlock_host_memory(void* memory) noexcept;

}  // namespace roam
