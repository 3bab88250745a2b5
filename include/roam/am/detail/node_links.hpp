// roam — the collectives layer's links over the job's nodes: one collective call's
// transfers travel as runtime messages, so the generalized algorithms (roam/coll) run on
// every transport, in-process virtual nodes included. roam::allreduce and the other node
// collectives (am/collectives.hpp) run on them.
#pragma once

#include <roam/coll/algorithm.hpp>
#include <roam/coll/detail/links.hpp>
#include <roam/core/detail/node_api.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

namespace roam::detail {

struct node_inbox;

/// The rules the node collectives of `n`'s job follow: the --roam-coll-tuning file's, or
/// rules from the cost model probed at the job's first automatic choice (rules from the
/// default model before it). The node's application thread.
const coll::tuning_rules& node_rules(node_runtime& n);
/// The rules' processes per node for `n`'s job: the nodes of one process (which share its
/// memory).
std::uint64_t node_processes_per_node(node_runtime& n) noexcept;

/// The links of one collective call on node `n` (its application thread), numbered `seq`
/// (next_collective_sequence: every node's call of this collective has the same). Ranks
/// are node ids. A send is a message (cut in pieces a message can carry) and completes at
/// once; a receive completes when its pieces have arrived, matched by peer, tag and the
/// transfer's number on that tag, so messages that overtake each other still match in
/// order. complete() waits the way roam's waits do: the application thread runs its
/// node's work meanwhile. Destroying the links frees the call's meeting point: every
/// transfer sent to this node must have been received by then (the algorithms do).
class node_links final : public coll::detail::links {
 public:
  node_links(node_runtime& n, std::uint64_t seq);
  ~node_links() override;
  node_links(const node_links&) = delete;
  node_links& operator=(const node_links&) = delete;

  int rank() const noexcept override;
  int size() const noexcept override;
  void send(int peer, int tag, const std::byte* data, std::size_t bytes) override;
  void recv(int peer, int tag, std::byte* data, std::size_t bytes) override;
  void complete() override;
  /// The job's rules (--roam-coll-tuning), or rules from the cost model probed over these
  /// links at the job's first automatic choice (or ROAM_COLL_MODEL's): collective, since
  /// every node makes the same choices.
  const coll::tuning_rules& rules() const override;
  /// The nodes of one process, which share its memory.
  std::uint64_t processes_per_node() const noexcept override;
  /// --roam-coll-algorithm.
  coll::choice forced() const override;

 private:
  node_runtime& node_;
  std::uint64_t seq_;
  std::shared_ptr<node_inbox> inbox_;
  // Transfers posted so far on each (peer, tag), in each direction: the next one's number.
  std::map<std::pair<int, int>, std::uint32_t> sent_, received_;
};

}  // namespace roam::detail
