#pragma once
// Kernels written once (thesis §5.1, Fig. 44-46, Tables 4-5).
//
// A kernel is defined once with a macro, in plain C-like code, and becomes:
//   * a host function that the host backend runs, one task per work-group and the work-items
//     of a group in a loop inside it (thesis Fig. 46/47);
//   * an OpenCL C source string, compiled at run time by the OpenCL backend;
//   * a CUDA `__global__` function, when the defining file is compiled by nvcc.
//
//   ROAM_KERNEL(scale, (roam_global double* x, double factor, int n), {
//     const int i = roam_global_id(0);
//     if (i < n) x[i] *= factor;
//   })
//
// The body runs once per work-item. Kernels that share local memory between the items of a
// group use ROAM_GROUP_KERNEL: its body runs once per group and its per-item code sits in
// `roam_parallel_region({ ... })` blocks; each region ends with a group barrier (on the host
// backend, a region is a loop over the group's items). Per-item variables do not survive from one
// region to the next; keep such state in local memory.
//
// The dialect (valid inside kernel bodies):
//   roam_local_id(d)  roam_local_size(d)  roam_group_id(d)  roam_num_groups(d)  roam_global_id(d)
//   roam_global           qualifies pointer parameters to device memory
//   roam_local            declares a fixed-size local (shared) array: `roam_local double
//   t[16][16];` roam_dynamic_local(T) the launch's dynamic local memory, as T* (one region per
//   kernel) roam_parallel_region({ ... })   only in ROAM_GROUP_KERNEL
// Limits, as in the thesis: C only (no templates, no lambdas, no C++ library) because the same
// text is OpenCL C; scalars are int, unsigned, float, double (cl_khr_fp64) or long; at least one
// parameter. `return` inside a body ends the current work-item only.
//
// Linkage: the macro defines `const roam::kernel NAME` with external linkage; define each kernel
// in one source file and write ROAM_DECLARE_KERNEL(NAME) where others use it. To have the CUDA
// version, compile that source file with nvcc (CMake: LANGUAGE CUDA). A kernel may also be given
// per backend by filling a `roam::kernel` by hand.
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(__CUDACC__)
#define ROAM_KERNEL_FUNCTION __host__ __device__
#else
#define ROAM_KERNEL_FUNCTION
#endif

