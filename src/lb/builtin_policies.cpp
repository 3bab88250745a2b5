// The built-in policies. Their protocols are event driven (a request, a reply, a move):
// balance() never waits, so the job's end never waits for a policy.
// Written after the thesis' Fig. 5 (master-worker) and Fig. 6 (diffusion) and Charm++'s
// GreedyRefine idea (move few objects, from the most to the least loaded nodes).
#include "builtin_policies.hpp"

#include "gather_tree.hpp"
#include "master_groups.hpp"
#include "moves_in_flight.hpp"
#include "refine_plan.hpp"

#include <roam/core/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
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

/// The base of the built-in distributing policies.
///
/// Inside a node it runs the largest handler first (by its sender's cost: LPT list
/// scheduling, whose makespan is within 4/3 of the optimum; first come first served among
/// equal costs). A node's handlers wait in one heap that all its workers take from, which
/// costs a lock per handler: these policies are meant for coarse handlers, where the
/// order matters more than that.
///
/// Between nodes it gives work away by halving load differences (give_share).
class distributing_policy : public policy {
 public:
  bool schedules_handlers() const override { return true; }

  void push(int /*worker*/, runnable handler) override {
    const double cost = handler.cost();
    std::lock_guard guard(queue_lock_);
    queue_.push_back({cost, next_++, std::move(handler)});
    std::push_heap(queue_.begin(), queue_.end(), after);
    queued_cost_.store(queued_cost_.load(std::memory_order_relaxed) + cost,
                       std::memory_order_relaxed);
  }

  runnable pop(int /*worker*/) override {
    std::lock_guard guard(queue_lock_);
    if (queue_.empty()) return {};
    std::pop_heap(queue_.begin(), queue_.end(), after);
    runnable r = std::move(queue_.back().handler);
    const double cost = queue_.back().cost;
    queue_.pop_back();
    forget_cost(cost);
    return r;
  }

 protected:
  /// The cost of the handlers waiting here for a worker (cheap: no look at the objects).
  double queued_cost() const noexcept { return queued_cost_.load(std::memory_order_relaxed); }

  /// Moves `id` to `to`, handing over the handlers of it that wait here.
  bool move(const object_id& id, node_id to) {
    if (!move_object(id, to)) return false;
    std::vector<runnable> leaving;
    {
      std::lock_guard guard(queue_lock_);
      auto keep = std::partition(queue_.begin(), queue_.end(),
                                 [&](const queued& q) { return !(q.handler.object() == id); });
      if (keep == queue_.end()) return true;
      double cost = 0;
      for (auto it = keep; it != queue_.end(); ++it) {
        cost += it->cost;
        leaving.push_back(std::move(it->handler));
      }
      queue_.erase(keep, queue_.end());
      std::make_heap(queue_.begin(), queue_.end(), after);
      forget_cost(cost);
    }
    for (auto& r : leaving) return_handler(std::move(r));
    return true;
  }

  /// Gives `to` (whose load is `their_load`) objects with work that has not started, the
  /// largest first, until about half the difference has moved without overshooting; if no
  /// object fits, the one that narrows the difference most. Serialized per node (one
  /// partner at a time), so each share is computed from this node's current load.
  /// Returns how many objects moved.
  int give_share(node_id to, double their_load) {
    std::lock_guard serving(give_lock_);
    auto objects = local_objects();
    double mine = 0;
    for (const auto& o : objects) mine += o.load();
    const double difference = mine - their_load;
    if (difference <= 0) return 0;
    return give(to, std::move(objects), difference / 2).first;
  }

