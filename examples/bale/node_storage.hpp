// Per-node data of the bale kernels inside roam: one slot per node of the job, so that the
// virtual nodes of one process (inproc) each get their own table, and a handler finds its
// node's data with one index.
#pragma once

#include <roam/roam.hpp>

#include <mutex>
#include <vector>

namespace bale {

/// The settings the kernels need: one worker per node owns the node's share of the data,
/// so handlers update it without atomics (as a bale PE does), and the application thread
/// only waits instead of running handlers beside that worker.
inline roam::config one_worker_per_node(roam::config cfg) {
  cfg.threads = 1;
  cfg.lend_app_thread = false;
  return cfg;
}

template <class T>
class node_storage {
 public:
  /// Collective (every node calls it): makes room for every node's slot. Returns once all
  /// nodes may use their slots.
  void prepare() {
    {
      std::lock_guard guard(lock_);
      if (slots_.size() < roam::num_nodes()) slots_.resize(roam::num_nodes());
    }
    roam::barrier();
  }
  /// This node's slot. Only this node's threads touch it.
  T& mine() { return slots_[roam::this_node()]; }

 private:
  std::mutex lock_;
  std::vector<T> slots_;
};

}  // namespace bale
