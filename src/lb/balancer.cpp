// The load balancer of one node: runs its policy. It plugs into the node's workers (idle
// notices, a work source for policies that schedule handlers) and into the node's object
// protocol (load notifications, granted handlers), and calls balance() on its own thread.
#include "builtin_policies.hpp"
#include "load_statistics.hpp"

#include <roam/lb/policy.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace roam::lb {
namespace {

using clock_type = std::chrono::steady_clock;

/// The calling thread's processor time.
std::int64_t thread_cpu_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

/// Set while the thread's time is being accounted as balancing (no double counting).
thread_local bool tl_accounting = false;
using factory = std::function<std::unique_ptr<policy>(const config&)>;

struct policy_registry {
  std::mutex lock;
  std::map<std::string, factory> factories;
  std::set<std::string> builtin;
};

policy_registry& registry() {
  static policy_registry r;
  static const bool builtins_added = [] {
    for (auto& [name, make] : builtin::builtin_policies()) {
      r.factories.emplace(name, make);
      r.builtin.insert(name);
    }
    return true;
  }();
  (void)builtins_added;
  return r;
}

/// One node's balancer. balance() runs on the balancer's own thread, every period and soon
/// after a worker runs out of work, so that a node whose workers all run long handlers
/// still balances (a coordinator, a node that sheds work) and a policy may wait there
/// without holding a worker. Passive policies (work stealing only) get no thread.
struct node_balancer {
  explicit node_balancer(detail::node_runtime& node) : n(node) {
    const config& cfg = detail::settings_of(node);
    const policy_settings& chosen = cfg.of<policy_settings>();
    factory make;
    {
      auto& r = registry();
      std::lock_guard guard(r.lock);
      auto it = r.factories.find(chosen.policy);
      if (it == r.factories.end()) {
        std::string known;
        for (auto& [name, f] : r.factories) known += (known.empty() ? "" : ", ") + name;
        throw config_error("unknown load-balancing policy '" + chosen.policy +
                           "' (--roam-lb / ROAM_LB); known: " + known);
      }
      make = it->second;
    }
    the_policy = make(cfg);
    if (!the_policy) throw config_error("the factory of policy '" + chosen.policy + "' made none");
    passive = builtin::is_passive(*the_policy);
    period = std::chrono::microseconds(chosen.period_us);
    // Every policy's objects have their load counted (local_objects(), local_load()).
    install_load_statistics(object_hooks);
    if (passive) {  // work stealing only: nothing else to plug in
      roam::detail::set_object_hooks(n, &object_hooks);
      return;
    }

    object_hooks.context = this;
    object_hooks.measure_run_time = the_policy->wants_run_times();
    object_hooks.notify = [](void* self, const object_id& id) {
      static_cast<node_balancer*>(self)->the_policy->notify(id);
    };
    scheduling.context = this;
    scheduling.idle = [](void* self) { static_cast<node_balancer*>(self)->running_low(); };
    if (the_policy->schedules_handlers()) {
      object_hooks.push = [](void* self, detail::message_ptr m, const object_id& id) {
        auto* b = static_cast<node_balancer*>(self);
        // Arrivals may be admitted on another node's thread (in-process delivery).
        const int worker = detail::current_node() == &b->n ? detail::worker_index() : -1;
        b->the_policy->push(worker, runnable(std::move(m), id));
        b->held.fetch_add(1, std::memory_order_seq_cst);  // before looking for sleepers
        detail::wake_a_worker(b->n);
      };
      scheduling.take = [](void* self, int worker) -> detail::work_item* {
        auto* b = static_cast<node_balancer*>(self);
        runnable r = b->the_policy->pop(worker);
        if (!r) return nullptr;
        b->held.fetch_sub(1, std::memory_order_relaxed);
        return detail::as_work_item(r.release());
      };
      scheduling.has_work = [](void* self) {
        return static_cast<node_balancer*>(self)->held.load(std::memory_order_seq_cst) > 0;
      };
    }
    detail::set_object_hooks(n, &object_hooks);
    detail::set_scheduling_hooks(n, scheduling);
  }

  ~node_balancer() { stop(); }
  node_balancer(const node_balancer&) = delete;
  node_balancer& operator=(const node_balancer&) = delete;

  void start() {
    if (!passive) thread = detail::start_service_thread(n, "roam-lb", [this] { thread_main(); });
  }
  void stop() noexcept {
    {
      std::lock_guard guard(lock);
      stopping = true;
    }
    wake.notify_one();
    if (thread.joinable()) thread.join();
  }

  /// The job is ending (node_extension::quiesce): no more balancing rounds, and control
  /// messages are dropped from now on. Returns once none runs: control handlers are short
  /// and never wait (send_control), so the spin is brief.
  void quiesce() noexcept {
    stop();
    quiesced.store(true);
    while (control_running.load() != 0) std::this_thread::yield();
  }
  /// Counts a control handler in, unless the job is ending (then it is to be dropped).
  /// The count goes up before the flag is read and quiesce() sets the flag before it reads
  /// the count (both sequentially consistent), so no handler slips past quiesce().
  bool enter_control() noexcept {
    control_running.fetch_add(1);
    if (!quiesced.load()) return true;
    control_running.fetch_sub(1);
    return false;
  }
  void leave_control() noexcept { control_running.fetch_sub(1); }