  /// Gives `to` about `amount` of load: objects with work that has not started, without
  /// going over; if none fits, the one closest to `amount` below twice it. Returns how
  /// many objects moved and their load. Call with give_lock_ held.
  ///
  /// `sample`: first a slice of every size, in proportion (`amount` of 208 units of 32
  /// heavy and 128 light objects gives 8 heavy and 32 light for 52), then the largest
  /// that fit. A share of only the largest objects would leave the taker with work it
  /// cannot spread over its workers (20 heavy units of 2.5 on 4 workers are 12.5 each
  /// before any other). Otherwise the largest first.
  std::pair<int, double> give(node_id to, std::vector<object_info> objects, double amount,
                              bool sample = false) {
    std::sort(objects.begin(), objects.end(), [](const object_info& a, const object_info& b) {
      return movable_load(a) > movable_load(b);
    });
    double left = amount;
    int count = 0;
    std::vector<bool> taken(objects.size(), false);
    const auto take = [&](std::size_t i) {
      if (!move(objects[i].id, to)) return false;
      taken[i] = true;
      left -= movable_load(objects[i]);
      ++count;
      return true;
    };
    if (sample) {
      double movable = 0;
      for (const auto& o : objects) movable += std::max(0.0, movable_load(o));
      const double fraction = movable > 0 ? std::min(1.0, amount / movable) : 0.0;
      double credit = 0;  // systematic sampling: take one when half its load has accrued
      for (std::size_t i = 0; i < objects.size(); ++i) {
        const double load = movable_load(objects[i]);
        if (load <= 0) break;
        credit += load * fraction;
        if (credit >= load / 2 && load <= left && take(i)) credit -= load;
      }
    }
    for (std::size_t i = 0; i < objects.size(); ++i) {
      const double load = movable_load(objects[i]);
      if (load <= 0) break;
      if (!taken[i] && load <= left) (void)take(i);
    }
    if (count > 0) return {count, amount - left};
    // Every object is larger than `amount`: the one whose move leaves the giver and the
    // taker closest, if it brings them closer at all (load < 2 amount).
    const object_info* best = nullptr;
    for (const auto& o : objects) {
      const double load = movable_load(o);
      if (load <= 0 || load >= 2 * amount) continue;
      if (!best || std::abs(amount - load) < std::abs(amount - movable_load(*best))) best = &o;
    }
    if (best && move(best->id, to)) return {1, movable_load(*best)};
    return {0, 0.0};
  }

  std::mutex give_lock_;  ///< one partner at a time

 private:
  struct queued {
    double cost;
    std::uint64_t order;
    runnable handler;
  };
  /// Heap order: the largest cost on top, then the earliest.
  static bool after(const queued& a, const queued& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.order > b.order;
  }

  /// With queue_lock_ held, after removing handlers of total `cost` (an empty heap resets
  /// the sum, so that rounding never accumulates).
  void forget_cost(double cost) {
    const double left = queued_cost_.load(std::memory_order_relaxed) - cost;
    queued_cost_.store(queue_.empty() ? 0.0 : std::max(0.0, left), std::memory_order_relaxed);
  }

  std::mutex queue_lock_;
  std::vector<queued> queue_;
  std::atomic<double> queued_cost_{0};
  std::uint64_t next_ = 0;
};

// ---- none / work_stealing ------------------------------------------------------------------

class passive final : public policy {};

// ---- diffusion -------------------------------------------------------------------------------

/// Each period a node asks its neighbours for their loads and, if the most loaded one has
/// more, asks it for work: when its own load is below the threshold (PREMA's rule: it is
/// running dry), or when the difference exceeds the tolerance (so that work spreads early,
/// while it can still be ordered well). The neighbour gives half the difference. One
/// partner at a time on each side; neighbours are redrawn at random when none has work.
class diffusion final : public distributing_policy {
 public:
  explicit diffusion(const config& c)
      : threshold_(c.of<policy_settings>().threshold),
        tolerance_(c.of<policy_settings>().tolerance),
        size_(c.of<policy_settings>().neighbors) {}

