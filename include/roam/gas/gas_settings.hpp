// roam — the global-memory layer's settings (--roam-gas-*).
#pragma once

#include <roam/base/settings.hpp>

#include <cstdint>

namespace roam::gas {

/// How one-sided operations reach memory of another node.
enum class path : std::uint8_t {
  /// Direct copies between the heaps of nodes of one process; MPI RMA (under a lease) to
  /// nodes of other processes; active messages for the first access to an allocation, for
  /// atomics and put_then, and where MPI cannot make a window.
  automatic,
  /// Active messages to every other node, in this process too: the owner's worker copies
  /// (the fallback, and what the other paths are measured against).
  active_messages,
};

/// The global heaps and how they are reached (docs/guide/global_memory.md). Read and change
/// them through roam::config: `cfg.of<roam::gas::gas_settings>()`, or
/// `cfg.set("gas-heap", "256M")`. Every process of a job must set them alike.
struct gas_settings {
  /// Bytes of each node's heap for roam::gas::allocate (--roam-gas-heap, ROAM_GAS_HEAP; a
  /// number with an optional K, M or G suffix). Reserved at start-up; pages are touched only
  /// when used.
  std::uint64_t heap_bytes = std::uint64_t{32} << 20;
  /// Bytes of each node's symmetric heap, for what nodes allocate together (gvar,
  /// distributed_array; --roam-gas-symmetric-heap, ROAM_GAS_SYMMETRIC_HEAP).
  std::uint64_t symmetric_heap_bytes = std::uint64_t{32} << 20;
  /// Live allocations each node's heap may hold (--roam-gas-max-allocations,
  /// ROAM_GAS_MAX_ALLOCATIONS); its table takes about 64 bytes per allocation.
  std::uint32_t max_allocations = 1u << 16;
  /// Bytes of each node's software cache of remote memory (--roam-gas-cache-bytes,
  /// ROAM_GAS_CACHE_BYTES), data and bookkeeping; see roam/gas/cache.hpp.
  std::uint64_t cache_bytes = std::uint64_t{64} << 20;
  /// Shards of each node's cache, each with its own lock and LRU order
  /// (--roam-gas-cache-shards, ROAM_GAS_CACHE_SHARDS).
  std::uint32_t cache_shards = 16;
  /// Whether WARD regions check their contract at close() by default (--roam-gas-ward-check
  /// on|off, ROAM_GAS_WARD_CHECK); see roam/gas/ward_region.hpp.
  bool ward_check = false;
  /// How operations reach other nodes' memory (--roam-gas-path auto|am, ROAM_GAS_PATH).
  gas::path path = path::automatic;

  /// The layer's settings in the registry (roam/base/settings.hpp).
  static const roam::detail::settings_group& registration();
};

}  // namespace roam::gas
