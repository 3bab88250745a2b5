// Message blocks and their pools.
//
// Why our own pool: the runtime's hot paths (one allocation per message) need a
// free list that is fast when the producer and the consumer are different threads
// (application thread sends, worker frees): thread_block_pool's per-thread caches with
// batch exchange keep both sides allocation-free in steady state.
#include <roam/transport/message.hpp>

#include "../common/thread_block_pool.hpp"

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
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

namespace {

constexpr std::size_t block_bytes = sizeof(message) + pooled_payload_capacity;

// Small blocks: per-thread caches exchanging batches of 64 (src/common/thread_block_pool.hpp).
using small_blocks = thread_block_pool<block_bytes, 64>;

// Large blocks, by power-of-two class, kept after use: allocating megabytes afresh for
// every large message costs page faults and zeroing that dwarf the copy itself.
class large_block_cache {
 public:
  static constexpr int min_class = 11, max_class = 27;  // 2 KiB .. 128 MiB
  static constexpr std::size_t max_cached_bytes = std::size_t{256} << 20;

  static int class_of(std::size_t bytes) noexcept {
    int c = min_class;
    while ((std::size_t{1} << c) < bytes) ++c;
    return c;
  }
  void* get(int c) {
    {
      std::lock_guard guard(lock_);
      auto& list = free_[c - min_class];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        cached_ -= std::size_t{1} << c;
        return p;
      }
    }
    return ::operator new (std::size_t{1} << c);
  }
  void put(void* p, int c) {
    {
      std::lock_guard guard(lock_);
      if (cached_ + (std::size_t{1} << c) <= max_cached_bytes) {
        free_[c - min_class].push_back(p);
        cached_ += std::size_t{1} << c;
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  std::mutex lock_;
  std::vector<void*> free_[max_class - min_class + 1];
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
  if (payload_capacity > std::numeric_limits<std::uint32_t>::max() - sizeof(message))
    throw std::length_error("roam: message payload of " + std::to_string(payload_capacity) +
                            " bytes exceeds the 4 GiB limit");
  const std::size_t bytes = sizeof(message) + payload_capacity;
  const int c = large_block_cache::class_of(bytes);
  if (c <= large_block_cache::max_class) {
    void* p = large_blocks().get(c);
    return message_ptr(new (p) message(
        static_cast<std::uint32_t>((std::size_t{1} << c) - sizeof(message)), false));
  }
  void* p = ::operator new(bytes);
  return message_ptr(new (p) message(static_cast<std::uint32_t>(payload_capacity), false));
}

void message::reserve(message_ptr& m, std::size_t payload_capacity, std::size_t keep) {
  if (payload_capacity <= m->capacity()) return;
  std::size_t grown = std::max(payload_capacity, 2 * m->capacity());
  message_ptr bigger = allocate(grown);
  bigger->header = m->header;
  std::memcpy(bigger->payload(), m->payload(), keep);
  m = std::move(bigger);
}

void message_deleter::operator()(message* m) const noexcept {
  const bool pooled = m->pooled_;
  const std::size_t bytes = sizeof(message) + m->capacity_;
  m->~message();
  if (pooled) {
    small_blocks::put(m);
    return;
  }
  const int c = large_block_cache::class_of(bytes);
  if (c <= large_block_cache::max_class && (std::size_t{1} << c) == bytes)
    large_blocks().put(m, c);
  else
    ::operator delete(m);
}

}  // namespace roam::detail
