// roam — the collectives on typed buffers over any links: what each binding's public calls
// (coll/mpi.hpp, am/collectives.hpp) forward to. Arguments as in detail/algorithms.hpp, in
// elements of T.
#pragma once

#include <roam/base/error.hpp>
#include <roam/coll/detail/algorithms.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace roam::coll::detail {

/// count x sizeof(T), or a usage_error when it overflows.
template <class T>
std::size_t size_of(std::size_t count) {
  if (count > static_cast<std::size_t>(-1) / sizeof(T))
    throw usage_error("roam::coll: " + std::to_string(count) +
                      " elements overflow the address space");
  return count * sizeof(T);
}

template <class T>
const std::byte* bytes_of(const T* p) noexcept {
  return reinterpret_cast<const std::byte*>(p);
}
template <class T>
std::byte* bytes_of(T* p) noexcept {
  return reinterpret_cast<std::byte*>(p);
}

template <class T>
void bcast_of(links& l, T* data, std::size_t count, int root, const choice& c) {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::coll: contiguous collectives take trivially copyable element types");
  bcast(l, bytes_of(data), size_of<T>(count), root, c);
}

// The operator by value: a function (not a pointer) decays here to a pointer that the
// reduction can hold.
template <class T, class Op>
void reduce_of(links& l, const T* in, T* out, std::size_t count, Op op, int root, const choice& c) {
  reduce(l, bytes_of(in), bytes_of(out), count, reduction_of<T>(op), root, c);
}

template <class T, class Op>
void allreduce_of(links& l, const T* in, T* out, std::size_t count, Op op, const choice& c) {
  allreduce(l, bytes_of(in), bytes_of(out), count, reduction_of<T>(op), c);
}

template <class T>
void gather_of(links& l, const T* in, T* out, std::size_t count, int root, const choice& c) {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::coll: contiguous collectives take trivially copyable element types");
  gather(l, bytes_of(in), bytes_of(out), size_of<T>(count), root, c);
}

template <class T>
void allgather_of(links& l, const T* in, T* out, std::size_t count, const choice& c) {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::coll: contiguous collectives take trivially copyable element types");
  allgather(l, bytes_of(in), bytes_of(out), size_of<T>(count), c);
}

}  // namespace roam::coll::detail
