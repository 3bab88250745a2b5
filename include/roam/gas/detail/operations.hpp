// roam — the byte-level operations behind the global-memory templates. Not for applications.
#pragma once

#include <roam/gas/global_ptr.hpp>
#include <roam/task/future.hpp>
#include <roam/transport/message.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace roam::gas::detail {

/// The allocation a pointer names.
struct allocation_ref {
  node_id node = 0;
  std::uint32_t slot = 0;
  std::uint16_t generation = 0;
  std::uint8_t policy = 0;  ///< how other nodes cache it (roam::gas::cache_policy)
};

template <class T>
allocation_ref ref_of(const global_ptr<T>& p) noexcept {
  return {p.where(), ptr_access::slot(p), ptr_access::generation(p), ptr_access::policy(p)};
}

/// Bytes [offset, offset + bytes) of a node's heap.
struct byte_run {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(offset, bytes);
  }
};

/// Copies the runs of allocation `a` out of the contiguous `packed` (their bytes one after
/// the other). `packed` may be reused when it returns; the future is ready once the bytes
/// are in place (or holds roam::memory_error). `operation` names the public call in errors.
[[nodiscard]] future<void> put_runs(const allocation_ref& a, std::span<const byte_run> runs,
                                    const std::byte* packed, const char* operation);
/// Copies the runs of allocation `a` into `packed`, which must stay valid until the future
/// is ready.
[[nodiscard]] future<void> get_runs(const allocation_ref& a, std::span<const byte_run> runs,
                                    std::byte* packed, const char* operation);

/// put_runs, then `handler` (a message built for the owner) runs on the owner once the bytes
/// are in place; nothing runs when the put fails.
[[nodiscard]] future<void> put_runs_then(const allocation_ref& a, std::span<const byte_run> runs,
                                         const std::byte* packed,
                                         roam::detail::message_ptr handler);

/// How cached_get uses the calling node's cache.
enum class cache_read : std::uint8_t {
  any,          ///< the cached copy if there is one, else fetch and keep (get)
  cached_only,  ///< the cached copy, or roam::memory_error (lget)
  refetch,      ///< fetch and keep, whatever is cached (rget)
};
/// Reads `bytes` at (a, offset) into `dest` through the calling node's cache (a's policy
/// says how it is kept); `dest` must stay valid until the future is ready.
[[nodiscard]] future<void> cached_get(const allocation_ref& a, std::uint64_t offset,
                                      std::uint64_t bytes, std::byte* dest, cache_read mode);

/// Copies the calling node's cached copy of `bytes` at (a, offset) into `dest` and returns
/// true (a hit), or returns false: nothing cached (or `a` is read directly), nothing copied.
/// The fast path of get on cached allocations: no future, no allocation.
bool read_cached(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes,
                 std::byte* dest);

/// A new allocation of `bytes` on `node`, cached by other nodes under `policy` (a
/// roam::gas::cache_policy).
[[nodiscard]] future<global_ptr<void>> allocate_bytes(node_id node, std::uint64_t bytes,
                                                      std::uint8_t policy);
/// Frees the allocation that starts at `offset` (roam::memory_error when it starts elsewhere).
[[nodiscard]] future<void> deallocate(const allocation_ref& a, std::uint64_t offset);

/// The address of [offset, offset + bytes) of an allocation of a node of this process, or
/// nullptr when another process hosts the node; roam::memory_error when the pointer does
/// not name live memory.
std::byte* local_address(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes,
                         const char* operation);

/// What an atomic operation does with its operands.
enum class atomic_kind : std::uint8_t {
  load,
  store,
  exchange,
  fetch_add,
  fetch_min,
  fetch_max,
  compare_exchange,
};
/// An atomic operation on the `width` (4 or 8) bytes at `offset` of allocation `a`, as an
/// integer (signed for min and max when `is_signed`); the future holds the previous bits.
[[nodiscard]] future<std::uint64_t> atomic_bits(const allocation_ref& a, std::uint64_t offset,
                                                atomic_kind kind, unsigned width, bool is_signed,
                                                std::uint64_t operand, std::uint64_t desired);

/// A symmetric allocation: every node calls it with the same `bytes`, in the same order
/// (the application thread of every node, SPMD); it names the same slot and offset on every
/// node. The calling node's part is filled with copies of `pattern` (`pattern_bytes` long,
/// dividing `bytes`) before any node returns, so no other node's put can precede the fill.
/// Checked across the nodes: when the nodes did not call it in step, every node throws
/// roam::usage_error.
global_ptr<void> allocate_symmetric(std::uint64_t bytes, const std::byte* pattern,
                                    std::size_t pattern_bytes, std::uint8_t policy,
                                    const char* caller);
/// Frees the calling node's part of a symmetric allocation (every node frees its own).
void deallocate_symmetric(const global_ptr<void>& p) noexcept;

}  // namespace roam::gas::detail