namespace roam {

/// Where a host-backend work-item is: filled by the host backend for each group and item.
struct kernel_ids {
  std::array<std::uint32_t, 3> local_id{};           ///< the work-item within its group
  std::array<std::uint32_t, 3> local_size{1, 1, 1};  ///< work-items per group
  std::array<std::uint32_t, 3> group_id{};           ///< the work-group within the launch
  std::array<std::uint32_t, 3> num_groups{1, 1, 1};  ///< work-groups in the launch
};

/// The host form of a kernel: runs one work-group (all of its items).
using host_kernel_function = void (*)(void* const* arguments, kernel_ids* ids, char* local_memory);

/// One parameter of a kernel, as launches check their arguments against it: a pointer to device
/// memory (with the size of what it points to; 0 for void), or a scalar of `bytes` bytes.
struct kernel_parameter {
  /// A pointer to device memory, an integer scalar or a floating-point scalar.
  enum class kind : std::uint8_t { pointer, integer, floating };
  kind what = kind::pointer;  ///< which kind of parameter
  std::uint32_t bytes = 0;    ///< the scalar's size, or the size of a pointer's elements
};

/// One kernel in all its backend forms. Any form may be null when a kernel is given per backend;
/// a device whose form is missing rejects the launch with a device_error naming the kernel.
/// Lifetime: tasks and launches refer to the kernel, so it must outlive them, and its texts must
/// not change while it exists (the macros make both static; the OpenCL backend caches the
/// program by the kernel's address and the addresses of its texts).
struct kernel {
  const char* name = nullptr;           ///< in error messages; the OpenCL function's name
  host_kernel_function host = nullptr;  ///< the host backend's form
  /// OpenCL: either the parameter list "(...)" and the body "{...}" (what the macros produce) or,
  /// with `opencl_parameters` null, a complete OpenCL C source whose `__kernel` function is named
  /// `name`; a hand-written source has no hidden local-memory parameter.
  ///@{
  const char* opencl_parameters = nullptr;
  const char* opencl_body = nullptr;
  ///@}
  /// The `__global__` function (a `const void*` as cudaLaunchKernel takes it).
  const void* cuda_function = nullptr;
  /// The parameters, which every launch checks its arguments against (count, pointer or scalar,
  /// sizes), so that a mismatch is an error naming the argument instead of undefined behaviour
  /// on one backend and an error code on another. The macros fill them; a kernel filled by hand
  /// may leave them null, and its arguments are then not checked.
  ///@{
  const kernel_parameter* parameters = nullptr;
  std::size_t parameter_count = 0;
  ///@}
};

namespace kernel_dialect {
ROAM_KERNEL_FUNCTION inline std::uint32_t local_id([[maybe_unused]] const kernel_ids* ids, int d) {
#if defined(__CUDA_ARCH__)
  return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : threadIdx.z;
#else
  return ids->local_id[d];
#endif
}
ROAM_KERNEL_FUNCTION inline std::uint32_t local_size([[maybe_unused]] const kernel_ids* ids,
                                                     int d) {
#if defined(__CUDA_ARCH__)
  return d == 0 ? blockDim.x : d == 1 ? blockDim.y : blockDim.z;
#else
  return ids->local_size[d];
#endif
}
ROAM_KERNEL_FUNCTION inline std::uint32_t group_id([[maybe_unused]] const kernel_ids* ids, int d) {
#if defined(__CUDA_ARCH__)
  return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : blockIdx.z;
#else
  return ids->group_id[d];
#endif
}
ROAM_KERNEL_FUNCTION inline std::uint32_t num_groups([[maybe_unused]] const kernel_ids* ids,
                                                     int d) {
#if defined(__CUDA_ARCH__)
  return d == 0 ? gridDim.x : d == 1 ? gridDim.y : gridDim.z;
#else
  return ids->num_groups[d];
#endif
}
}  // namespace kernel_dialect

namespace detail {

/// Runs `item` once per work-item of the current group, in x-fastest order.
template <class Item>
inline void for_each_local_item(kernel_ids* ids, Item&& item) {
  const auto size = ids->local_size;
  for (std::uint32_t z = 0; z < size[2]; ++z)
    for (std::uint32_t y = 0; y < size[1]; ++y)
      for (std::uint32_t x = 0; x < size[0]; ++x) {
        ids->local_id = {x, y, z};
        item();
      }
}

/// Adapts a generated host function to host_kernel_function: each argument slot points at the
/// value (a buffer's pointer, or the scalar), as CUDA's `void** args`.
template <class Function>
struct host_entry_of;
template <class... Parameters>
struct host_entry_of<void (*)(kernel_ids*, char*, Parameters...)> {
  template <auto F, std::size_t... I>
  static void call(void* const* arguments, kernel_ids* ids, char* local,
                   std::index_sequence<I...>) {
    F(ids, local, *static_cast<std::remove_reference_t<Parameters>*>(arguments[I])...);
  }
  template <auto F>
  static void run(void* const* arguments, kernel_ids* ids, char* local) {
    call<F>(arguments, ids, local, std::index_sequence_for<Parameters...>{});
  }
};
template <auto F>
inline constexpr host_kernel_function host_entry = &host_entry_of<decltype(F)>::template run<F>;

template <class Parameter>
constexpr kernel_parameter parameter_of() {
  using type = std::remove_cvref_t<Parameter>;
  if constexpr (std::is_pointer_v<type>) {
    using element = std::remove_cv_t<std::remove_pointer_t<type>>;
    if constexpr (std::is_void_v<element>) {
      return {kernel_parameter::kind::pointer, 0};
    } else {
      return {kernel_parameter::kind::pointer, static_cast<std::uint32_t>(sizeof(element))};
    }
  } else if constexpr (std::is_floating_point_v<type>) {
    return {kernel_parameter::kind::floating, static_cast<std::uint32_t>(sizeof(type))};
  } else {
    return {kernel_parameter::kind::integer, static_cast<std::uint32_t>(sizeof(type))};
  }
}

/// The parameters of a generated host function, for kernel::parameters.
template <class Function>
struct parameters_of;
template <class... Parameters>
struct parameters_of<void (*)(kernel_ids*, char*, Parameters...)> {
  static constexpr std::array<kernel_parameter, sizeof...(Parameters)> value{
      parameter_of<Parameters>()...};
};

}  // namespace detail
}  // namespace roam

