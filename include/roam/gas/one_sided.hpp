// roam — one-sided get and put: contiguous, strided and indexed.
//
//   roam::gas::put(p, values.data(), values.size()).get();   // remote completion
//   double x = roam::gas::get(p + 3).get();
//
// Completion (UPC++'s terms): every put returns at local completion, once the source may be
// reused or destroyed; its future is ready at remote completion, once the bytes are in the
// owner's memory, visible to any later get. A get's future is ready once the destination
// holds the bytes; the destination must stay valid until then. Operations are not ordered
// with one another: wait for a put's future before a get that must see it.
//
// Paths: between nodes of one process the calling thread copies; to other processes MPI RMA
// under a lease on the allocation, or (the first access, and where MPI makes no window) the
// owner's worker copies in a short handler (--roam-gas-path, docs/guide/global_memory.md).
//
// Errors: a null or freed pointer, or bytes beyond the allocation, make the future hold
// roam::memory_error, and nothing is copied (a transfer larger than one message, about 4 GiB,
// is checked piece by piece). Threading: any thread of a node (or a thread of
// the application when this process hosts one node).
#pragma once

#include <roam/am/send.hpp>
#include <roam/gas/detail/operations.hpp>

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace roam::gas {

namespace detail {
template <class T>
byte_run run_of(const global_ptr<T>& p, std::uint64_t count) {
  return {ptr_access::offset(p), count * sizeof(T)};
}
template <class T>
void check_element_type() {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::gas: global memory holds trivially copyable values");
}
/// The runs of `count` blocks of `block` elements, `stride` elements apart, from `p`.
template <class T>
std::vector<byte_run> strided_runs(const global_ptr<T>& p, std::ptrdiff_t stride, std::size_t block,
                                   std::size_t count) {
  std::vector<byte_run> runs;
  runs.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    runs.push_back(run_of(p + static_cast<std::ptrdiff_t>(i) * stride, block));
  return runs;
}
template <class T>
std::vector<byte_run> indexed_runs(const global_ptr<T>& base, std::span<const std::uint64_t> at) {
  std::vector<byte_run> runs;
  runs.reserve(at.size());
  for (std::uint64_t i : at) runs.push_back(run_of(base + static_cast<std::ptrdiff_t>(i), 1));
  return runs;
}
}  // namespace detail

/// Writes `count` elements from `src` to `dest`.
template <class T>
[[nodiscard]] future<void> put(const global_ptr<T>& dest, const T* src, std::size_t count) {
  detail::check_element_type<T>();
  const detail::byte_run run = detail::run_of(dest, count);
  return detail::put_runs(detail::ref_of(dest), {&run, 1}, reinterpret_cast<const std::byte*>(src),
                          "put");
}
/// Writes one value.
template <class T>
[[nodiscard]] future<void> put(const global_ptr<T>& dest, const T& value) {
  return put(dest, &value, 1);
}

/// Reads `count` elements at `src` into `dest`. On an allocation with a cache policy, the
/// calling node's cached copy of exactly these elements serves it if there is one, and a
/// fetch is kept (roam/gas/cache.hpp).
template <class T>
[[nodiscard]] future<void> get(const global_ptr<T>& src, std::remove_const_t<T>* dest,
                               std::size_t count) {
  detail::check_element_type<T>();
  if (detail::ptr_access::policy(src) != 0) {
    const auto a = detail::ref_of(src);
    const std::uint64_t at = detail::ptr_access::offset(src);
    const std::uint64_t bytes = std::uint64_t{count} * sizeof(T);
    if (detail::read_cached(a, at, bytes, reinterpret_cast<std::byte*>(dest)))
      return make_ready_future();
    return detail::cached_get(a, at, bytes, reinterpret_cast<std::byte*>(dest),
                              detail::cache_read::any);
  }
  const detail::byte_run run = detail::run_of(src, count);
  return detail::get_runs(detail::ref_of(src), {&run, 1}, reinterpret_cast<std::byte*>(dest),
                          "get");
}
/// Reads one value.
template <class T>
[[nodiscard]] future<std::remove_const_t<T>> get(const global_ptr<T>& src) {
  using V = std::remove_const_t<T>;
  if (detail::ptr_access::policy(src) != 0) {
    V hit;
    if (detail::read_cached(detail::ref_of(src), detail::ptr_access::offset(src), sizeof(V),
                            reinterpret_cast<std::byte*>(&hit)))
      return make_ready_future(hit);
  }
  auto value = std::make_shared<V>();
  return get(src, value.get(), 1).then([value] { return *value; });
}

/// Strided put: `count` blocks of `block` elements; block i goes to `dest + i * dest_stride`
/// and comes from `src + i * src_stride` (strides in elements). One request per piece of
/// at most a message's size, whatever the number of blocks.
template <class T>
[[nodiscard]] future<void> put_strided(const global_ptr<T>& dest, std::ptrdiff_t dest_stride,
                                       const T* src, std::ptrdiff_t src_stride, std::size_t block,
                                       std::size_t count) {
  detail::check_element_type<T>();
  std::vector<T> packed;
  packed.reserve(block * count);
  for (std::size_t i = 0; i < count; ++i) {
    const T* from = src + static_cast<std::ptrdiff_t>(i) * src_stride;
    packed.insert(packed.end(), from, from + block);
  }
  const auto runs = detail::strided_runs(dest, dest_stride, block, count);
  return detail::put_runs(detail::ref_of(dest), runs,
                          reinterpret_cast<const std::byte*>(packed.data()), "put_strided");
}

/// Strided get: block i of `block` elements at `src + i * src_stride` goes to
/// `dest + i * dest_stride`.
template <class T>
[[nodiscard]] future<void> get_strided(const global_ptr<T>& src, std::ptrdiff_t src_stride,
                                       std::remove_const_t<T>* dest, std::ptrdiff_t dest_stride,
                                       std::size_t block, std::size_t count) {
  detail::check_element_type<T>();
  using V = std::remove_const_t<T>;
  auto packed = std::make_shared<std::vector<V>>(block * count);
  const auto runs = detail::strided_runs(src, src_stride, block, count);
  return detail::get_runs(detail::ref_of(src), runs, reinterpret_cast<std::byte*>(packed->data()),
                          "get_strided")
      .then([packed, dest, dest_stride, block, count] {
        for (std::size_t i = 0; i < count; ++i)
          std::copy_n(packed->data() + i * block, block,
                      dest + static_cast<std::ptrdiff_t>(i) * dest_stride);
      });
}

/// Indexed put: `src[i]` goes to `base[indices[i]]` (indices in elements, all within the
/// allocation `base` points into).
template <class T>
[[nodiscard]] future<void> put_indexed(const global_ptr<T>& base,
                                       std::span<const std::uint64_t> indices, const T* src) {
  detail::check_element_type<T>();
  const auto runs = detail::indexed_runs(base, indices);
  return detail::put_runs(detail::ref_of(base), runs, reinterpret_cast<const std::byte*>(src),
                          "put_indexed");
}

/// Indexed get: `dest[i]` receives `base[indices[i]]`.
template <class T>
[[nodiscard]] future<void> get_indexed(const global_ptr<T>& base,
                                       std::span<const std::uint64_t> indices,
                                       std::remove_const_t<T>* dest) {
  detail::check_element_type<T>();
  const auto runs = detail::indexed_runs(base, indices);
  return detail::get_runs(detail::ref_of(base), runs, reinterpret_cast<std::byte*>(dest),
                          "get_indexed");
}

/// Put, then run `fn(args...)` on the node that owns `dest` once the bytes are there
/// (PPL's active_msg, PREMA's remote write that triggers a handler): the handler sees the
/// data. `fn` and `args` as for roam::send; an exception it throws stops the job. The
/// future is the put's remote completion.
template <class T, class F, class... Args>
[[nodiscard]] future<void> put_then(const global_ptr<T>& dest, const T* src, std::size_t count,
                                    F&& fn, Args&&... args) {
  detail::check_element_type<T>();
  roam::detail::message_ptr m = roam::detail::build_message<std::decay_t<F>>(
      dest.where(), fn, 0, std::forward<Args>(args)...);
  const detail::byte_run run = detail::run_of(dest, count);
  return detail::put_runs_then(detail::ref_of(dest), {&run, 1},
                               reinterpret_cast<const std::byte*>(src), std::move(m));
}

}  // namespace roam::gas
