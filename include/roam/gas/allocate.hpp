// roam — allocating global memory on any node, and reaching one's own directly.
//
//   auto p = roam::gas::allocate<double>(node, 1000).get();   // 1000 doubles on `node`
//   ...
//   roam::gas::deallocate(p).get();
//
// Completion: each call returns at once; its future is ready when the owner has done it (at
// once when the owner is a node of this process). Errors (an exhausted heap, a freed or null
// pointer) are roam::memory_error in the future, never a silent success.
#pragma once

#include <roam/gas/cache.hpp>
#include <roam/gas/detail/operations.hpp>

#include <type_traits>

namespace roam::gas {

/// `count` uninitialized elements of T in node `node`'s heap, from any node (one-sided: the
/// owner's application does not take part; without a direct path its worker runs a short
/// handler). The memory is aligned to 64 bytes and lives until deallocate() or the end of
/// the job. Other nodes cache what they get of it under `policy` (roam/gas/cache.hpp); the
/// policy travels in the pointer. Throws roam::usage_error for a node out of range or
/// outside roam::run.
template <class T>
[[nodiscard]] future<global_ptr<T>> allocate(node_id node, std::size_t count = 1,
                                             cache_policy policy = cache_policy::none) {
  static_assert(std::is_trivially_copyable_v<T>,
                "roam::gas::allocate: global memory holds trivially copyable values");
  return detail::allocate_bytes(node, std::uint64_t{count} * sizeof(T),
                                static_cast<std::uint8_t>(policy))
      .then([](global_ptr<void> p) { return reinterpret_pointer_cast<T>(p); });
}

/// Frees the allocation `p` points to, from any node. `p` must be the pointer allocate()
/// returned (a pointer into the allocation is roam::memory_error). An operation on it
/// afterwards, through any copy of the pointer, is roam::memory_error (until its slot has been
/// reused 65536 times: generations are 16 bits); one racing with the deallocation is a race
/// of the program, whose result is undefined (the memory is not unmapped: nothing outside
/// the heap is touched). Copies other nodes cached are not forgotten (cache.hpp). The future
/// is ready once the memory is free: processes that copied it by RMA have given their
/// leases back.
template <class T>
[[nodiscard]] future<void> deallocate(const global_ptr<T>& p) {
  return detail::deallocate(detail::ref_of(p), detail::ptr_access::offset(p));
}

/// The address of the `count` elements at `p` when `p` points into memory of a node of this
/// process (nullptr otherwise), for ordinary loads and stores. Throws roam::memory_error
/// when `p` does not point to `count` elements of a live allocation. The address is valid
/// until the allocation is freed.
template <class T>
T* local(const global_ptr<T>& p, std::size_t count = 1) {
  using access = detail::ptr_access;
  return reinterpret_cast<T*>(detail::local_address(detail::ref_of(p), access::offset(p),
                                                    std::uint64_t{count} * sizeof(T), "local"));
}

}  // namespace roam::gas
