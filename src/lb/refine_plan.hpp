// greedy_refine's plan: which objects move where, from every node's objects and loads.
// Pure computation (no runtime calls), so that it is tested on its own.
#pragma once

#include <roam/lb/policy.hpp>

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
  template <class Ar>
  void serialize(Ar& ar) {
    ar(id, from, to);
  }
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

}  // namespace roam::lb::builtin