#define ROAM_DETAIL_UNPAREN(...) __VA_ARGS__

// ---- the dialect on the host and in CUDA -------------------------------------------------
#define roam_local_id(d) ::roam::kernel_dialect::local_id(roam_detail_ids, (d))
#define roam_local_size(d) ::roam::kernel_dialect::local_size(roam_detail_ids, (d))
#define roam_group_id(d) ::roam::kernel_dialect::group_id(roam_detail_ids, (d))
#define roam_num_groups(d) ::roam::kernel_dialect::num_groups(roam_detail_ids, (d))
#define roam_global_id(d) (roam_group_id(d) * roam_local_size(d) + roam_local_id(d))
#define roam_global
#define roam_dynamic_local(T) (reinterpret_cast<T*>(roam_detail_local))
#if defined(__CUDA_ARCH__)
#define roam_local __shared__
#define roam_parallel_region(...) {__VA_ARGS__} __syncthreads();
#else
// Groups run one at a time on each host worker thread, so a thread's own copy is the group's.
#define roam_local static thread_local
#define roam_parallel_region(...) \
  ::roam::detail::for_each_local_item(roam_detail_ids, [&]() __VA_ARGS__);
#endif

#if defined(__CUDACC__)
#define ROAM_DETAIL_CUDA_KERNEL(name, params, ...)                         \
  __global__ void roam_cuda_##name(ROAM_DETAIL_UNPAREN params) {           \
    extern __shared__ char roam_detail_dynamic_shared[];                   \
    [[maybe_unused]] char* roam_detail_local = roam_detail_dynamic_shared; \
    [[maybe_unused]] ::roam::kernel_ids* roam_detail_ids = nullptr;        \
    __VA_ARGS__                                                            \
  }
#define ROAM_DETAIL_CUDA_POINTER(name) reinterpret_cast<const void*>(&roam_cuda_##name)
#else
#define ROAM_DETAIL_CUDA_KERNEL(name, params, ...)
#define ROAM_DETAIL_CUDA_POINTER(name) nullptr
#endif

// The texts are stringized by the outer macros: an argument passed on to another macro is
// expanded first, and the dialect's names (roam_global...) would be lost from the OpenCL text.
#define ROAM_DETAIL_KERNEL_OBJECT(name, params_text, body_text)                 \
  extern const ::roam::kernel name;                                             \
  const ::roam::kernel name{                                                    \
      #name,                                                                    \
      ::roam::detail::host_entry<&roam_host_##name>,                            \
      params_text,                                                              \
      body_text,                                                                \
      ROAM_DETAIL_CUDA_POINTER(name),                                           \
      ::roam::detail::parameters_of<decltype(&roam_host_##name)>::value.data(), \
      ::roam::detail::parameters_of<decltype(&roam_host_##name)>::value.size()};

/// A kernel whose body runs once per work-item (see the top of this file).
#define ROAM_KERNEL(name, params, ...)                                               \
  ROAM_DETAIL_CUDA_KERNEL(name, params, __VA_ARGS__)                                 \
  static void roam_host_##name([[maybe_unused]] ::roam::kernel_ids* roam_detail_ids, \
                               [[maybe_unused]] char* roam_detail_local,             \
                               ROAM_DETAIL_UNPAREN params) {                         \
    ::roam::detail::for_each_local_item(roam_detail_ids, [&]() __VA_ARGS__);         \
  }                                                                                  \
  ROAM_DETAIL_KERNEL_OBJECT(name, #params, #__VA_ARGS__)

/// A kernel whose body runs once per work-group, its per-item code in roam_parallel_region.
#define ROAM_GROUP_KERNEL(name, params, ...)                                         \
  ROAM_DETAIL_CUDA_KERNEL(name, params, __VA_ARGS__)                                 \
  static void roam_host_##name([[maybe_unused]] ::roam::kernel_ids* roam_detail_ids, \
                               [[maybe_unused]] char* roam_detail_local,             \
                               ROAM_DETAIL_UNPAREN params) __VA_ARGS__               \
  ROAM_DETAIL_KERNEL_OBJECT(name, #params, #__VA_ARGS__)

/// Declares a kernel defined (with ROAM_KERNEL or ROAM_GROUP_KERNEL) in another source file.
#define ROAM_DECLARE_KERNEL(name) extern const ::roam::kernel name
