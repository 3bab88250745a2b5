#pragma once
// The framework's two memory pools (thesis Fig. 54): device memory handed out in size classes
// and kept for reuse, and host memory for objects' host copies (page-locked when a CUDA device
// exists, so its copies run at full speed and asynchronously). Both are written here because
// they must answer to the runtime's per-device limits and eviction, which no general-purpose
// allocator knows about. Not thread-safe: the engine calls them under its lock.
#include <bit>
#include <cstddef>
#include <map>
#include <optional>
#include <vector>

#include "backends.hpp"
#include "roam/hetero/device.hpp"

namespace roam::detail {

/// Sizes are rounded up to a class: powers of two up to 1 MiB, then whole MiB, so a freed
/// block fits the next request of about the same size.
inline std::size_t size_class(std::size_t bytes) {
  constexpr std::size_t mebibyte = std::size_t{1} << 20;
  if (bytes <= 256) return 256;
  if (bytes <= mebibyte) return std::bit_ceil(bytes);
  return (bytes + mebibyte - 1) / mebibyte * mebibyte;
}

class device_memory_pool {
 public:
  explicit device_memory_pool(device& d) : device_(&d), limit_(d.info().memory_bytes) {}
  device_memory_pool(const device_memory_pool&) = delete;
  device_memory_pool& operator=(const device_memory_pool&) = delete;
  ~device_memory_pool() { trim(); }

  /// A buffer of at least `bytes`, or nothing when the limit (or the device) has no room left
  /// even after freeing the cached blocks: the caller evicts and tries again.
  /// device_refused() then says which: the device may refuse while the limit leaves room
  /// (another process, or another rank's pool, holds its memory).
  std::optional<device_buffer> allocate(std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    device_refused_ = false;
    auto& cached = cache_[size];
    if (!cached.empty()) {
      auto buffer = cached.back();
      cached.pop_back();
      cached_bytes_ -= size;
      in_use_ += size;
      return buffer;
    }
    if (in_use_ + cached_bytes_ + size > limit_) trim();
    if (in_use_ + size > limit_) return std::nullopt;
    // A device may refuse although the limit allows (others use it too): free the cache, retry.
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        auto buffer = device_->allocate(size);
        in_use_ += size;
        return buffer;
      } catch (const out_of_device_memory&) {
        trim();
      }
    }
    device_refused_ = true;
    return std::nullopt;
  }

  void release(device_buffer buffer) {
    if (!buffer) return;
    in_use_ -= buffer.bytes;
    cache_[buffer.bytes].push_back(buffer);
    cached_bytes_ += buffer.bytes;
  }

  /// Frees every cached block.
  void trim() noexcept {
    for (auto& [size, blocks] : cache_) {
      for (auto b : blocks) device_->release(b);
      blocks.clear();
    }
    cached_bytes_ = 0;
  }

  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  [[nodiscard]] std::size_t in_use() const noexcept { return in_use_; }
  /// Whether the last allocate() that failed was refused by the device, not by the limit.
  [[nodiscard]] bool device_refused() const noexcept { return device_refused_; }

 private:
  device* device_;
  bool device_refused_ = false;
  std::size_t limit_;
  std::size_t in_use_ = 0;
  std::size_t cached_bytes_ = 0;
  std::map<std::size_t, std::vector<device_buffer>> cache_;
};

/// Host copies of objects. `allocator` is the device whose allocate_host gives the fastest
/// memory for transfers (a CUDA device), or null for plain page-aligned memory.
class host_memory_pool {
 public:
  explicit host_memory_pool(device* allocator) : allocator_(allocator) {}
  host_memory_pool(const host_memory_pool&) = delete;
  host_memory_pool& operator=(const host_memory_pool&) = delete;
  ~host_memory_pool() {
    for (auto& [size, blocks] : cache_)
      for (auto* b : blocks) free_block(b, size);
  }

  void* allocate(std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    auto& cached = cache_[size];
    if (!cached.empty()) {
      void* block = cached.back();
      cached.pop_back();
      cached_bytes_ -= size;
      return block;
    }
    return allocator_ != nullptr ? allocator_->allocate_host(size) : allocate_page_aligned(size);
  }

  /// Keeps up to 256 MiB of freed blocks for reuse (page-locking is slow), frees the rest.
  void release(void* block, std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    if (cached_bytes_ + size > keep_bytes) {
      free_block(block, size);
      return;
    }
    cache_[size].push_back(block);
    cached_bytes_ += size;
  }

 private:
  static constexpr std::size_t keep_bytes = std::size_t{256} << 20;

  void free_block(void* block, std::size_t size) noexcept {
    if (allocator_ != nullptr) {
      allocator_->release_host(block, size);
    } else {
      free_page_aligned(block);
    }
  }

  device* allocator_;
  std::size_t cached_bytes_ = 0;
  std::map<std::size_t, std::vector<void*>> cache_;
};

}  // namespace roam::detail
