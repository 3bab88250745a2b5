// roam — what an algorithm of the collectives layer needs from the ranks it runs on: point-
// to-point transfers posted in rounds. One algorithm code serves every binding (a plain MPI
// communicator: coll/mpi.hpp; the nodes of a roam job: am/detail/node_links.hpp); each
// binding implements this.
#pragma once

#include <roam/coll/tuning_rules.hpp>

#include <cstddef>
#include <cstdint>

namespace roam::coll::detail {

class links {
 public:
  virtual ~links() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  /// Posts the transfer of `bytes` (> 0) at `data` to `peer`. `tag` names the round: the
  /// receiver posts the matching receive with the same tag. Between two complete() calls
  /// at most one transfer per peer, tag and direction is posted; transfers of one tag
  /// between two ranks in one direction match in the order they were posted (as MPI's
  /// do), so rounds may reuse a tag. `data` stays untouched until complete() returns.
  virtual void send(int peer, int tag, const std::byte* data, std::size_t bytes) = 0;
  /// Posts the receipt of exactly `bytes` (> 0) from `peer` into `data`.
  virtual void recv(int peer, int tag, std::byte* data, std::size_t bytes) = 0;
  /// Returns once every transfer posted since the last call has finished. Throws
  /// roam::error when one failed (naming the peer and the cause).
  virtual void complete() = 0;
  /// The rules that choose for calls with algorithm::automatic: by default the process's
  /// (default_rules()).
  virtual const tuning_rules& rules() const;
  /// Processes per node, for the rules (1 by default).
  virtual std::uint64_t processes_per_node() const noexcept { return 1; }
  /// The choice that calls with algorithm::automatic make instead of the rules', where its
  /// algorithm serves the collective; automatic for none. By default the process's
  /// ROAM_COLL_ALGORITHM (forced_choice()).
  virtual choice forced() const;
};

/// ROAM_COLL_ALGORITHM ("NAME" or "NAME:K"), read at the first call; automatic when unset.
/// A malformed value is a roam::config_error from every call. Any thread.
choice forced_choice();

/// The process's rules: read from the file ROAM_COLL_TUNING names at the first call (a
/// malformed file is a roam::config_error from that call and the next), or made from the
/// default cost model. Any thread.
const tuning_rules& default_rules();
/// Rules from the default cost model (cost_model{}), made once. Any thread.
const tuning_rules& default_model_rules();

}  // namespace roam::coll::detail
