#pragma once
// roam::hetero_object<T>: an array of T that may live on several devices at once, kept
// coherent by the MSI protocol (thesis §5.1.2).
//
// Coherence: each memory space (the host, and each device with memory of its own) holds a
// Modified, Shared or Invalid copy. A task that reads gets a copy moved to its device only if
// that device's copy is Invalid; a task that writes invalidates every other copy. A new object
// is valid (Modified) on the host only.
// Memory: device copies are allocated when a task first needs them and evicted (written back to
// the host if they are the only valid copy) when a device runs short, least recently used first.
// Everything is freed when the last hetero_object handle and the last task using it are gone.
// Threading: handles may be copied and used from any thread; all copies name the same data.
#include <concepts>
#include <cstring>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "roam/hetero/detail/hetero_handles.hpp"
#include "roam/hetero/hetero_future.hpp"

namespace roam {

class hetero_task;
template <class T>
class hetero_object;

namespace detail {
/// An object named as a task argument, with its access.
struct object_argument {
  std::shared_ptr<hetero_object_state> object;
  data_access access;
  std::size_t element_bytes;  ///< sizeof(T), checked against the kernel's parameter
};
template <class T>
object_argument argument_of(const hetero_object<T>& object, data_access access);
}  // namespace detail

/// Containers that own their elements, which hetero_object::write_range may take over instead
/// of copying: std::vector<T> here, roam::buffer<T> with roam/hetero_mobile.hpp. Specialize it
/// (true) for a container of your own whose destruction frees its elements and whose move keeps
/// them valid in the moved-to object; views (std::span, host_view) must stay false.
template <class Container>
inline constexpr bool owns_contiguous_elements = false;
template <class T, class Allocator>
inline constexpr bool owns_contiguous_elements<std::vector<T, Allocator>> = true;

/// The host's view of an object's data while a request is held.
template <class T>
class host_view {
 public:
  host_view() = default;
  /// A view of the `size` elements at `data`.
  host_view(T* data, std::size_t size) : data_(data), size_(size) {}
  /// Container-like access to the viewed elements (no bounds checks).
  ///@{
  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] T& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] T* begin() const noexcept { return data_; }
  [[nodiscard]] T* end() const noexcept { return data_ + size_; }
  [[nodiscard]] std::span<T> span() const noexcept { return {data_, size_}; }
  ///@}

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

namespace detail {
hetero_future<void*> request_host_access(const std::shared_ptr<hetero_object_state>& object,
                                         data_access access);
void release_host_access(hetero_object_state& object);
/// Throws std::out_of_range unless [first, first + count) lies within an object of `size`
/// elements (`write`: names write_range in the message, else read_range).
void check_range(std::size_t size, std::size_t first, std::size_t count, bool write);
/// read_range (write false) and write_range (write true) of `count` elements of `element_size`
/// bytes from element `first`, in an object of `size` elements; checks the bounds. A write with
/// an `owner` (holding the memory at `data`) may keep it instead of copying.
device_event copy_range(const std::shared_ptr<hetero_object_state>& object,
                        std::size_t element_size, std::size_t size, bool write, std::size_t first,
                        std::size_t count, void* data, std::shared_ptr<void> owner = {});
device_event tasks_done(const hetero_object_state& object);
device_event evict_everywhere(const std::shared_ptr<hetero_object_state>& object);
coherence copy_state(const hetero_object_state& object, int device) noexcept;
coherence host_state(const hetero_object_state& object) noexcept;
}  // namespace detail

/// An array of T that may live on the host and on several devices at once, kept coherent by the
/// MSI protocol (thesis §5.1.2). A handle: its copies name the same data.
template <class T>
class hetero_object {
  static_assert(std::is_trivially_copyable_v<T>,
                "hetero_object holds trivially copyable elements (they are copied bytewise "
                "between devices)");

