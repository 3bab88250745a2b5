// The load balancer of one node: runs its policy. It plugs into the node's workers (ticks,
// idle wake-ups, a work source for policies that schedule handlers) and into the node's
// object protocol (load notifications, granted handlers), and calls balance() as a task.
#include "builtin_policies.hpp"

#include <roam/lb/policy.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

namespace roam::lb {
namespace {

using clock_type = std::chrono::steady_clock;
using factory = std::function<std::unique_ptr<policy>(const config&)>;

struct policy_registry {
  std::mutex lock;
  std::map<std::string, factory> factories;
  std::map<std::string, bool> builtin;
};

policy_registry& registry() {
  static policy_registry r;
  static const bool builtins_added = [] {
    for (auto& [name, make] : builtin::builtin_policies()) {
      r.factories.emplace(name, make);
      r.builtin.emplace(name, true);
    }
    return true;
  }();
  (void)builtins_added;
  return r;
}

/// One node's balancer.
struct node_balancer {
  /// The balance() task: a work item that is part of the balancer, so nothing is left to
  /// free when the node stops with it queued.
  struct balance_task : detail::work_item {
    node_balancer* owner = nullptr;
  };

  explicit node_balancer(detail::node_runtime& node) : n(node) {
    const config& cfg = detail::settings_of(node);
    factory make;
    {
      auto& r = registry();
      std::lock_guard guard(r.lock);
      auto it = r.factories.find(cfg.lb);
      if (it == r.factories.end()) {
        std::string known;
        for (auto& [name, f] : r.factories) known += (known.empty() ? "" : ", ") + name;
        throw config_error("roam: unknown load-balancing policy '" + cfg.lb +
                           "' (--roam-lb / ROAM_LB); known: " + known);
      }
      make = it->second;
    }
    the_policy = make(cfg);
    if (!the_policy) throw config_error("roam: the factory of policy '" + cfg.lb + "' made none");
    passive = builtin::is_passive(*the_policy);
    period = std::chrono::microseconds(cfg.lb_period_us);
    task.owner = this;
    task.execute = [](detail::work_item* w) {
      static_cast<balance_task*>(w)->owner->run_balance();
    };
    if (passive) return;  // work stealing only: nothing to plug in

    object_hooks.context = this;
    object_hooks.measure_run_time = the_policy->wants_run_times();
    object_hooks.notify = [](void* self, const object_id& id) {
      static_cast<node_balancer*>(self)->the_policy->notify(id);
    };
    scheduling.context = this;
    scheduling.tick = [](void* self, bool idle) { static_cast<node_balancer*>(self)->tick(idle); };
    scheduling.idle_wakeup = period;
    if (the_policy->schedules_handlers()) {
      object_hooks.push = [](void* self, detail::message_ptr m, const object_id& id) {
        auto* b = static_cast<node_balancer*>(self);
        // Arrivals may be admitted on another node's thread (in-process delivery).
        const int worker = detail::current_node() == &b->n ? detail::worker_index() : -1;
        b->the_policy->push(worker, runnable(std::move(m), id));
        detail::wake_a_worker(b->n);
      };
      scheduling.take = [](void* self, int worker) -> detail::work_item* {
        runnable r = static_cast<node_balancer*>(self)->the_policy->pop(worker);
        return r ? detail::as_work_item(r.release()) : nullptr;
      };
    }
    detail::set_object_hooks(n, &object_hooks);
    detail::set_scheduling_hooks(n, scheduling);
  }

  void tick(bool /*idle*/) {
    if (!enabled.load(std::memory_order_relaxed)) return;
    const auto now = clock_type::now().time_since_epoch().count();
    if (now - last.load(std::memory_order_relaxed) <
        std::chrono::duration_cast<clock_type::duration>(period).count())
      return;
    if (balancing.exchange(true, std::memory_order_acq_rel)) return;
    last.store(now, std::memory_order_relaxed);
    detail::queue_work(n, &task);
  }