  void balance() override {
    const node_id nodes = roam::num_nodes(), me = roam::this_node();
    if (nodes < 2) return;
    std::vector<node_id> ask;
    {
      std::lock_guard guard(lock_);
      if (asking_) return;  // one partner at a time
      // A node with work queued looks around every few periods only, one running dry every
      // period; both less often after rounds that found nothing to do, so that a balanced
      // (or idle) machine costs little balancing.
      const unsigned every = queued_cost() >= threshold_ ? busy_every : 1;
      if (++skipped_ < (every << calm_)) return;
      skipped_ = 0;
      asking_ = true;
      if (neighbors_.empty()) {
        rng_.seed(0x5eed + 7919 * me);  // distinct per node, the same from run to run
        pick_neighbors(me, nodes);
      }
      best_ = {me, -1.0};
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
    const bool given = this_policy_as<diffusion>().give_share(from, their_load) > 0;
    send_control(from, &diffusion::on_work_reply, roam::this_node(), given);
  }
  static void on_work_reply(node_id from, bool given) {
    this_policy_as<diffusion>().work_reply(from, given);
  }

  void load_reply(node_id from, double load) {
    std::pair<node_id, double> best;
    {
      std::lock_guard guard(lock_);
      if (load > best_.second) best_ = {from, load};
      if (--awaiting_ > 0) return;
      best = best_;
    }
    const double mine = local_load();
    const bool dry = mine < threshold_;
    if (dry && best.second <= threshold_) {
      // Nobody around has work: look elsewhere next time.
      std::lock_guard guard(lock_);
      pick_neighbors(roam::this_node(), roam::num_nodes());
      calm_down();
      asking_ = false;
      return;
    }
    const double difference = best.second - mine;
    if (difference <= 0 || (!dry && difference <= tolerance_ * best.second)) {
      // Balanced with the neighbours: once that has lasted, look at another node now and
      // then (the others may not count this node as a neighbour; imbalance elsewhere
      // would stay unseen).
      std::lock_guard guard(lock_);
      if (calm_ == max_calm) replace_neighbor(neighbors_[rng_() % neighbors_.size()]);
      calm_down();
      asking_ = false;
      return;
    }
    {
      std::lock_guard guard(lock_);
      calm_ = 0;
      skipped_ = busy_every << max_calm;  // imbalance: look again next period
    }
    send_control(best.first, &diffusion::on_work_request, roam::this_node(), mine);
  }

  void work_reply(node_id from, bool given) {
    const bool dry = local_load() < threshold_;
    std::lock_guard guard(lock_);
    asking_ = false;
    if (!given && dry) replace_neighbor(from);
  }

  void calm_down() { calm_ = std::min(calm_ + 1, max_calm); }

  // Neighbours are drawn by rejection, in O(size²) whatever the number of nodes: listing
  // every other node cost O(nodes) per draw, and at a thousand nodes idle nodes redraw
  // every few periods. Only when the neighbourhood is at least half the other nodes
  // (so the job is small) are the candidates listed.
  void pick_neighbors(node_id me, node_id nodes) {
    neighbors_.clear();
    const std::size_t others = nodes - 1;
    const std::size_t want = std::min<std::size_t>(size_, others);
    if (2 * want >= others) {
      for (node_id k = 0; k < nodes; ++k)
        if (k != me) neighbors_.push_back(k);
      std::shuffle(neighbors_.begin(), neighbors_.end(), rng_);
      neighbors_.resize(want);
      return;
    }
    while (neighbors_.size() < want) neighbors_.push_back(draw_other(me, nodes));
  }
  void replace_neighbor(node_id gone) {
    const node_id nodes = roam::num_nodes(), me = roam::this_node();
    auto it = std::find(neighbors_.begin(), neighbors_.end(), gone);
    if (it == neighbors_.end()) return;
    const std::size_t others = nodes - 1;
    if (neighbors_.size() >= others) return;  // every other node is a neighbour already
    if (2 * neighbors_.size() >= others) {
      std::vector<node_id> candidates;
      for (node_id k = 0; k < nodes; ++k)
        if (k != me && std::find(neighbors_.begin(), neighbors_.end(), k) == neighbors_.end())
          candidates.push_back(k);
      *it = candidates[rng_() % candidates.size()];
      return;
    }
    *it = draw_other(me, nodes);
  }
  /// A node other than `me` and the current neighbours. Fewer than half the other nodes
  /// are excluded, so this takes under two draws on average.
  node_id draw_other(node_id me, node_id nodes) {
    for (;;) {
      const auto k = static_cast<node_id>(rng_() % nodes);
      if (k != me && std::find(neighbors_.begin(), neighbors_.end(), k) == neighbors_.end())
        return k;
    }
  }

  const double threshold_;
  const double tolerance_;
  const std::size_t size_;
  std::mutex lock_;
  std::mt19937 rng_;
  std::vector<node_id> neighbors_;
  std::pair<node_id, double> best_;  // the most loaded neighbour that answered this round
  std::size_t awaiting_ = 0;
  bool asking_ = false;
  static constexpr unsigned busy_every = 8;  // periods between rounds of a busy node
  static constexpr unsigned max_calm = 2;    // at most every 32nd when balanced
  unsigned calm_ = 0;
  unsigned skipped_ = busy_every << max_calm;  // the first round at once
};

// ---- master_worker ---------------------------------------------------------------------------

/// Work flows from the master to the workers, never between workers (PREMA's Fig. 5): for
/// work born on the master. A worker asks its server (the master, or in a job of more than
/// 64 nodes its group's first node: master_groups) when it runs dry (load below the
/// threshold) or when the server, at its last answer, had more than the worker by the
/// tolerance. A group's server asks the master in the same way for its whole group (its
/// load and its workers' as it last heard them, against the threshold and average of as
/// many nodes), and hands on what it gets. A server gives each requester its share: up to
/// what brings the requester to the average of the nodes the server covers, never below
/// that average itself. Its estimate of the average uses every requester's load at its last
/// request plus what it was given since. A worker that got nothing waits 2, 4, ... 32
/// periods before asking again, so that a server with nothing to give is not asked by every
/// worker every period; a worker that is neither dry nor behind asks every 32 periods, to
/// learn its server's load.
class master_worker final : public distributing_policy {
 public:
  explicit master_worker(const config& c)
      : master_(c.of<policy_settings>().master),
        threshold_(c.of<policy_settings>().threshold),
        tolerance_(c.of<policy_settings>().tolerance) {}

