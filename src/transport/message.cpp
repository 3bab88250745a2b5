// Message blocks and their pools.
//
// Why our own pool: the runtime's hot paths (one allocation per message) need a
// free list that is fast when the producer and the consumer are different threads
// (application thread sends, worker frees): thread_block_pool's per-thread caches with
// batch exchange keep both sides allocation-free in steady state.
#include <roam/transport/message.hpp>

#include <roam/base/detail/page_size.hpp>
#include <roam/base/detail/thread_block_pool.hpp>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

namespace roam::detail {

std::uint32_t header_checksum(const message_header& h) noexcept {
  // FNV-1a style mixing over 64-bit words; the checksum field itself is excluded.
  std::uint64_t x = 0xcbf29ce484222325ull;
  auto mix = [&x](std::uint64_t v) {
    x ^= v;
    x *= 0x100000001b3ull;
    x ^= x >> 29;
  };
  mix(h.magic);
  mix((std::uint64_t{h.handler} << 32) | h.flags);
  mix((std::uint64_t{h.source} << 32) | h.dest);
  mix(h.payload_size);
  mix(h.function);
  mix(h.reply_to);
  mix(h.flow);
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

namespace {

constexpr std::size_t block_bytes = sizeof(message) + pooled_payload_capacity;

// Small blocks: per-thread caches exchanging batches of 64 (src/common/thread_block_pool.hpp).
using small_blocks = thread_block_pool<block_bytes, 64>;

std::atomic<bool (*)(void*, std::size_t) noexcept> lock_block{nullptr};
std::atomic<void (*)(void*) noexcept> unlock_block{nullptr};

// Large blocks, by power-of-two class, kept after use: allocating megabytes afresh for
// every large message costs page faults and zeroing that dwarf the copy itself. From one page
// up they are page-aligned, so a block page-locked for devices shares no page with other memory.
class large_block_cache {
 public:
  static constexpr int min_class = 11, max_class = 27;  // 2 KiB .. 128 MiB
  static constexpr int locked_min_class = 17;           // 128 KiB
  static_assert((std::size_t{1} << locked_min_class) == locked_block_min_bytes);
  static constexpr std::size_t max_cached_bytes = std::size_t{256} << 20;

  struct block {
    void* memory = nullptr;
    bool locked = false;
  };

  static int class_of(std::size_t bytes) noexcept {
    int c = min_class;
    while ((std::size_t{1} << c) < bytes) ++c;
    return c;
  }
  block get(int c) {
    block b;
    {
      std::lock_guard guard(lock_);
      auto& list = free_[c - min_class];
      if (!list.empty()) {
        b = list.back();
        list.pop_back();
        cached_ -= std::size_t{1} << c;
      }
    }
    if (b.memory == nullptr) b.memory = raw_allocate(c);
    // A block smaller than a page (64 KiB pages) would share one: never locked.
    if (!b.locked && c >= locked_min_class && page_aligned(c)) {
      if (auto* lock = lock_block.load(std::memory_order_acquire))
        b.locked = lock(b.memory, std::size_t{1} << c);
    }
    return b;
  }
  void put(block b, int c) {
    {
      std::lock_guard guard(lock_);
      if (cached_ + (std::size_t{1} << c) <= max_cached_bytes) {
        free_[c - min_class].push_back(b);
        cached_ += std::size_t{1} << c;
        return;
      }
    }
    if (b.locked) unlock_block.load(std::memory_order_acquire)(b.memory);
    raw_free(b.memory, c);
  }

 private:
  static bool page_aligned(int c) noexcept { return (std::size_t{1} << c) >= page_bytes(); }
  static void* raw_allocate(int c) {
    if (!page_aligned(c)) return ::operator new (std::size_t{1} << c);
    return ::operator new (std::size_t{1} << c, std::align_val_t{page_bytes()});
  }
  static void raw_free(void* p, int c) {
    if (!page_aligned(c)) {
      ::operator delete(p);
    } else {
      ::operator delete (p, std::align_val_t{page_bytes()});
    }
  }

  std::mutex lock_;
  std::vector<block> free_[max_class - min_class + 1];
  std::size_t cached_ = 0;
};
large_block_cache& large_blocks() {
  static large_block_cache* cache = new large_block_cache;  // never destroyed: late frees
  return *cache;
}

}  // namespace

message_ptr message::allocate(std::size_t payload_capacity) {
  if (payload_capacity <= pooled_payload_capacity)
    return message_ptr(new (small_blocks::get()) message(pooled_payload_capacity, true));
  if (payload_capacity > max_payload_bytes)
    throw std::length_error("message payload of " + std::to_string(payload_capacity) +
                            " bytes exceeds the 4 GiB limit");
  const std::size_t bytes = sizeof(message) + payload_capacity;
  const int c = large_block_cache::class_of(bytes);
  if (c <= large_block_cache::max_class) {
    auto b = large_blocks().get(c);
    return message_ptr(new (b.memory) message(
        static_cast<std::uint32_t>((std::size_t{1} << c) - sizeof(message)), false, b.locked));
  }
  void* p = ::operator new(bytes);
  return message_ptr(new (p) message(static_cast<std::uint32_t>(payload_capacity), false));
}

void message::reserve(message_ptr& m, std::size_t payload_capacity, std::size_t keep) {
  if (payload_capacity <= m->capacity()) return;
  // Doubling stops at what a block holds: a payload that fits must not fail because its
  // doubled capacity would not.
  const std::size_t grown = std::max<std::size_t>(
      payload_capacity,
      std::min<std::uint64_t>(2 * std::uint64_t{m->capacity()}, max_payload_bytes));
  message_ptr bigger = allocate(grown);
  bigger->header = m->header;
  std::memcpy(bigger->payload(), m->payload(), keep);
  m = std::move(bigger);
}

void message_deleter::operator()(message* m) const noexcept {
  const bool pooled = m->pooled_;
  const bool locked = m->locked_;
  const std::size_t bytes = sizeof(message) + m->capacity_;
  m->~message();
  if (pooled) {
    small_blocks::put(m);
    return;
  }
  const int c = large_block_cache::class_of(bytes);
  if (c <= large_block_cache::max_class && (std::size_t{1} << c) == bytes)
    large_blocks().put({m, locked}, c);
  else
    ::operator delete(m);
}

bool set_large_block_locking(block_locking locking) noexcept {
  if (locking.lock == nullptr || locking.unlock == nullptr) return false;
  // The unlock function first (claimed by one caller): a block locked by `lock` always finds it.
  void (*no_unlock)(void*) noexcept = nullptr;
  if (!unlock_block.compare_exchange_strong(no_unlock, locking.unlock, std::memory_order_acq_rel))
    return false;
  lock_block.store(locking.lock, std::memory_order_release);
  return true;
}

bool is_locked_block(const message& m) noexcept { return m.locked_; }

message_ptr message::clone(const message& m) {
  message_ptr copy = allocate(m.header.payload_size);
  copy->header = m.header;
  copy->header.flow = 0;  // a flow ends at one handler: the copy's sender starts its own
  std::memcpy(copy->payload(), m.payload(), m.header.payload_size);
  return copy;
}

}  // namespace roam::detail