  void run_balance() {
    const auto started = clock_type::now();
    try {
      the_policy->balance();
    } catch (const std::exception& e) {
      detail::fatal(std::string("the load-balancing policy's balance() threw ") +
                    detail::type_name_of(typeid(e)) + ": " + e.what());
    }
    const auto finished = clock_type::now();
    balance_ns.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(finished - started).count(),
        std::memory_order_relaxed);
    balance_calls.fetch_add(1, std::memory_order_relaxed);
    last.store(finished.time_since_epoch().count(), std::memory_order_relaxed);
    balancing.store(false, std::memory_order_release);
  }

  detail::node_runtime& n;
  std::unique_ptr<policy> the_policy;
  bool passive = true;
  std::chrono::microseconds period{1000};
  roam::detail::object_hooks object_hooks;
  detail::scheduling_hooks scheduling;
  balance_task task;
  std::atomic<bool> enabled{true};
  std::atomic<bool> balancing{false};
  std::atomic<clock_type::rep> last{0};
  std::atomic<std::int64_t> balance_ns{0};
  std::atomic<std::uint64_t> balance_calls{0};
  std::atomic<std::uint64_t> objects_moved{0};
};

const bool extension_registered = detail::register_node_extension(
    detail::extension_load_balancer,
    {[](detail::node_runtime& n) -> void* { return new node_balancer(n); },
     [](void* state) noexcept { delete static_cast<node_balancer*>(state); }});

node_balancer& balancer_of_caller(const char* caller) {
  (void)extension_registered;
  auto& n = detail::require_node(caller);
  return *static_cast<node_balancer*>(detail::extension_state(n, detail::extension_load_balancer));
}

}  // namespace

namespace internal {
bool link_load_balancer() noexcept { return extension_registered; }
}  // namespace internal

double runnable::cost() const noexcept {
  return message_ ? detail::read_object_cost(*message_) : 0.0;
}

void register_policy(const std::string& name,
                     std::function<std::unique_ptr<policy>(const config&)> make) {
  if (name.empty() || !make) throw usage_error("roam::lb::register_policy: empty name or factory");
  auto& r = registry();
  std::lock_guard guard(r.lock);
  if (r.builtin.count(name))
    throw usage_error("roam::lb::register_policy: '" + name + "' is a built-in policy");
  r.factories[name] = std::move(make);
}

std::vector<std::string> policy_names() {
  auto& r = registry();
  std::lock_guard guard(r.lock);
  std::vector<std::string> names;
  for (auto& [name, f] : r.factories) names.push_back(name);
  return names;
}

policy& this_policy() { return *balancer_of_caller("roam::lb::this_policy").the_policy; }

std::vector<object_info> local_objects() {
  return detail::resident_objects(detail::require_node("roam::lb::local_objects"));
}

double local_load() {
  double total = 0;
  for (const auto& o : local_objects()) total += o.load();
  return total;
}

bool move_object(const object_id& id, node_id dest) {
  auto& n = detail::require_node("roam::lb::move_object");
  const bool moved = detail::migrate_resident(n, id, dest);
  if (moved)
    static_cast<node_balancer*>(detail::extension_state(n, detail::extension_load_balancer))
        ->objects_moved.fetch_add(1, std::memory_order_relaxed);
  return moved;
}

statistics local_statistics() {
  auto& b = balancer_of_caller("roam::lb::local_statistics");
  statistics s;
  s.balance_seconds = static_cast<double>(b.balance_ns.load()) * 1e-9;
  s.balance_calls = b.balance_calls.load();
  s.objects_moved = b.objects_moved.load();
  return s;
}

void enable_dist_balancing(bool on) {
  balancer_of_caller("roam::lb::enable_dist_balancing").enabled.store(on);
}

const config& settings() { return detail::settings_of(detail::require_node("roam::lb::settings")); }

}  // namespace roam::lb
