#pragma once
// The MSI protocol of one hetero object (thesis §5.1.3): the state of its copy in every memory
// space, and the transitions the engine's operations make. Pure: no buffers, events or locks;
// the engine calls it under its lock and moves the bytes the transitions describe.
//
// Invariant kept by every transition: at least one copy is valid, and a Modified copy is the
// only valid one.
#include <roam/hetero/data_access.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace roam::detail {

class object_coherence {
 public:
  /// Memory spaces are 0 (the host) to spaces - 1, at most 64 (failure masks are one word).
  /// A new object is Modified on the host (its contents are the host allocation's) and Invalid
  /// everywhere else.
  explicit object_coherence(std::size_t spaces);

  [[nodiscard]] std::size_t spaces() const noexcept { return states_.size(); }
  [[nodiscard]] coherence state(std::size_t space) const { return states_.at(space); }
  [[nodiscard]] bool valid(std::size_t space) const {
    return states_.at(space) != coherence::invalid;
  }
  /// The device space (not the host) whose copy is the newest: the Modified one, else the first
  /// Shared one. Throws device_error when no device copy is valid (the caller asks only when the
  /// host's is Invalid, so one is).
  [[nodiscard]] std::size_t newest_device_space() const;

  /// `space` was filled from `source`, a valid copy: both are Shared from now on.
  void copied(std::size_t source, std::size_t space);
  /// The copy in `space` was written (a kernel there, or a host request for writing on the
  /// host): it is Modified, every other copy Invalid.
  void written(std::size_t space);
  /// A device copy's buffer goes back to its pool. A Modified one was written back to the host
  /// first, which becomes Modified; a Shared or Invalid one leaves a valid copy elsewhere (a
  /// Shared copy that is the only valid one is an internal error: device_error, no change).
  void evicted(std::size_t space);
  /// The copies in `failed_spaces` (bit s for space s) hold undefined contents: a transfer into
  /// them, or a range write to them, failed. Where a valid copy outside the mask is left, they
  /// become Invalid (and a lone valid copy left becomes Modified); where none is (a failed kernel
  /// wrote the only valid copy), they stay as they are, holding undefined contents. Whether a
  /// copy became Invalid.
  bool failed(std::uint64_t failed_spaces);

 private:
  std::vector<coherence> states_;
};

}  // namespace roam::detail