  /// A worker found no work: balance soon (at most every half period from here, since
  /// idle workers call this in their search loop).
  void running_low() {
    const auto now = clock_type::now().time_since_epoch().count();
    const auto spacing = std::chrono::duration_cast<clock_type::duration>(period).count() / 2;
    if (now - last.load(std::memory_order_relaxed) < spacing) return;
    if (poked.exchange(true, std::memory_order_acq_rel)) return;
    last.store(now, std::memory_order_relaxed);
    std::lock_guard guard(lock);
    wake.notify_one();
  }

  void thread_main() {
    std::unique_lock guard(lock);
    auto next = clock_type::now() + period;
    while (!stopping) {
      wake.wait_until(guard, next, [&] { return stopping || poked.load(); });
      if (stopping) break;
      if (!poked.exchange(false) && clock_type::now() < next) continue;
      guard.unlock();
      if (enabled.load(std::memory_order_relaxed)) run_balance();
      guard.lock();
      next = clock_type::now() + period;
    }
  }

  void run_balance() {
    {
      const detail::trace::region_scope traced("load balancing round", detail::id_of(n));
      const internal::overhead_scope accounted(n);
      try {
        the_policy->balance();
      } catch (const std::exception& e) {
        detail::fatal(std::string("the load-balancing policy's balance() threw ") +
                      detail::type_name_of(typeid(e)) + ": " + e.what());
      }
    }
    balance_calls.fetch_add(1, std::memory_order_relaxed);
    if (detail::trace::on()) [[unlikely]] {
      detail::trace::event load;
      load.kind = detail::trace::event_kind::counter;
      load.begin_ns = detail::trace::now_ns();
      load.label = "load";
      load.node = detail::id_of(n);
      load.value = std::bit_cast<std::uint64_t>(detail::resident_load(n));
      detail::trace::record(load);
    }
    last.store(clock_type::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

  detail::node_runtime& n;
  std::unique_ptr<policy> the_policy;
  bool passive = true;
  std::chrono::microseconds period{1000};
  roam::detail::object_hooks object_hooks;
  detail::scheduling_hooks scheduling;
  std::thread thread;
  std::mutex lock;
  std::condition_variable wake;
  bool stopping = false;  // guarded by lock
  std::atomic<bool> poked{false};
  /// Handlers given to the policy's push() and not yet back from pop() or return_handler():
  /// workers do not park while it holds some.
  std::atomic<std::int64_t> held{0};
  std::atomic<bool> enabled{true};
  std::atomic<bool> quiesced{false};              ///< the job is ending: control messages dropped
  std::atomic<std::uint32_t> control_running{0};  ///< control handlers running now
  std::atomic<clock_type::rep> last{0};
  std::atomic<std::int64_t> balance_ns{0};
  std::atomic<std::uint64_t> balance_calls{0};
  std::atomic<std::uint64_t> objects_moved{0};
};

const detail::extension_key balancer_extension = detail::register_node_extension(
    {.name = "load balancing",
     .order = 60,
     .make = [](detail::node_runtime& n) -> void* { return new node_balancer(n); },
     .destroy = [](void* state) noexcept { delete static_cast<node_balancer*>(state); },
     .start = [](void* state) { static_cast<node_balancer*>(state)->start(); },
     .stop = [](void* state) noexcept { static_cast<node_balancer*>(state)->stop(); },
     .quiesce = [](void* state) { static_cast<node_balancer*>(state)->quiesce(); }});

node_balancer& balancer_of(detail::node_runtime& n) {
  return *static_cast<node_balancer*>(detail::extension_state(n, balancer_extension));
}

node_balancer& balancer_of_caller(const char* caller) {
  return balancer_of(detail::require_node(caller));
}

}  // namespace

namespace internal {
// Referencing this function links this file, and with it the registration above.
bool link_load_balancer() noexcept { return true; }

control_scope::control_scope(detail::node_runtime& n) noexcept
    : node_(balancer_of(n).enter_control() ? &n : nullptr) {}

control_scope::~control_scope() {
  if (node_) balancer_of(*node_).leave_control();
}

overhead_scope::overhead_scope(detail::node_runtime& n) noexcept
    : node_(tl_accounting ? nullptr : &n), start_ns_(node_ ? thread_cpu_ns() : 0) {
  if (node_) tl_accounting = true;
}

overhead_scope::~overhead_scope() {
  if (!node_) return;
  tl_accounting = false;
  balancer_of(*node_).balance_ns.fetch_add(thread_cpu_ns() - start_ns_, std::memory_order_relaxed);
}
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

double local_load() { return detail::resident_load(detail::require_node("roam::lb::local_load")); }
unsigned local_workers() {
  return detail::workers_of(detail::require_node("roam::lb::local_workers"));
}

bool move_object(const object_id& id, node_id dest) {
  auto& n = detail::require_node("roam::lb::move_object");
  const bool moved = detail::migrate_resident(n, id, dest);
  if (moved) balancer_of(n).objects_moved.fetch_add(1, std::memory_order_relaxed);
  return moved;
}

void return_handler(runnable handler) {
  if (!handler) return;
  auto& n = detail::require_node("roam::lb::return_handler");
  balancer_of(n).held.fetch_sub(1, std::memory_order_relaxed);
  detail::give_back_granted(n, handler.release());
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
