// One node's global heap: a fixed arena cut into allocations, and the table that names them.
#pragma once

#include <roam/transport/node_id.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace roam::gas::detail {

/// The allocations of one node's heap. An allocation is named by a slot of a fixed table
/// and the slot's generation: releasing it bumps the generation, so a pointer kept after
/// the release (or after the slot is reused) no longer resolves. Freed slots are reused
/// first in, first out, as late as the table allows; a stale pointer resolves wrongly only
/// after 65536 reuses of its slot.
///
/// Why not malloc: the heap's memory must be one region known at start-up (an MPI window
/// exposes it to other processes), and offsets, not addresses, travel in pointers.
///
/// Processes that copy an allocation's bytes without asking the owner (MPI RMA) hold a lease
/// on it: a free first recalls the leases (start_release lists their holders) and only then
/// gives the memory back (finish_release), so no copy lands in memory reused since.
///
/// Threading: every member may be called from any thread; a mutex guards the table and
/// the free list. resolve() does not keep the allocation alive: an access racing with the
/// allocation's free is the program's race (the bytes stay inside the heap).
class node_heap {
 public:
  /// Alignment of every allocation (a cache line: no false sharing between allocations).
  static constexpr std::size_t alignment = 64;

  /// The bit that marks the slots of a symmetric heap (allocations every node makes
  /// together, at the same offsets): its slots are `symmetric_slot | index`.
  static constexpr std::uint32_t symmetric_slot = 0x80000000u;

  /// A heap over `bytes` bytes at `base` (owned by the caller), with at most
  /// `max_allocations` live allocations, for node `owner` (named in errors); `slot_tag` is
  /// 0 or symmetric_slot, or'ed into the slots it hands out.
  node_heap(node_id owner, std::byte* base, std::uint64_t bytes, std::uint32_t max_allocations,
            std::uint32_t slot_tag = 0);

  struct block {
    std::uint32_t slot = 0;
    std::uint16_t generation = 0;
    std::uint64_t offset = 0;  ///< in the heap, a multiple of `alignment`
    std::uint64_t bytes = 0;
  };
  /// `bytes` (0 is allowed: a distinct, empty allocation); roam::memory_error when the heap
  /// has no free range that large or the table no free slot.
  block allocate(std::uint64_t bytes);
  /// Starts freeing the allocation: from now on it is not live. Returns the holders of its
  /// leases, which must give them back before finish_release(); with none, the allocation is
  /// freed already (and the list empty). roam::memory_error when (slot, generation) is not
  /// live (freed already or being freed, never allocated, or a slot reused since).
  [[nodiscard]] std::vector<std::uint32_t> start_release(std::uint32_t slot,
                                                         std::uint16_t generation);
  /// Frees an allocation start_release() left to its lease holders.
  void finish_release(std::uint32_t slot, std::uint16_t generation) noexcept;
  /// The address of [offset, offset + bytes) in the live allocation (slot, generation);
  /// roam::memory_error naming `operation` when the allocation is not live or the range
  /// leaves it.
  std::byte* resolve(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset,
                     std::uint64_t bytes, const char* operation) const;

  /// The bytes of a live allocation: [begin, end) of the heap, at `base` in memory.
  struct extent {
    std::byte* base = nullptr;  ///< the heap's first byte
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    [[nodiscard]] bool holds(std::uint64_t offset, std::uint64_t bytes) const noexcept {
      return offset >= begin && offset <= end && bytes <= end - offset;
    }
  };
  /// The extent of the live allocation (slot, generation); roam::memory_error naming
  /// `operation` when it is not live. For checking many ranges under one lock.
  extent extent_of(std::uint32_t slot, std::uint16_t generation, const char* operation) const;
  /// The extent of the live allocation, and `holder` (a process) added to its lease holders.
  /// roam::memory_error as extent_of.
  extent lease(std::uint32_t slot, std::uint16_t generation, std::uint32_t holder,
               const char* operation);
  /// Throws the roam::memory_error that an access to [offset, offset + bytes) of allocation
  /// (slot, generation) by `operation` deserves (null, not live, or out of bounds).
  [[noreturn]] void refuse(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset,
                           std::uint64_t bytes, const char* operation) const;

  /// The text of roam::memory_error for bytes [offset, offset + bytes) that leave allocation
  /// (slot, generation) of `node`, bytes [begin, end) of its heap.
  static std::string out_of_bounds(const char* operation, node_id node, std::uint32_t slot,
                                   std::uint16_t generation, std::uint64_t offset,
                                   std::uint64_t bytes, std::uint64_t begin, std::uint64_t end);

  std::uint64_t bytes_in_use() const;
  std::uint32_t live_allocations() const;
  std::uint64_t capacity() const noexcept { return bytes_; }

 private:
  struct entry {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;  ///< as asked
    std::uint64_t span = 0;   ///< as taken from the free list (rounded up)
    std::uint16_t generation = 0;
    bool live = false;
    bool leaving = false;                // start_release() left it to its lease holders
    std::vector<std::uint32_t> holders;  // processes holding a lease, each once
  };
  /// The entry of a live (slot, generation), or nullptr. Under lock_.
  const entry* live_entry(std::uint32_t slot, std::uint16_t generation) const;
  void give_back(std::uint64_t offset, std::uint64_t span);
  void free_entry(std::uint32_t slot) noexcept;  // under lock_

  node_id owner_;
  std::uint32_t slot_tag_;
  std::byte* base_;
  std::uint64_t bytes_;
  mutable std::mutex lock_;
  std::vector<entry> table_;                            // slot 0 unused: the null pointer's
  std::deque<std::uint32_t> free_slots_;                // first in, first out
  std::map<std::uint64_t, std::uint64_t> free_ranges_;  // offset -> length, coalesced
  std::uint64_t in_use_ = 0;
  std::uint32_t live_ = 0;
};

}  // namespace roam::gas::detail