 public:
  /// An empty handle (no data).
  hetero_object() = default;
  /// Another handle to the same data.
  ///@{
  hetero_object(const hetero_object&) = default;
  hetero_object& operator=(const hetero_object&) = default;
  ///@}
  /// Takes the handle over; `other` is left empty (no data, size 0).
  ///@{
  hetero_object(hetero_object&& other) noexcept
      : state_(std::move(other.state_)), count_(std::exchange(other.count_, 0)) {}
  hetero_object& operator=(hetero_object&& other) noexcept {
    state_ = std::move(other.state_);
    count_ = std::exchange(other.count_, 0);
    return *this;
  }
  ///@}
  ~hetero_object() = default;
  /// `count` elements, value-initialized, valid on the host. Needs a live hetero_runtime.
  explicit hetero_object(std::size_t count) : hetero_object(count, T{}) {}
  /// `count` copies of `value`, valid on the host. Needs a live hetero_runtime.
  hetero_object(std::size_t count, const T& value)
      : state_(detail::make_hetero_object(count * sizeof(T))), count_(count) {
    auto* data = static_cast<T*>(detail::host_data(*state_));
    for (std::size_t i = 0; i < count; ++i) data[i] = value;
  }
  /// A copy of `values`, valid on the host. Needs a live hetero_runtime.
  explicit hetero_object(std::span<const T> values)
      : state_(detail::make_hetero_object(values.size() * sizeof(T))), count_(values.size()) {
    if (!values.empty())
      std::memcpy(detail::host_data(*state_), values.data(), values.size_bytes());
  }

  /// `count` elements whose initial contents `fill(std::span<T>)` writes on the host before the
  /// object is shared with anyone: no value-initialization and no extra copy (the way received
  /// data becomes an object). Needs a live hetero_runtime.
  template <class Fill>
  [[nodiscard]] static hetero_object with_contents(std::size_t count, Fill&& fill) {
    hetero_object object;
    object.state_ = detail::make_hetero_object(count * sizeof(T));
    object.count_ = count;
    std::forward<Fill>(fill)(
        std::span<T>(static_cast<T*>(detail::host_data(*object.state_)), count));
    return object;
  }

  /// The number of elements (0 for an empty handle).
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// The size of the data in bytes: size() * sizeof(T).
  [[nodiscard]] std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  /// False for an empty handle (default-constructed or moved from).
  explicit operator bool() const noexcept { return state_ != nullptr; }

  /// Asks for host access. The request is ordered with tasks like a task of that access
  /// (it waits for earlier conflicting tasks; later conflicting tasks wait for release()), and a
  /// transfer from the device holding the newest copy starts if the host's copy is Invalid.
  /// Returns at once; the future's view stays valid until release().
  [[nodiscard]] hetero_future<host_view<T>> request(data_access access = data_access::read_write) {
    auto raw = detail::request_host_access(state_, access);
    const std::size_t n = count_;
    return {raw.event(), [raw, n] { return host_view<T>(static_cast<T*>(raw.get()), n); }};
  }
  /// Ends this object's oldest held host access (requests end in the order they were made).
  /// Throws device_error when none is held, or on an empty handle.
  void release() {
    if (!state_) throw device_error("release() on an empty hetero_object");
    detail::release_host_access(*state_);
  }

  /// The data as a vector: request(read), copy, release. Blocks the calling thread.
  [[nodiscard]] std::vector<T> to_vector() {
    auto view = request(data_access::read).get();
    std::vector<T> out(view.begin(), view.end());
    release();
    return out;
  }

  /// Copies elements [first, first + destination.size()) into `destination`, from the newest
  /// copy: the host's when it is valid, otherwise straight from the device holding it. Only those
  /// elements move, and no copy changes its coherence state (a halo plane leaves the device
  /// without the whole object going to the host).
  /// Ordering: like a task reading the object (after the writers submitted before it, before the
  /// writers submitted after it). Range copies always take part in implicit ordering, as host
  /// requests do; a task that opted out of it is not ordered with them.
  /// Lifetime: returns at once; `destination` must stay valid until the future is ready.
  /// Throws std::out_of_range when the range does not lie within the object.
  [[nodiscard]] hetero_future<void> read_range(std::size_t first, std::span<T> destination) const {
    return {detail::copy_range(state_, sizeof(T), count_, false, first, destination.size(),
                               destination.data()),
            [] {}};
  }
  /// Writes `source` to elements [first, first + source.size()) of every valid copy (the host's
  /// by a memcpy, each device's by a transfer of those bytes only): no copy changes its coherence
  /// state, so an object resident on a device stays there (a halo plane arriving).
  /// Ordering: like a task that reads and writes the object (always, as for read_range).
  /// Lifetime: `source` is copied before the call returns and may be reused at once. Throws
  /// device_error once the hetero_runtime has ended.
  /// Throws std::out_of_range when the range does not lie within the object.
  hetero_future<void> write_range(std::size_t first, std::span<const T> source) {
    return {detail::copy_range(state_, sizeof(T), count_, true, first, source.size(),
                               const_cast<T*>(source.data())),
            [] {}};
  }
  /// write_range taking `source` over: a container that owns its elements
  /// (owns_contiguous_elements: a std::vector<T>, a roam::buffer<T>), passed as an rvalue. Where
  /// every device can copy from its memory directly (any memory for the host and OpenCL
  /// backends; page-locked memory for CUDA, which large roam::buffer blocks are once a CUDA
  /// device is in use, see lock_host_memory) it is kept, not copied, and destroyed once the
  /// bytes reached every copy (by the engine thread, or the thread that drains the engine's work
  /// where that is not a backend's own thread); otherwise it is copied and destroyed before the
  /// call returns. So a halo that arrived in a roam::buffer goes to the device without a copy on
  /// the host.
  /// Ordering and errors: as write_range(first, span). The range is checked before `source` is
  /// taken (an out_of_range leaves it with the caller); once taken, it is consumed whatever
  /// happens next.
  template <class Source>
  requires(!std::is_lvalue_reference_v<Source> &&
           owns_contiguous_elements<std::remove_cvref_t<Source>> &&
           std::ranges::contiguous_range<Source> && std::ranges::sized_range<Source> &&
           std::same_as<std::ranges::range_value_t<Source>, T>)
      hetero_future<void> write_range(std::size_t first, Source&& source) {
    const auto count = static_cast<std::size_t>(std::ranges::size(source));
    detail::check_range(count_, first, count, true);
    auto owner = std::make_shared<std::remove_cvref_t<Source>>(std::forward<Source>(source));
    auto* data = std::ranges::data(*owner);
    return {detail::copy_range(state_, sizeof(T), count_, true, first, count, const_cast<T*>(data),
                               std::move(owner)),
            [] {}};
  }

