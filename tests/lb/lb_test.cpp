// Load balancing: each built-in policy moves work from a loaded node to idle ones, no
// handler is lost or run twice while objects move, and a custom policy written against the
// public interface (with its own intra-node scheduling) works. Runs on 4 virtual nodes and
// under mpiexec with 2-4 ranks.
#include <roam/roam.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

// A unit of work that occupies its worker (blocking sleep), like a long computation.
struct unit {
  int runs = 0;
  roam::node_id ran_on = 0;
  double weight = 1;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(runs, ran_on, weight);
  }
  void work(int milliseconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
    ++runs;
    ran_on = roam::this_node();
  }
  double load() const { return weight; }  // used by greedy_refine
};

struct outcome {
  int units = 0, ran_once = 0;
  std::set<roam::node_id> nodes;
};

/// `loaded` creates `count` units and gives each one piece of work; returns where they ran.
outcome run_imbalanced(const std::string& policy, roam::node_id loaded, int count, int ms,
                       bool balancing = true) {
  roam::config cfg = roam::config::from_environment();
  cfg.lb = policy;
  cfg.threads = 2;
  // Under mpi, requests reach a node whose workers all run long handlers only through a
  // communication thread (the in-process transport delivers on the sender's thread).
  cfg.comm_thread = true;
  cfg.lb_period_us = 500;
  cfg.lb_threshold = 1;
  outcome result;
  EXPECT_EQ(roam::run(cfg,
                      [&] {
                        if (!balancing) roam::lb::enable_dist_balancing(false);
                        roam::barrier();
                        std::vector<roam::mobile_ptr<unit>> units;
                        if (roam::this_node() == loaded % roam::num_nodes())
                          for (int i = 0; i < count; ++i) {
                            units.push_back(roam::make_mobile<unit>());
                            units.back().send<&unit::work>(ms);
                          }
                        roam::barrier();
                        if (roam::this_node() == 0) roam::wait_quiescence();
                        roam::barrier();
                        units = roam::broadcast_value(units, loaded % roam::num_nodes());
                        if (roam::this_node() == 0)
                          for (auto& u : units) {
                            auto state = u.call([](const unit& x) { return x; }).get();
                            ++result.units;
                            result.ran_once += state.runs == 1;
                            result.nodes.insert(state.ran_on);
                          }
                        roam::barrier();
                      }),
            0);
  return result;
}

void expect_spread(const std::string& policy, roam::node_id loaded) {
  const int count = 24;
  outcome o = run_imbalanced(policy, loaded, count, 20);
  if (roam::config::from_environment().transport == roam::transport_kind::mpi && o.units == 0)
    return;  // the checks ran on rank 0
  EXPECT_EQ(o.units, count);
  EXPECT_EQ(o.ran_once, count) << "a unit ran twice or not at all";
  EXPECT_GT(o.nodes.size(), 1u) << policy << " left all the work on node " << loaded;
}

}  // namespace

TEST(LoadBalancing, NoneKeepsWorkWhereItIs) {
  outcome o = run_imbalanced("none", 0, 8, 5);
  if (o.units == 0) return;  // another rank
  EXPECT_EQ(o.ran_once, 8);
  EXPECT_EQ(o.nodes, std::set<roam::node_id>{0});
}

TEST(LoadBalancing, DiffusionSpreadsWork) { expect_spread("diffusion", 0); }

TEST(LoadBalancing, DisabledBalancingKeepsWorkWhereItIs) {
  outcome o = run_imbalanced("diffusion", 0, 8, 5, false);
  if (o.units == 0) return;  // another rank
  EXPECT_EQ(o.ran_once, 8);
  EXPECT_EQ(o.nodes, std::set<roam::node_id>{0});
}
TEST(LoadBalancing, MasterWorkerSpreadsWork) { expect_spread("master_worker", 0); }
TEST(LoadBalancing, GreedyRefineSpreadsWork) { expect_spread("greedy_refine", 1); }

// ---- a custom policy, written only against the public interface -----------------------------

// Intra-node: last in, first out (a stack of runnable handlers). Distributed: an idle node
// asks the next node for one object.
class stack_policy final : public roam::lb::policy {
 public:
  bool schedules_handlers() const override { return true; }
  void push(int, roam::lb::runnable handler) override {
    std::lock_guard guard(lock_);
    stack_.push_back(std::move(handler));
    pushed.fetch_add(1);
  }
  roam::lb::runnable pop(int) override {
    std::lock_guard guard(lock_);
    if (stack_.empty()) return {};
    roam::lb::runnable r = std::move(stack_.back());
    stack_.pop_back();
    return r;
  }
  void notify(const roam::lb::object_id&) override { notified.fetch_add(1); }
  bool wants_run_times() const override { return true; }
  void balance() override {
    if (roam::num_nodes() < 2 || roam::lb::local_load() > 0) return;
    roam::lb::send_control((roam::this_node() + 1) % roam::num_nodes(), &stack_policy::give,
                           roam::this_node());
  }
  static void give(roam::node_id to) {
    for (const auto& o : roam::lb::local_objects())
      if (o.waiting() > 0 && roam::lb::move_object(o.id, to)) return;
  }
  static inline std::atomic<long> pushed{0};
  static inline std::atomic<long> notified{0};

 private:
  std::mutex lock_;
  std::deque<roam::lb::runnable> stack_;
};

TEST(LoadBalancing, CustomPolicyRunsEveryHandlerOnce) {
  roam::lb::register_policy("test_stack",
                            [](const roam::config&) { return std::make_unique<stack_policy>(); });
  EXPECT_THROW(
      roam::lb::register_policy(
          "diffusion", [](const roam::config&) { return std::make_unique<stack_policy>(); }),
      roam::usage_error);
  stack_policy::pushed = 0;
  stack_policy::notified = 0;
  const int count = 16;
  outcome o = run_imbalanced("test_stack", 0, count, 10);
  if (o.units == 0) return;
  EXPECT_EQ(o.ran_once, count);
  EXPECT_GT(stack_policy::pushed.load(), 0);
  EXPECT_GT(stack_policy::notified.load(), 0);
}

TEST(LoadBalancing, RunTimesAreMeasuredWhenThePolicyAsks) {
  roam::lb::register_policy("test_timed", [](const roam::config&) {
    return std::make_unique<stack_policy>();  // wants_run_times()
  });
  roam::config cfg = roam::config::from_environment();
  cfg.lb = "test_timed";
  EXPECT_EQ(roam::run(cfg,
                      [] {
                        roam::lb::enable_dist_balancing(false);  // the object stays on node 0
                        roam::barrier();
                        if (roam::this_node() == 0) {
                          auto p = roam::make_mobile<unit>();
                          p.call<&unit::work>(10).get();
                          // The reply leaves before the handler's accounting: wait for it.
                          auto objects = roam::lb::local_objects();
                          const auto deadline = std::chrono::steady_clock::now() + 10s;
                          while (objects.size() == 1 && objects[0].mean_run_us == 0 &&
                                 std::chrono::steady_clock::now() < deadline) {
                            std::this_thread::sleep_for(1ms);
                            objects = roam::lb::local_objects();
                          }
                          ASSERT_EQ(objects.size(), 1u);
                          EXPECT_GE(objects[0].mean_run_us, 5000.0);
                        }
                        roam::barrier();
                      }),
            0);
}

TEST(LoadBalancing, UnknownPolicyIsRejected) {
  roam::config cfg = roam::config::from_environment();
  cfg.lb = "no_such_policy";
  EXPECT_THROW(roam::run(cfg, [] {}), roam::config_error);
}
