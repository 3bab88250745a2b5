// The global heaps of this process's nodes: one reserved region, two heaps per node.
#pragma once

#include "node_heap.hpp"

#include <roam/gas/gas_settings.hpp>
#include <roam/transport/node_id.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace roam::detail {
class node_runtime;
}

namespace roam::gas::detail {

/// The heaps of the nodes this process hosts, for the length of one roam::run. Node k's
/// region is [heap][symmetric heap], regions side by side in node order, in one mapping
/// whose pages are touched only when used: what a later one-sided transport exposes as one
/// window per process.
///
/// Threading: made by the first node of the process to start and destroyed with the last
/// (the node extension's make and destroy); between them, any thread may use it.
class process_memory {
 public:
  process_memory(node_id first, node_id count, const gas_settings& settings);
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
  node_heap& dynamic_heap(node_id node) noexcept { return nodes_[node - first_]->dynamic; }
  node_heap& symmetric_heap(node_id node) noexcept { return nodes_[node - first_]->symmetric; }
  const gas_settings& settings() const noexcept { return settings_; }

 private:
  struct node_state {
    node_heap dynamic;
    node_heap symmetric;
  };
  node_id first_;
  node_id count_;
  gas_settings settings_;
  std::byte* region_ = nullptr;
  std::size_t region_bytes_ = 0;
  std::vector<std::unique_ptr<node_state>> nodes_;  // node_heap holds a mutex: not movable
};

}  // namespace roam::gas::detail
