// The leases a process holds on other processes' allocations, for one-sided copies (RMA).
#pragma once

#include <roam/transport/node_id.hpp>

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

namespace roam::gas::detail {

/// What a process knows of allocations of other processes that it copies with RMA: their
/// extent, under a lease the owner recalls before freeing them (node_heap::start_release).
///
/// Protocol: an operation that finds no lease goes through the owner (active message) and
/// asks for one meanwhile (begin_request; one request per allocation at a time). A recall
/// drops the lease and cancels a request in flight for that allocation, so that a grant
/// crossing the recall is not kept. RMA copies hold the table shared for as long as they
/// copy and a recall holds it exclusively: once a recall returns, no copy under the
/// recalled lease is still going on, and the owner may reuse the memory.
///
/// Bounded: at most `capacity` leases (beyond, all are dropped: the next operations ask
/// again) and one request per allocation in flight.
class lease_table {
 public:
  explicit lease_table(std::size_t capacity) : capacity_(capacity) {}

  struct lease {
    std::uint16_t generation = 0;
    std::uint64_t begin = 0, end = 0;  ///< the allocation's bytes in its heap
  };

  /// Held shared by a copy for its whole duration (find(), then the transfer).
  std::shared_mutex& guard() noexcept { return guard_; }
  /// The lease on (node, slot) for `generation`, if held. Call holding guard() (shared).
  std::optional<lease> find(node_id node, std::uint32_t slot, std::uint16_t generation) const;

  /// Whether to ask the owner for a lease on (node, slot, generation): false when a request
  /// for it is in flight already.
  bool begin_request(node_id node, std::uint32_t slot, std::uint16_t generation);
  /// The owner's answer to a request: keeps the lease unless a recall cancelled the request.
  void granted(node_id node, std::uint32_t slot, const lease& l);
  /// The owner refused (the allocation is gone): the request is over.
  void refused(node_id node, std::uint32_t slot, std::uint16_t generation);
  /// The owner frees the allocation: drops its lease and cancels a request in flight.
  /// Waits for the copies under the lease to finish.
  void recall(node_id node, std::uint32_t slot, std::uint16_t generation);

 private:
  static std::uint64_t key(node_id node, std::uint32_t slot) noexcept {
    return std::uint64_t{node} << 32 | slot;
  }
  struct request {
    std::uint16_t generation = 0;
    bool cancelled = false;
  };
  std::size_t capacity_;
  mutable std::shared_mutex guard_;
  std::unordered_map<std::uint64_t, lease> leases_;
  std::unordered_map<std::uint64_t, request> requests_;  // in flight, by (node, slot)
};

}  // namespace roam::gas::detail
