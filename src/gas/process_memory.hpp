// The global heaps of this process's nodes: one reserved region, two heaps per node.
#pragma once

#include "lease_table.hpp"
#include "node_cache.hpp"
#include "node_heap.hpp"
#include "ward_merges.hpp"

#include <roam/gas/gas_settings.hpp>
#include <roam/transport/detail/exposed_memory.hpp>
#include <roam/transport/node_id.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace roam::detail {
class node_runtime;
}

namespace roam::gas::detail {

/// The heaps of the nodes this process hosts, for the length of one roam::run. Node k's
/// region is [heap][symmetric heap], regions side by side in node order, in memory the
/// transport exposes to the other processes' one-sided copies (an MPI window) or, without
/// one, in an anonymous mapping whose pages are touched only when used.
///
/// Threading: made by the first node of the process to start and destroyed with the last
/// (the node extension's make and destroy); between them, any thread may use it.
class process_memory {
 public:
  /// Collective over the processes (exposes the memory), from `n`'s extension make().
  explicit process_memory(roam::detail::node_runtime& n);
  ~process_memory();
  process_memory(const process_memory&) = delete;
  process_memory& operator=(const process_memory&) = delete;

  /// The memory of the running job in this process, or nullptr outside roam::run.
  static process_memory* current() noexcept;
  /// current(), or roam::usage_error naming `caller` outside roam::run.
  static process_memory& require(const char* caller);

  [[nodiscard]] bool hosts(node_id node) const noexcept { return node - first_ < count_; }
  /// The heap of a node this process hosts that holds allocation `slot` (the symmetric
  /// heap for symmetric slots).
  node_heap& heap_of(node_id node, std::uint32_t slot) noexcept {
    node_state& s = *nodes_[node - first_];
    return (slot & node_heap::symmetric_slot) ? s.symmetric : s.dynamic;
  }
  /// Whether the calling thread copies `node`'s memory itself: a node of this process (with
  /// --roam-gas-path am, only the calling thread's own node).
  bool reads_directly(node_id node) const noexcept;
  /// The merges of WARD regions over memory of `node` (a node of this process).
  ward_merges& merges_of(node_id node) noexcept { return nodes_[node - first_]->merging; }
  node_heap& dynamic_heap(node_id node) noexcept { return nodes_[node - first_]->dynamic; }
  node_heap& symmetric_heap(node_id node) noexcept { return nodes_[node - first_]->symmetric; }
  const gas_settings& settings() const noexcept { return settings_; }

  /// The other processes' memory, for one-sided copies; nullptr without (one process, a
  /// transport without them, or --roam-gas-path am).
  roam::detail::exposed_memory* window() noexcept { return window_.get(); }
  /// The process hosting `node`, and where the bytes at `offset` of allocation `slot` of
  /// `node`'s heaps are in its exposed part.
  unsigned process_of(node_id node) const noexcept { return node / count_; }
  std::uint64_t window_offset(node_id node, std::uint32_t slot,
                              std::uint64_t offset) const noexcept {
    return (node % count_) * node_bytes_ + ((slot & node_heap::symmetric_slot) ? heap_bytes_ : 0) +
           offset;
  }
  /// Nodes each process hosts (the same in every process).
  node_id nodes_per_process() const noexcept { return count_; }
  /// This process's index among the job's processes.
  unsigned this_process() const noexcept { return first_ / count_; }
  /// The leases this process holds on other processes' allocations.
  lease_table& leases() noexcept { return leases_; }

  /// Counts of operations by path (roam::gas::node_path_statistics), of the calling node.
  struct counters {
    std::atomic<std::uint64_t> direct{0}, rma{0}, messages{0}, bytes{0};
  };
  counters& counted(const char* caller);
  /// The calling node's cache (threads of no node: the process's only node's).
  node_cache& cache(const char* caller);

 private:
  struct node_state {
    node_heap dynamic;
    node_heap symmetric;
    node_cache cached;
    ward_merges merging;  // WARD regions on this node's memory being closed
  };
  node_id first_;
  node_id count_;
  gas_settings settings_;
  std::uint64_t heap_bytes_ = 0;  // of one node's heap, and of its two heaps together
  std::uint64_t node_bytes_ = 0;
  std::unique_ptr<roam::detail::exposed_memory> window_;
  lease_table leases_;
  std::unique_ptr<counters[]> counted_;  // by local node
  std::byte* region_ = nullptr;          // mapped here when there is no window_
  std::size_t region_bytes_ = 0;
  std::vector<std::unique_ptr<node_state>> nodes_;  // node_heap holds a mutex: not movable
};

}  // namespace roam::gas::detail