  void balance() override {
    const node_id nodes = roam::num_nodes(), me = roam::this_node();
    if (master_ >= nodes || nodes < 2) return;
    const master_groups layout(nodes, master_);
    if (me == master_ || layout.leads(me)) serve_waiting(layout);
    if (me == master_) return;
    const double size = layout.represented(me);
    const double load = layout.leads(me) ? group_load() : local_load();
    {
      std::lock_guard guard(lock_);
      if (asking_) return;  // one request at a time
      const bool dry = load < threshold_ * size;
      const bool behind = !heard_ || master_load_ - load / size > tolerance_ * master_load_;
      // Neither: ask now and then all the same, since the server's load (and its view of
      // this node's) may have changed since its last answer.
      // After a gift: a dry node waits 2 periods (its gift may be on its way), others the
      // whole settling time.
      if (settle_ > 0) --settle_;
      if (settle_ > (dry ? settle_periods - 2 : 0)) return;
      const unsigned every = dry || behind ? 1u << calm_ : 1u << max_calm;
      if (++skipped_ < every) return;
      skipped_ = 0;
      asking_ = true;
    }
    send_control(layout.up(me), &master_worker::on_request, me, load);
  }

 private:
  static void on_request(node_id from, double their_load) {
    const auto [given, left] = this_policy_as<master_worker>().serve(from, their_load);
    send_control(from, &master_worker::on_answer, given, left);
  }
  static void on_answer(bool given, double master_load) {
    this_policy_as<master_worker>().answered(given, master_load);
  }

  /// A group's server: its own load and its workers' as it last heard them.
  double group_load() {
    const double mine = local_load();
    std::lock_guard serving(give_lock_);
    return total_with(mine);
  }
  /// `mine` plus what the requesters said they had, with what they were given since. Call
  /// with give_lock_ held.
  double total_with(double mine) const {
    double total = mine;
    for (const auto& [requester, load] : known_) total += load;
    return total;
  }
  /// The average load of the nodes this server covers, its own being `mine` (nodes not
  /// heard from count as idle). Call with give_lock_ held.
  double covered_average(double mine, const master_groups& layout) const {
    return total_with(mine) / layout.covered(roam::this_node());
  }

  /// On a server: gives `from` its share. Returns whether anything moved and the server's
  /// load after.
  std::pair<bool, double> serve(node_id from, double their_load) {
    std::lock_guard serving(give_lock_);
    auto objects = local_objects();
    double mine = 0;
    for (const auto& o : objects) mine += o.load();
    const master_groups layout(roam::num_nodes(), master_);
    // Every requester's load as this server last heard it: one number per node it serves
    // (at most about 2√P in a grouped job; nodes not heard from count as idle).
    known_[from] = their_load;
    const double average = covered_average(mine, layout);
    const double size = layout.represented(from);
    const double share = std::min(mine - average, size * average - their_load);
    const auto [count, moved] =
        share > 0 ? give(from, std::move(objects), share, true) : std::pair{0, 0.0};
    known_[from] += moved;
    // A dry worker that got nothing waits on the server's list (PREMA's m_waiting): it is
    // served as soon as the server has work, not when its own back-off lets it ask.
    if (count == 0 && their_load < threshold_ * size &&
        std::find(waiting_.begin(), waiting_.end(), from) == waiting_.end())
      waiting_.push_back(from);
    return {count > 0, mine - moved};
  }

