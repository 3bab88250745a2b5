#pragma once
// Fixed-size blocks cached per thread, for allocations made on one thread and freed on
// another: roam's messages (src/transport/message.cpp: the sender allocates, the worker that
// ran the handler frees) and the heterogeneous framework's requests
// (src/hetero/request_pool.hpp: submitting threads allocate, the engine thread frees).
//
// Why our own: both sides must stay allocation-free in steady state without a lock per block.
// Each thread keeps a small cache; beyond two batches it hands one batch to a shared list
// (one lock per batch), and an empty cache takes a batch from there ("magazines"). In the
// base layer so that both the transport and the heterogeneous framework use it.
//
// Under AddressSanitizer cached blocks are poisoned, so a use after free is still reported.
#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ROAM_BLOCK_POOL_POISON(p, n) __asan_poison_memory_region((p), (n))
#define ROAM_BLOCK_POOL_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define ROAM_BLOCK_POOL_POISON(p, n) ((void)(p), (void)(n))
#define ROAM_BLOCK_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace roam::detail {

/// Blocks of `Bytes` bytes (a multiple of the maximal alignment), cached per thread and
/// exchanged between threads `Batch` at a time.
template <std::size_t Bytes, std::size_t Batch>
class thread_block_pool {
 public:
  static constexpr std::size_t batch = Batch;

  static void* get() {
    if (thread_finished()) return ::operator new(Bytes);
    thread_cache& cache = local();
    if (cache.blocks.empty()) cache.refill();
    if (cache.blocks.empty()) return ::operator new(Bytes);
    void* p = cache.blocks.back();
    cache.blocks.pop_back();
    ROAM_BLOCK_POOL_UNPOISON(p, Bytes);
    return p;
  }

  static void put(void* p) noexcept {
    if (thread_finished()) {
      ::operator delete(p);
      return;
    }
    ROAM_BLOCK_POOL_POISON(p, Bytes);
    thread_cache& cache = local();
    try {
      cache.blocks.push_back(p);
    } catch (...) {  // no room to remember it: give it back to the heap
      ROAM_BLOCK_POOL_UNPOISON(p, Bytes);
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

}  // namespace roam::detail

#undef ROAM_BLOCK_POOL_POISON
#undef ROAM_BLOCK_POOL_UNPOISON
