// What the owner of global memory does: checked copies, atomics and frees, and the active
// messages through which other nodes ask for them.
#pragma once

#include "process_memory.hpp"

#include <roam/am/buffer.hpp>
#include <roam/gas/detail/operations.hpp>
#include <roam/transport/message.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace roam::gas::detail {

/// Copies `packed` into the runs of allocation `a` (a node of this process) or the runs into
/// `packed`, once every run is checked: roam::memory_error, and nothing copied, otherwise.
void copy_in(process_memory& m, const allocation_ref& a, std::span<const byte_run> runs,
             const std::byte* packed, const char* operation);
void copy_out(process_memory& m, const allocation_ref& a, std::span<const byte_run> runs,
              std::byte* packed, const char* operation);
/// An atomic operation on the `width` bytes at `offset` of `a` (a node of this process).
std::uint64_t apply_atomic(process_memory& m, const allocation_ref& a, std::uint64_t offset,
                           atomic_kind kind, unsigned width, bool is_signed, std::uint64_t operand,
                           std::uint64_t desired);
/// Frees `a` (a node of this process), which `offset` must start, once the processes
/// holding leases on it gave them back; the future is ready when it is free
/// (roam::memory_error if it was not allocated or `offset` is not its start).
future<void> release(process_memory& m, const allocation_ref& a, std::uint64_t offset);
std::uint64_t total_bytes(std::span<const byte_run> runs);

/// Bytes a request to `dest` may take with its data and run list (a message's largest
/// payload, less room for the rest).
std::uint64_t request_limit(node_id dest);
/// Bytes of a run in a request's run list.
inline constexpr std::uint64_t run_bytes = sizeof(byte_run);

/// Splits `runs` into requests of at most `limit` bytes (data and run list): calls
/// `each(runs of the piece, offset of its data in the packed bytes, its data bytes)`.
template <class Each>
void split_requests(std::span<const byte_run> runs, std::uint64_t limit, Each&& each) {
  std::vector<byte_run> piece;
  std::uint64_t piece_data = 0, piece_start = 0, cost = 0;
  auto flush = [&] {
    if (piece.empty()) return;
    each(piece, piece_start, piece_data);
    piece_start += piece_data;
    piece.clear();
    piece_data = cost = 0;
  };
  for (byte_run r : runs) {
    do {
      if (cost + run_bytes + 1 > limit) flush();
      const std::uint64_t take = std::min(r.bytes, limit - cost - run_bytes);
      piece.push_back({r.offset, take});
      piece_data += take;
      cost += run_bytes + take;
      r.offset += take;
      r.bytes -= take;
    } while (r.bytes != 0);
  }
  flush();
}

// The owner's operations asked for by active message, from the calling node; each future is
// the operation's remote completion. Requests are split to fit messages.
future<void> request_put(const allocation_ref& a, std::span<const byte_run> runs,
                         const std::byte* packed);
future<void> request_get(const allocation_ref& a, std::span<const byte_run> runs,
                         std::byte* packed);
/// A put whose request also carries `handler`, posted on the owner after the copy (one
/// request when it fits one message; else the handler follows the pieces).
future<void> request_put_then(const allocation_ref& a, std::span<const byte_run> runs,
                              const std::byte* packed, roam::detail::message_ptr handler);
future<std::array<std::uint64_t, 3>> request_allocate(node_id node, std::uint64_t bytes);
future<void> request_deallocate(const allocation_ref& a, std::uint64_t offset);
future<std::uint64_t> request_atomic(const allocation_ref& a, std::uint64_t offset,
                                     atomic_kind kind, unsigned width, bool is_signed,
                                     std::uint64_t operand, std::uint64_t desired);
/// Asks the owner of `a` for a lease for this process, unless one was asked for already;
/// the answer goes to m.leases().
void request_lease(process_memory& m, const allocation_ref& a);

}  // namespace roam::gas::detail
