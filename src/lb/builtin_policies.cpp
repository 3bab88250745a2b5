// The built-in policies. Their protocols are event driven (a request, a reply, a move):
// balance() never waits, so a policy never holds a suspended task when the job stops.
// Written after the thesis' Fig. 5 (master-worker) and Fig. 6 (diffusion) and Charm++'s
// GreedyRefine idea (move few objects, from the most to the least loaded nodes).
#include "builtin_policies.hpp"

#include <roam/core/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>

namespace roam::lb::builtin {
namespace {

/// What moving `o` moves now: its own estimate if it has one, else the part of its pending
/// cost that has not started.
double movable_load(const object_info& o) {
  if (o.hint >= 0) return o.hint;
  if (o.waiting() == 0) return 0;
  return o.pending_cost * o.waiting() / std::max<std::uint32_t>(1, o.pending_count);
}

/// Gives `to` (whose load is `their_load`) objects with work that has not started, the
/// largest first, until about half the difference has moved or this node would drop
/// below `keep`. Returns how many objects it moved.
int give_share(node_id to, double their_load, double keep) {
  auto objects = local_objects();
  double mine = 0;
  for (const auto& o : objects) mine += o.load();
  const double share = (mine - their_load) / 2;
  if (share <= 0 || mine <= keep) return 0;
  std::sort(objects.begin(), objects.end(), [](const object_info& a, const object_info& b) {
    return movable_load(a) > movable_load(b);
  });
  double moved = 0;
  int count = 0;
  for (const auto& o : objects) {
    const double load = movable_load(o);
    if (load <= 0) break;
    if (moved > 0 && moved + load > share) continue;  // would overshoot: try a smaller one
    if (mine - moved - load < keep && moved > 0) continue;
    if (move_object(o.id, to)) {
      moved += load;
      ++count;
    }
    if (moved >= share) break;
  }
  return count;
}

/// Seeds for the policies' random choices: distinct per node, the same from run to run.
unsigned next_seed() {
  static std::atomic<unsigned> counter{0};
  return 0x5eed + 7919 * counter.fetch_add(1);
}

// ---- none / work_stealing ------------------------------------------------------------------

class passive final : public policy {};

// ---- diffusion -------------------------------------------------------------------------------

class diffusion final : public policy {
 public:
  explicit diffusion(const config& c)
      : threshold_(c.lb_threshold), size_(c.lb_neighbors), rng_(next_seed()) {}

  void balance() override {
    const node_id nodes = roam::num_nodes(), me = roam::this_node();
    if (nodes < 2 || local_load() >= threshold_) return;
    std::vector<node_id> ask;
    {
      std::lock_guard guard(lock_);
      if (asking_) return;  // one partner at a time
      asking_ = true;
      if (neighbors_.empty()) pick_neighbors(me, nodes);
      replies_.clear();
      awaiting_ = neighbors_.size();
      ask = neighbors_;
    }
    for (node_id nb : ask) send_control(nb, &diffusion::on_load_request, me);
  }

 private:
  static void on_load_request(node_id from) {
    send_control(from, &diffusion::on_load_reply, roam::this_node(), local_load());
  }
  static void on_load_reply(node_id from, double load) {
    this_policy_as<diffusion>().load_reply(from, load);
  }
  static void on_work_request(node_id from, double their_load) {
    auto& self = this_policy_as<diffusion>();
    const bool given = self.give(from, their_load);
    send_control(from, &diffusion::on_work_reply, roam::this_node(), given);
  }
  static void on_work_reply(node_id from, bool given) {
    this_policy_as<diffusion>().work_reply(from, given);
  }

  void load_reply(node_id from, double load) {
    node_id target = 0;
    {
      std::lock_guard guard(lock_);
      replies_.emplace_back(from, load);
      if (--awaiting_ > 0) return;
      auto best = std::max_element(replies_.begin(), replies_.end(),
                                   [](auto& a, auto& b) { return a.second < b.second; });
      if (best->second <= threshold_) {
        // Nobody around has work: look elsewhere next time.
        pick_neighbors(roam::this_node(), roam::num_nodes());
        asking_ = false;
        return;
      }
      target = best->first;
    }
    send_control(target, &diffusion::on_work_request, roam::this_node(), local_load());
  }

  bool give(node_id to, double their_load) {
    {
      std::lock_guard guard(lock_);
      if (serving_) return false;  // one partner at a time
      serving_ = true;
    }
    const bool given = give_share(to, their_load, threshold_) > 0;
    std::lock_guard guard(lock_);
    serving_ = false;
    return given;
  }

  void work_reply(node_id from, bool given) {
    std::lock_guard guard(lock_);
    asking_ = false;
    if (!given) replace_neighbor(from);
  }

  void pick_neighbors(node_id me, node_id nodes) {
    neighbors_.clear();
    std::vector<node_id> others;
    for (node_id k = 0; k < nodes; ++k)
      if (k != me) others.push_back(k);
    std::shuffle(others.begin(), others.end(), rng_);
    others.resize(std::min<std::size_t>(size_, others.size()));
    neighbors_ = others;
  }
  void replace_neighbor(node_id gone) {
    const node_id nodes = roam::num_nodes(), me = roam::this_node();
    std::vector<node_id> candidates;
    for (node_id k = 0; k < nodes; ++k)
      if (k != me && std::find(neighbors_.begin(), neighbors_.end(), k) == neighbors_.end())
        candidates.push_back(k);
    auto it = std::find(neighbors_.begin(), neighbors_.end(), gone);
    if (it == neighbors_.end() || candidates.empty()) return;
    *it = candidates[rng_() % candidates.size()];
  }

