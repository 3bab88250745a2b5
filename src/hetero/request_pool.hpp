#pragma once
// Per-thread request pools (thesis Fig. 54): the state of every task and host request, with
// its shared_ptr control block, and its completion event come from the allocating thread's
// cache of blocks rather than from the general heap.
//
// Why written here: std::allocate_shared takes an allocator, and requests are created on the
// submitting threads but mostly die on the engine thread, which drops their last references.
// Blocks must flow back without a lock per block and without the engine thread's cache
// growing forever. Each thread keeps a small cache; beyond two batches it hands one batch to
// a shared list (one lock per batch), and an empty cache takes a batch from there (the
// "magazines" of roam's message pool, src/transport/message.cpp, which this standalone
// library cannot link).
//
// Under AddressSanitizer cached blocks are poisoned, so a use after a request died is still
// reported.
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ROAM_REQUEST_POOL_POISON(p, n) __asan_poison_memory_region((p), (n))
#define ROAM_REQUEST_POOL_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define ROAM_REQUEST_POOL_POISON(p, n) ((void)(p), (void)(n))
#define ROAM_REQUEST_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace roam::detail {

/// Blocks of `Bytes` bytes (a multiple of the maximal alignment), cached per thread.
template <std::size_t Bytes>
class request_block_pool {
 public:
  static constexpr std::size_t batch = 32;

  static void* get() {
    if (thread_finished()) return ::operator new(Bytes);
    thread_cache& cache = local();
    if (cache.blocks.empty()) cache.refill();
    if (cache.blocks.empty()) return ::operator new(Bytes);
    void* p = cache.blocks.back();
    cache.blocks.pop_back();
    ROAM_REQUEST_POOL_UNPOISON(p, Bytes);
    return p;
  }

  static void put(void* p) noexcept {
    if (thread_finished()) {
      ::operator delete(p);
      return;
    }
    ROAM_REQUEST_POOL_POISON(p, Bytes);
    thread_cache& cache = local();
    try {
      cache.blocks.push_back(p);
    } catch (...) {  // no room to remember it: give it back to the heap
      ROAM_REQUEST_POOL_UNPOISON(p, Bytes);
      ::operator delete(p);
      return;
    }
    if (cache.blocks.size() >= 2 * batch) cache.spill();
  }

 private:
  struct shared_list {
    std::mutex lock;
    std::vector<std::vector<void*>> batches;
  };
  // Never destroyed: a thread may return blocks while the process exits.
  static shared_list& shared() {
    static auto* list = new shared_list;
    return *list;
  }

  struct thread_cache {
    std::vector<void*> blocks;
    thread_cache() { blocks.reserve(2 * batch); }
    thread_cache(const thread_cache&) = delete;
    thread_cache& operator=(const thread_cache&) = delete;
    ~thread_cache() {
      thread_finished() = true;  // requests that die later on this thread use the heap
      if (blocks.empty()) return;
      shared_list& list = shared();
      std::lock_guard guard(list.lock);
      list.batches.push_back(std::move(blocks));
    }
    void refill() {
      shared_list& list = shared();
      std::lock_guard guard(list.lock);
      if (list.batches.empty()) return;
      blocks = std::move(list.batches.back());
      list.batches.pop_back();
      blocks.reserve(2 * batch);
    }
    void spill() {
      std::vector<void*> out(blocks.end() - batch, blocks.end());
      blocks.resize(blocks.size() - batch);
      shared_list& list = shared();
      std::lock_guard guard(list.lock);
      list.batches.push_back(std::move(out));
    }
  };
  /// Set when the thread's cache is gone (the thread is exiting; for the main thread, before
  /// static objects are destroyed, which may still drop requests).
  static bool& thread_finished() noexcept {
    thread_local bool finished = false;
    return finished;
  }
  static thread_cache& local() {
    thread_local thread_cache cache;
    return cache;
  }
};

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

#undef ROAM_REQUEST_POOL_POISON
#undef ROAM_REQUEST_POOL_UNPOISON
