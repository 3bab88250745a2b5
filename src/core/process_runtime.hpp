// Everything one process holds while roam::run is active.
#pragma once

#include "job_trace.hpp"
#include "node_runtime.hpp"
#include "route_grid.hpp"
#include "shutdown_protocol.hpp"

#include <roam/core/config.hpp>
#include <roam/transport/transport.hpp>

#include <memory>
#include <thread>
#include <vector>

namespace roam::detail {

class process_runtime {
 public:
  explicit process_runtime(const config& cfg);
  ~process_runtime();

  const config& settings() const noexcept { return config_; }
  transport& net() noexcept { return *transport_; }
  node_id size() const noexcept { return transport_->size(); }
  /// The local node with global id `id`, or nullptr if it lives in another process.
  node_runtime* local(node_id id) noexcept {
    node_id first = transport_->first_local();
    return (id >= first && id - first < nodes_.size()) ? nodes_[id - first].get() : nullptr;
  }
  std::vector<std::unique_ptr<node_runtime>>& nodes() noexcept { return nodes_; }

  // Ranks: every process hosts the same number of consecutive nodes (one process in
  // process, nodes-per-rank under MPI).
  node_id ranks() const noexcept { return size() / transport_->local_count(); }
  node_id rank() const noexcept { return transport_->first_local() / transport_->local_count(); }
  node_id rank_of(node_id node) const noexcept { return node / transport_->local_count(); }
  node_id first_node_of(node_id rank) const noexcept { return rank * transport_->local_count(); }
  /// Channel traffic and direct sends take the grid (--roam-route-min-nodes, ADR 43).
  bool routes() const noexcept { return routes_; }
  /// The grid of the job's nodes (routing, route_grid.hpp).
  const route_grid& grid() const noexcept { return grid_; }
  /// A node that relays records holds their senders' credit until they have left it
  /// (transport::hold_credit_for_relay): only where that cannot deadlock (ADR 43).
  bool relay_holds_credit() const noexcept { return relay_holds_credit_; }
  /// The end of the job (shutdown_protocol.hpp).
  shutdown_protocol& shutdown() noexcept { return *shutdown_; }

  /// Checks an arriving message's header and queues it on its node; fatal if malformed.
  void deliver(message_ptr m) noexcept;
  /// Some node of this process has more than --roam-inbox-limit arrivals on its injection
  /// queue (grants of send credit wait then).
  bool inbox_full() noexcept;

  void start();
  void stop();

 private:
  void comm_thread_main();

  config config_;
  std::unique_ptr<transport> transport_;
  bool routes_ = false;
  bool relay_holds_credit_ = false;
  route_grid grid_;
  std::vector<std::unique_ptr<node_runtime>> nodes_;
  std::unique_ptr<shutdown_protocol> shutdown_;
  std::unique_ptr<job_trace> trace_;  ///< --roam-trace
  std::thread comm_thread_;
  std::atomic<bool> comm_stop_{false};
  /// The nodes are stopping: what still arrives (uncounted messages a peer sent before
  /// its balancer stopped) is discarded.
  std::atomic<bool> closed_{false};
  bool stopped_ = false;  ///< stop() ran (it runs once; the destructor calls it too)
};

/// The active process runtime, or nullptr outside roam::run.
process_runtime* active_process() noexcept;

}  // namespace roam::detail
