// greedy_refine's plan: which objects move where, from every node's objects and loads.
// Pure computation (no runtime calls), so that it is tested on its own.
#pragma once

#include <roam/lb/policy.hpp>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace roam::lb::builtin {

/// One object as a node reported it.
struct reported_object {
  object_id id;
  double load = 0;     ///< all of its pending work
  double movable = 0;  ///< the part that moves with it (not started)
  template <class Ar>
  void serialize(Ar& ar) {
    ar(id, load, movable);
  }
};

/// What one node reported: its workers and its objects with load.
struct node_report {
  unsigned workers = 1;
  std::vector<reported_object> objects;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(workers, objects);
  }
};

struct planned_move {
  object_id id;
  node_id from = 0, to = 0;
};

/// The time a node needs for `loads` on `workers` workers that take the largest first (how
/// the distributing policies order a node's handlers): longest-processing-time-first list
/// scheduling.
double node_makespan(std::vector<double> loads, unsigned workers);

/// The moves that balance the nodes' makespans (node_makespan, not only their load sums,
/// since an object's work runs on one worker). Nothing moves when the current makespan is
/// within `tolerance` of the lower bound max(total / all workers, largest object), or when
/// the best plan found would not shorten it by more than `tolerance` times that bound.
///
/// Two plans are built, both placing objects largest first on a node's least loaded
/// worker: one that keeps an object on its node whenever it fits there under the LPT
/// makespan, and plain LPT over every worker of the job (ties kept on the object's node).
/// The shorter makespan wins, then the fewer moves. Objects whose work has started
/// (movable < load) stay where they are.
std::vector<planned_move> refine_plan(const std::vector<node_report>& nodes, double tolerance);

/// The moves greedy_refine ordered that the reports do not show done yet. A move takes
/// effect when the object's running handler ends, so the next round's reports may still
/// show it on its old node, or on none while it travels: planning from those would move
/// other objects to make up for it, again each round. correct() shows such objects where
/// they are going. Holds at most one entry per object moved in the last `patience` rounds.
class moves_in_flight {
 public:
  explicit moves_in_flight(unsigned patience = 200) : patience_(patience) {}
  /// Records `moves`, planned from `reports`.
  void ordered(const std::vector<planned_move>& moves, const std::vector<node_report>& reports);
  /// Moves the objects still in flight in `reports` to their destination; forgets those
  /// reported there, or on a node other than both ends (moved by someone else), or after
  /// `patience` rounds.
  void correct(std::vector<node_report>& reports);
  std::size_t size() const noexcept { return pending_.size(); }

 private:
  using key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;
  static key key_of(const object_id& id) { return {id.home, id.type, id.index}; }
  struct pending {
    reported_object object;
    node_id from = 0, to = 0;
    unsigned rounds = 0;
  };
  std::map<key, pending> pending_;
  unsigned patience_;
};

}  // namespace roam::lb::builtin
