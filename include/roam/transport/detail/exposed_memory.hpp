// roam — memory every process exposes to the others' one-sided copies (MPI-3 RMA). Not for
// applications: the global-memory layer builds on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace roam::detail {

/// Bytes [offset, offset + bytes) of a process's exposed part.
struct exposed_run {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// The same number of bytes in every process of the job, which any process reads and
/// writes without the owner's participation. Made by transport::expose (collective) and
/// destroyed by every process (collective too), when no thread of the process uses it.
///
/// Threading: get() and put() may be called from any thread, concurrently; each takes the
/// transport's lock on the network for its duration (MPI is used serialized).
class exposed_memory {
 public:
  virtual ~exposed_memory() = default;
  /// This process's part (its bytes undefined at first), which its own threads use as plain
  /// memory.
  virtual std::byte* local_part() noexcept = 0;
  /// Copies the runs of process `process`'s part, one after the other, into `packed`;
  /// returns when `packed` holds them.
  virtual void get(unsigned process, std::span<const exposed_run> runs, std::byte* packed) = 0;
  /// Copies `packed` into the runs of process `process`'s part; returns once the bytes are
  /// in that process's memory (remote completion: a later get from any process sees them).
  virtual void put(unsigned process, std::span<const exposed_run> runs,
                   const std::byte* packed) = 0;
};

}  // namespace roam::detail