  /// On a server, each period: invites the waiting workers it now has work for to ask
  /// again (with their load of now: the one it heard may be old). A worker it still
  /// cannot serve stays listed, uninvited, so that it keeps its back-off.
  void serve_waiting(const master_groups& layout) {
    std::vector<node_id> invited;
    {
      std::lock_guard serving(give_lock_);
      if (waiting_.empty()) return;
      double mine = 0, smallest = 0;
      for (const auto& o : local_objects()) {
        mine += o.load();
        const double load = movable_load(o);
        if (load > 0 && (smallest == 0 || load < smallest)) smallest = load;
      }
      if (smallest == 0) return;
      const double average = covered_average(mine, layout);
      // In the order they came, while the server's surplus lasts; give() moves an object
      // only below twice the share.
      double spare = mine - average;
      std::vector<node_id> still;
      for (node_id w : waiting_) {
        const double share = std::min(spare, layout.represented(w) * average - known_[w]);
        if (share > 0 && smallest < 2 * share) {
          invited.push_back(w);
          spare -= share;
        } else {
          still.push_back(w);
        }
      }
      waiting_.swap(still);
    }
    for (node_id w : invited) send_control(w, &master_worker::on_invite);
  }

  static void on_invite() { this_policy_as<master_worker>().invited(); }
  void invited() {
    std::lock_guard guard(lock_);
    heard_ = false;  // ask at the next period, whatever the load
    skipped_ = 1u << max_calm;
  }

  void answered(bool given, double master_load) {
    {
      std::lock_guard guard(lock_);
      asking_ = false;
      heard_ = true;
      master_load_ = master_load;
      calm_ = given ? 0 : std::min(calm_ + 1, max_calm);
      // What was given may still be on its way (an object leaves when its running handlers
      // end): until it lands this node's load looks short of it, and asking again at once
      // would be answered with the same work twice.
      if (given) settle_ = settle_periods;
    }
    const master_groups layout(roam::num_nodes(), master_);
    if (given && layout.leads(roam::this_node())) list_behind(layout);
  }

  /// A group's server that was given work lists its workers below the group's average with
  /// the dry ones, to be invited (serve_waiting): its workers that are not dry heard it had
  /// nothing, before it had any, and would otherwise ask again only every 32 periods.
  void list_behind(const master_groups& layout) {
    const double mine = local_load();
    std::lock_guard serving(give_lock_);
    const double average = covered_average(mine, layout);
    for (const auto& [worker, load] : known_)
      if (average - load > tolerance_ * average &&
          std::find(waiting_.begin(), waiting_.end(), worker) == waiting_.end())
        waiting_.push_back(worker);
  }

  const node_id master_;
  const double threshold_;
  const double tolerance_;
  std::mutex lock_;
  bool asking_ = false;
  bool heard_ = false;                     // an answer came: master_load_ is known
  double master_load_ = 0;                 // the server's load at its last answer
  unsigned calm_ = 0;                      // answers in a row that gave nothing (at most max_calm)
  unsigned skipped_ = 0;                   // periods since the last request
  unsigned settle_ = 0;                    // periods left of waiting after a gift (see balance())
  static constexpr unsigned max_calm = 5;  // at most every 32nd period
  static constexpr unsigned settle_periods = 16;
  std::map<node_id, double> known_;  // a server's view of its requesters' loads
  std::vector<node_id> waiting_;     // dry requesters it had nothing for (each at most once)
};

// ---- greedy_refine ---------------------------------------------------------------------------

/// Each period node 0 gathers every object's load and every node's worker count, and moves
/// the objects refine_plan() chooses (after Charm++'s GreedyRefine: greedy placement that
/// keeps objects where they are when that costs nothing): for iterative applications,
/// whose objects' loads persist (report them with load()).
///
/// The request goes down gather_tree, each node's report up it merged with its subtree's,
/// and the moves down it again, each node taking its own and passing on those of each
/// child's subtree: no node receives more than fan-out + 2 messages of a round (a request,
/// a report per child, its moves) or sends more than 2 × fan-out + 1. The plan is
/// made at node 0, which holds every report (that is what a central plan needs: one entry
/// per object and per node). A node's next request follows the moves of the round before
/// along the same path (control messages from one node to another run in order), so an
/// object it still lists where it was is one whose move did not happen.
class greedy_refine final : public distributing_policy {
 public:
  explicit greedy_refine(const config& c) : tolerance_(c.of<policy_settings>().tolerance) {}