  const double threshold_;
  const std::size_t size_;
  std::mutex lock_;
  std::mt19937 rng_;
  std::vector<node_id> neighbors_;
  std::vector<std::pair<node_id, double>> replies_;
  std::size_t awaiting_ = 0;
  bool asking_ = false;
  bool serving_ = false;
};

// ---- master_worker ---------------------------------------------------------------------------

class master_worker final : public policy {
 public:
  explicit master_worker(const config& c) : master_(c.lb_master), threshold_(c.lb_threshold) {}

  void balance() override {
    if (master_ >= roam::num_nodes() || roam::num_nodes() < 2 || roam::this_node() == master_)
      return;
    const double load = local_load();
    if (load >= threshold_) return;
    {
      std::lock_guard guard(lock_);
      if (asking_) return;  // one request at a time
      asking_ = true;
    }
    send_control(master_, &master_worker::on_request, roam::this_node(), load);
  }

 private:
  // On the master: give the worker a share of the work, or say there is none (it asks again
  // a period later: the master keeps no list, so it needs no thread of its own to serve it).
  static void on_request(node_id from, double their_load) {
    const bool given = give_share(from, their_load, this_policy_as<master_worker>().threshold_) > 0;
    send_control(from, &master_worker::on_answer, given);
  }
  static void on_answer(bool /*given*/) {
    auto& self = this_policy_as<master_worker>();
    std::lock_guard guard(self.lock_);
    self.asking_ = false;
  }

  const node_id master_;
  const double threshold_;
  std::mutex lock_;
  bool asking_ = false;
};

// ---- greedy_refine ---------------------------------------------------------------------------

struct object_report {
  object_id id;
  double load = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(id, load);
  }
};

class greedy_refine final : public policy {
 public:
  explicit greedy_refine(const config& c) : tolerance_(c.lb_tolerance) {}

  void balance() override {
    if (roam::this_node() != 0 || roam::num_nodes() < 2) return;
    {
      std::lock_guard guard(lock_);
      if (round_active_) return;
      round_active_ = true;
      reports_.assign(roam::num_nodes(), {});
      awaiting_ = roam::num_nodes();
    }
    for (node_id k = 0; k < roam::num_nodes(); ++k)
      send_control(k, &greedy_refine::on_report_request);
  }

  /// The moves that bring every node within `tolerance` of the average: repeatedly the
  /// largest object of the most loaded node that fits into its gap to the least loaded.
  static std::vector<std::pair<object_id, std::pair<node_id, node_id>>> plan(
      std::vector<std::vector<object_report>> objects, double tolerance) {
    const std::size_t nodes = objects.size();
    std::vector<double> load(nodes, 0);
    double total = 0;
    for (std::size_t k = 0; k < nodes; ++k) {
      for (auto& o : objects[k]) load[k] += o.load;
      total += load[k];
      std::sort(objects[k].begin(), objects[k].end(),
                [](auto& a, auto& b) { return a.load > b.load; });
    }
    const double limit = total / static_cast<double>(nodes) * (1 + tolerance);
    std::vector<std::pair<object_id, std::pair<node_id, node_id>>> moves;
    for (std::size_t step = 0; total > 0 && step < 4096; ++step) {
      const auto heavy =
          static_cast<std::size_t>(std::max_element(load.begin(), load.end()) - load.begin());
      const auto light =
          static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      if (load[heavy] <= limit || heavy == light) break;
      const double gap = load[heavy] - load[light];
      auto& candidates = objects[heavy];
      auto it = std::find_if(candidates.begin(), candidates.end(),
                             [gap](auto& o) { return o.load > 0 && o.load < gap; });
      if (it == candidates.end()) break;
      load[heavy] -= it->load;
      load[light] += it->load;
      objects[light].push_back(*it);
      moves.push_back({it->id, {static_cast<node_id>(heavy), static_cast<node_id>(light)}});
      candidates.erase(it);
    }
    return moves;
  }

 private:
  static void on_report_request() {
    std::vector<object_report> loads;
    for (const auto& o : local_objects())
      if (o.load() > 0) loads.push_back({o.id, o.load()});
    send_control(0, &greedy_refine::on_report, roam::this_node(), loads);
  }
  static void on_report(node_id from, std::vector<object_report> loads) {
    this_policy_as<greedy_refine>().report(from, std::move(loads));
  }
  static void on_move(object_id id, node_id dest) { (void)move_object(id, dest); }

  void report(node_id from, std::vector<object_report> loads) {
    std::vector<std::vector<object_report>> all;
    {
      std::lock_guard guard(lock_);
      if (from < reports_.size()) reports_[from] = std::move(loads);
      if (--awaiting_ > 0) return;
      all = std::move(reports_);
    }
    for (auto& [id, route] : plan(std::move(all), tolerance_))
      send_control(route.first, &greedy_refine::on_move, id, route.second);
    std::lock_guard guard(lock_);
    round_active_ = false;
  }

  const double tolerance_;
  std::mutex lock_;
  bool round_active_ = false;
  std::size_t awaiting_ = 0;
  std::vector<std::vector<object_report>> reports_;
};

}  // namespace

std::vector<std::pair<std::string, policy_factory>> builtin_policies() {
  return {
      {"none", [](const config&) { return std::make_unique<passive>(); }},
      {"work_stealing", [](const config&) { return std::make_unique<passive>(); }},
      {"diffusion", [](const config& c) { return std::make_unique<diffusion>(c); }},
      {"master_worker", [](const config& c) { return std::make_unique<master_worker>(c); }},
      {"greedy_refine", [](const config& c) { return std::make_unique<greedy_refine>(c); }},
  };
}

bool is_passive(const policy& p) noexcept { return dynamic_cast<const passive*>(&p) != nullptr; }

}  // namespace roam::lb::builtin
