// The end of a job, collective over every rank, on the rank tree (rank_tree.hpp):
//
//  1. finished:  every node's body has returned (gathered up the tree to rank 0);
//  2. quiesce:   rank 0 orders every node's extensions to stop originating work (the load
//                balancers stop, their uncounted control messages are dropped), and gathers
//                that they did;
//  3. detect:    rank 0 waits for quiescence of everything counted, the objects the
//                balancers had set moving included;
//  4. stop:      rank 0 releases every node, down the tree.
//
// Only then does a process stop its workers and enter the transport's final barrier: no
// counted message is in flight anywhere, so nothing sent to a rank can find it gone (an
// object shipped to a rank already in the barrier used to hang the job, or vanish).
// A rank handles at most fan_out + 1 messages of each step.
#pragma once

#include <roam/core/detail/node_api.hpp>
#include <roam/transport/node_id.hpp>

#include <atomic>
#include <cstdint>

namespace roam::detail {

class node_runtime;
class process_runtime;

class shutdown_protocol {
 public:
  explicit shutdown_protocol(process_runtime& process);

  /// Called by every node's application thread once its body returned; returns when the
  /// job stops. The thread of the process's first node drives this rank's part; every
  /// waiting thread runs its node's work meanwhile.
  void finish(node_runtime& n);

  /// The protocol's messages; each goes to the first node of a rank.
  enum class step : std::uint8_t { finished, quiesce, quiesced, stop };
  /// A message of the protocol arrived on `n`, this process's first node.
  void arrived(step s, node_runtime& n);

 private:
  /// A step gathered up the tree: this rank's own arrivals and one per child rank.
  struct gathered {
    std::atomic<node_id> missing{0};
    ready_flag complete;
    void arrive() noexcept;
  };

  void drive(node_runtime& first);
  void send(node_runtime& from, node_id rank, step s);
  /// Passes the stop down to the children ranks and releases this process's nodes.
  void stop_here(node_runtime& n);

  process_runtime& process_;
  gathered finished_;  ///< this process's nodes, then one per child rank
  ready_flag quiesce_ordered_;
  gathered quiesced_;  ///< this rank, then one per child rank
};

}  // namespace roam::detail