  void balance() override {
    if (roam::this_node() != 0 || roam::num_nodes() < 2) return;
    {
      std::lock_guard guard(lock_);
      if (round_active_) return;
      round_active_ = true;
    }
    gather();
  }

 private:
  using report_list = std::vector<std::pair<node_id, node_report>>;

  static void on_request() { this_policy_as<greedy_refine>().gather(); }
  static void on_reports(report_list reports) {
    this_policy_as<greedy_refine>().add_reports(std::move(reports));
  }
  static void on_moves(const std::vector<planned_move>& moves) {
    this_policy_as<greedy_refine>().carry_out(moves);
  }

  /// Asks this node's subtree for its reports and adds its own. The subtree's reports may
  /// come back while the requests still go out (in one process they are delivered on the
  /// sending thread): the node's own report is counted last, so the round cannot end here
  /// before it is in.
  void gather() {
    const gather_tree tree(roam::num_nodes());
    const node_id me = roam::this_node();
    const node_id children = tree.children(me);
    {
      std::lock_guard guard(lock_);
      awaiting_ = children + 1;
      gathered_.clear();
    }
    for (node_id c = 0; c < children; ++c)
      send_control(gather_tree::first_child(me) + c, &greedy_refine::on_request);
    add_reports({{me, own_report()}});
  }

  static node_report own_report() {
    node_report mine;
    mine.workers = local_workers();
    // Every object, idle ones too: node 0 must see a moved object arrive even when its
    // work is done by then (moves_in_flight).
    const auto objects = local_objects();
    mine.objects.reserve(objects.size());
    for (const auto& o : objects) {
      const double load = std::isfinite(o.load()) ? std::max(0.0, o.load()) : 0.0;
      mine.objects.push_back({o.id, load, std::min(load, movable_load(o))});
    }
    return mine;
  }

  /// Adds a child's subtree reports (or this node's own); once all are in, sends them up,
  /// or at node 0 plans the round.
  void add_reports(report_list reports) {
    report_list complete;
    {
      std::lock_guard guard(lock_);
      for (auto& r : reports) gathered_.push_back(std::move(r));
      if (--awaiting_ > 0) return;
      complete = std::move(gathered_);
      gathered_.clear();
    }
    const node_id me = roam::this_node();
    if (me != 0) {
      send_control(gather_tree::parent(me), &greedy_refine::on_reports, std::move(complete));
      return;
    }
    plan(std::move(complete));
  }

  void plan(report_list&& reports) {
    std::vector<node_report> all(roam::num_nodes());
    for (auto& [node, report] : reports)
      if (node < all.size()) all[node] = std::move(report);
    in_flight_.correct(all);
    const auto moves = refine_plan(all, tolerance_);
    in_flight_.ordered(moves, all);
    carry_out(moves);
    std::lock_guard guard(lock_);
    round_active_ = false;
  }

  /// Moves this node's objects as planned and passes the others' moves on, one message per
  /// child whose subtree has some.
  void carry_out(const std::vector<planned_move>& moves) {
    const gather_tree tree(roam::num_nodes());
    const node_id me = roam::this_node();
    std::vector<std::vector<planned_move>> for_child(tree.children(me));
    for (const auto& m : moves) {
      if (m.from == me) {
        (void)move(m.id, m.to);
      } else if (gather_tree::in_subtree(me, m.from)) {
        for_child[gather_tree::child_toward(me, m.from) - gather_tree::first_child(me)].push_back(
            m);
      }
    }
    for (node_id c = 0; c < for_child.size(); ++c)
      if (!for_child[c].empty())
        send_control(gather_tree::first_child(me) + c, &greedy_refine::on_moves,
                     std::move(for_child[c]));
  }

  const double tolerance_;
  std::mutex lock_;
  bool round_active_ = false;  // node 0: a round is under way
  node_id awaiting_ = 0;       // subtree reports still to come, this node's own included
  report_list gathered_;
  moves_in_flight in_flight_;  // node 0, used by the last report's thread, one round at a time
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
