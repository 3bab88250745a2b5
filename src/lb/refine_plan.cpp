#include "refine_plan.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>

namespace roam::lb::builtin {
namespace {

/// Every worker of the job as a bin: per node a min-heap of its workers' loads, and the
/// nodes ordered by their least loaded worker.
class worker_bins {
 public:
  explicit worker_bins(const std::vector<node_report>& nodes) : heaps_(nodes.size()) {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      heaps_[k] = heap(std::greater<>(), std::vector<double>(std::max(1u, nodes[k].workers), 0.0));
      order_.insert({0.0, k});
    }
  }
  double least(std::size_t node) const { return heaps_[node].top(); }
  /// The node whose least loaded worker is least loaded; `preferred` on a tie.
  std::size_t least_node(std::size_t preferred) const {
    const auto& [load, node] = *order_.begin();
    return least(preferred) <= load ? preferred : node;
  }
  void add(std::size_t node, double load) {
    order_.erase({least(node), node});
    const double top = heaps_[node].top();
    heaps_[node].pop();
    heaps_[node].push(top + load);
    order_.insert({least(node), node});
  }
  double makespan() const {
    double most = 0;
    for (auto h : heaps_) {
      while (h.size() > 1) h.pop();
      most = std::max(most, h.top());
    }
    return most;
  }

 private:
  using heap = std::priority_queue<double, std::vector<double>, std::greater<>>;
  std::vector<heap> heaps_;
  std::set<std::pair<double, std::size_t>> order_;
};

struct item {
  std::size_t home;
  const reported_object* object;
  std::size_t turn = 0;  ///< among the objects of its node with the same load
  bool pinned() const { return object->movable < object->load; }
};

struct plan_result {
  double makespan = 0;
  std::vector<planned_move> moves;
};

/// Places `items` (largest first) on `bins`; `keep_under` > 0: an object stays on its node
/// when its least loaded worker stays within it.
plan_result place(const std::vector<node_report>& nodes, const std::vector<item>& items,
                  double keep_under) {
  worker_bins bins(nodes);
  plan_result r;
  for (const item& it : items) {
    const double load = it.object->load;
    std::size_t to = it.home;
    if (!it.pinned() && !(keep_under > 0 && bins.least(it.home) + load <= keep_under))
      to = bins.least_node(it.home);
    bins.add(to, load);
    if (to != it.home)
      r.moves.push_back({it.object->id, static_cast<node_id>(it.home), static_cast<node_id>(to)});
  }
  r.makespan = bins.makespan();
  return r;
}

}  // namespace

double node_makespan(std::vector<double> loads, unsigned workers) {
  std::sort(loads.begin(), loads.end(), std::greater<>());
  std::priority_queue<double, std::vector<double>, std::greater<>> bins(
      std::greater<>(), std::vector<double>(std::max(1u, workers), 0.0));
  for (double l : loads) {
    const double top = bins.top();
    bins.pop();
    bins.push(top + l);
  }
  double most = 0;
  while (!bins.empty()) {
    most = std::max(most, bins.top());
    bins.pop();
  }
  return most;
}

std::vector<planned_move> refine_plan(const std::vector<node_report>& nodes, double tolerance) {
  std::vector<item> items;
  double total = 0, largest = 0, current = 0;
  unsigned workers = 0;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    std::vector<double> loads;
    loads.reserve(nodes[k].objects.size());
    std::map<double, std::size_t> turns;
    for (const auto& o : nodes[k].objects) {
      if (!(o.load > 0) || !std::isfinite(o.load)) continue;  // idle, or a NaN cost
      items.push_back({k, &o, turns[o.load]++});
      loads.push_back(o.load);
      total += o.load;
      largest = std::max(largest, o.load);
    }
    workers += std::max(1u, nodes[k].workers);
    current = std::max(current, node_makespan(std::move(loads), nodes[k].workers));
  }
  if (items.empty() || nodes.size() < 2) return {};
  const double bound = std::max(total / workers, largest);
  if (current <= bound * (1 + tolerance)) return {};
  // Largest first; among equals, those that cannot move first (they take their place
  // before others could), then the nodes in turn. In turn matters: a node whose equal
  // objects all came first would fill its workers past the others' and then push its
  // last ones away, while another node's own objects were pushed to it.
  std::sort(items.begin(), items.end(), [](const item& a, const item& b) {
    if (a.object->load != b.object->load) return a.object->load > b.object->load;
    if (a.pinned() != b.pinned()) return a.pinned();
    return std::tie(a.turn, a.home) < std::tie(b.turn, b.home);
  });
  plan_result spread = place(nodes, items, 0);
  plan_result kept = place(nodes, items, spread.makespan);
  // Equal within rounding: the sums of one set of loads in two orders.
  const bool kept_as_short = kept.makespan <= spread.makespan * (1 + 1e-9);
  const bool kept_shorter = kept.makespan < spread.makespan * (1 - 1e-9);
  plan_result& best =
      kept_shorter || (kept_as_short && kept.moves.size() <= spread.moves.size()) ? kept : spread;
  if (current - best.makespan <= tolerance * bound) return {};
  return std::move(best.moves);
}

}  // namespace roam::lb::builtin