  /// Writes the valid data back to the host and frees the copies on every device, once the
  /// tasks submitted before this call are done. Asynchronous: ordered like a write request (after
  /// every task submitted before it, before every task submitted after it).
  /// The future is ready once the copies are freed (not a copy that a task which opted out of
  /// implicit ordering still uses). A failed write-back fails it with the device's error, and
  /// that device's copy then stays (still the valid one: nothing is lost); dropping the future
  /// drops only that report.
  hetero_future<void> remove_from_devices() {
    return {detail::evict_everywhere(state_), [] {}};
  }

  /// Ready once every task and host request submitted on this object before the call has
  /// finished (readers included, whatever their dependency settings; a held host request counts
  /// until released). What a mobile object's migration waits for before packing its data.
  [[nodiscard]] hetero_future<void> tasks_done() const {
    if (!state_) return {device_event::completed(), [] {}};
    return {detail::tasks_done(*state_), [] {}};
  }
  /// The MSI state of this object's copy on a device (by index into hetero_runtime::devices()).
  /// A device that computes on host memory reports the host's state. A snapshot: tasks in flight
  /// may change it at any moment.
  /// An empty handle has no copy anywhere: Invalid.
  [[nodiscard]] coherence state_on(int device) const noexcept {
    return state_ ? detail::copy_state(*state_, device) : coherence::invalid;
  }
  /// The MSI state of the host's copy: a snapshot, as for state_on(). An empty handle: Invalid.
  [[nodiscard]] coherence state_on_host() const noexcept {
    return state_ ? detail::host_state(*state_) : coherence::invalid;
  }

 private:
  template <class U>
  friend detail::object_argument detail::argument_of(const hetero_object<U>&, data_access);
  std::shared_ptr<detail::hetero_object_state> state_;
  std::size_t count_ = 0;
};

namespace detail {
template <class T>
object_argument argument_of(const hetero_object<T>& object, data_access access) {
  if (!object.state_) throw device_error("an empty hetero_object given as a task argument");
  return {object.state_, access, sizeof(T)};
}
}  // namespace detail

/// Task arguments: `roam::in(x)` reads x, `roam::out(x)` overwrites all of x, `roam::inout(x)`
/// reads and updates x.
template <class T>
[[nodiscard]] detail::object_argument in(const hetero_object<T>& object) {
  return detail::argument_of(object, data_access::read);
}
template <class T>
[[nodiscard]] detail::object_argument out(const hetero_object<T>& object) {
  return detail::argument_of(object, data_access::write);
}
template <class T>
[[nodiscard]] detail::object_argument inout(const hetero_object<T>& object) {
  return detail::argument_of(object, data_access::read_write);
}

}  // namespace roam

/// @cond
/// A host_view refers to the object's memory: a borrowed range (taking it over owns nothing).
template <class T>
inline constexpr bool std::ranges::enable_borrowed_range<roam::host_view<T>> = true;
/// @endcond
