#pragma once
// Per-thread request pools (thesis Fig. 54): the state of every task and host request, with
// its shared_ptr control block, and its completion event come from the allocating thread's
// cache of blocks rather than from the general heap.
//
// Requests are created on the submitting threads but mostly die on the engine thread, which
// drops their last references: the blocks come from thread_block_pool, which hands them back
// in batches (src/common/thread_block_pool.hpp).
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include <roam/base/detail/thread_block_pool.hpp>

namespace roam::detail {

/// The pool of request blocks of `Bytes` bytes.
template <std::size_t Bytes>
using request_block_pool = thread_block_pool<Bytes, 32>;

/// For std::allocate_shared: single objects come from the pool of their size (rounded up to
/// the maximal alignment); arrays and over-aligned types from the heap.
template <class T>
struct request_allocator {
  using value_type = T;
  request_allocator() noexcept = default;
  template <class U>
  request_allocator(const request_allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)

  static constexpr std::size_t block_bytes = (sizeof(T) + alignof(std::max_align_t) - 1) /
                                             alignof(std::max_align_t) * alignof(std::max_align_t);
  static constexpr bool pooled = alignof(T) <= alignof(std::max_align_t);

  T* allocate(std::size_t n) {
    if (pooled && n == 1) return static_cast<T*>(request_block_pool<block_bytes>::get());
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (pooled && n == 1) {
      request_block_pool<block_bytes>::put(p);
    } else {
      ::operator delete (p, std::align_val_t{alignof(T)});
    }
  }
  template <class U>
  bool operator==(const request_allocator<U>&) const noexcept {
    return true;
  }
};

/// std::make_shared<T>(args...), from the calling thread's request pool.
template <class T, class... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(request_allocator<T>{}, std::forward<Args>(args)...);
}

}  // namespace roam::detail
