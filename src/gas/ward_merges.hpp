// The owner's side of closing WARD regions: every node's written bytes merged by a fixed rule.
#pragma once

#include <roam/gas/detail/operations.hpp>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace roam::gas::detail {

/// What a merge found against the WARD contract: a byte one node wrote and another read.
struct ward_violation {
  bool found = false;
  std::uint64_t byte = 0;  ///< in the region
  node_id writer = 0;
  node_id reader = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(found, byte, writer, reader);
  }
};

/// The regions over one node's memory that nodes are closing, by the collective sequence
/// number that opened them. Each region's table lives from the first node's merge to the
/// owner's finish(): a winner per byte (the highest-numbered writer so far, plus one), and
/// with checking the lowest and highest writer and reader of each byte.
///
/// Threading: any thread; one mutex for the node's regions (merges are one per node and
/// region, not a hot path).
class ward_merges {
 public:
  /// Merges node `writer`'s bytes into `memory` (the region's first byte in the heap): `runs`
  /// (offsets in the region) of `data`, one after the other; `read_runs` are the bytes it
  /// read before writing them itself (checking only).
  void merge(std::uint64_t sequence, std::uint64_t region_bytes, bool check, node_id writer,
             std::byte* memory, const std::vector<byte_run>& runs, const std::byte* data,
             const std::vector<byte_run>& read_runs);
  /// The region is closed on every node: forgets its table and returns the first byte (if
  /// any) that one node wrote and another read.
  ward_violation finish(std::uint64_t sequence);

 private:
  struct table {
    std::vector<std::uint32_t> winner;  // writer + 1, 0: not written
    std::vector<std::uint32_t> writer_low, writer_high, reader_low, reader_high;  // + 1
  };
  std::mutex lock_;
  std::unordered_map<std::uint64_t, table> regions_;
};

}  // namespace roam::gas::detail
