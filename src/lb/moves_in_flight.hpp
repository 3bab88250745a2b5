// greedy_refine's memory of the moves it ordered and has not seen done.
#pragma once

#include "refine_plan.hpp"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace roam::lb::builtin {

/// A move takes effect when the object's running handlers end, and its object travels
/// meanwhile; a node does not list an object that is leaving. Planning from the next
/// round's reports as they are would count that object nowhere, and move other objects to
/// make up for it. correct() shows such objects where they are going, as immovable, until
/// their destination reports them. Holds one entry per object moved and not yet seen
/// there, for at most `patience` rounds.
class moves_in_flight {
 public:
  /// 250 rounds: 0.5 s at the default period, 1.25 s at lb_synthetic's. A move waits for
  /// the object's running handler, so a handler longer than that loses its entry and its
  /// load is counted nowhere until it lands (one round's plan then overfills its
  /// destination a little; later rounds correct it).
  explicit moves_in_flight(unsigned patience = 250) : patience_(patience) {}
  /// Records `moves`, planned from `reports`.
  void ordered(const std::vector<planned_move>& moves, const std::vector<node_report>& reports);
  /// Adds the objects still in flight to their destination's report. Forgets a move once
  /// its object is reported anywhere: at its destination (done), on its old node (the
  /// move did not happen: a moving object is not listed there), or elsewhere (moved by
  /// someone else); and after `patience` rounds. Nodes must report every object they hold,
  /// idle ones included, or an object that arrived and finished would look in flight.
  void correct(std::vector<node_report>& reports);
  std::size_t size() const noexcept { return pending_.size(); }

 private:
  using key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;
  static key key_of(const object_id& id) { return {id.home, id.type, id.index}; }
  struct pending {
    reported_object object;
    node_id to = 0;
    unsigned rounds = 0;
  };
  std::map<key, pending> pending_;
  unsigned patience_;
};

}  // namespace roam::lb::builtin
