// roam — implicit load balancing: the policy interface and what policies may use.
//
// Each node runs one policy object (chosen with --roam-lb / ROAM_LB, or registered by the
// application). The runtime calls
// - balance(): distributed balancing, every --roam-lb-period-us and soon after a worker of
//   the node runs out of work; one call at a time per node, on the node's balancing thread
//   (not a worker: it runs while every worker is busy with long handlers). It may send
//   messages, move objects and wait for futures (the wait blocks only that thread). The
//   job's end (once every node's body returned) stops balancing node by node, waiting for
//   a call in progress to return, and drops control messages from then on: balance() must
//   not wait for an answer to a control message.
// - notify(id): an object's load changed (a message for it arrived or finished);
// - push(worker, handler) / pop(worker): intra-node scheduling, only for policies whose
//   schedules_handlers() is true (otherwise the node's own queues with work stealing run
//   the handlers).
//
// Guarantees to policies (PREMA's safety contract):
// - push() sees only handlers that are in order and have their access granted: a policy
//   may run them in any order, on any worker of the node, without breaking per-sender
//   ordering or exclusive access. An object does not leave while the policy holds one of
//   its handlers: move_object() waits until they come back (return_handler(), or pop()),
//   and then they go with it instead of running here.
// - An object's load counts a message from its arrival on the object's node, even while it
//   waits for its turn; handlers waiting for an object move with it.
// - move_object() may be called for several objects at once, to and from any nodes.
// - Policy messages sent with send_control() are not counted by quiescence detection
//   (roam::wait_quiescence), so an idle job whose policies keep asking each other for work
//   still terminates. Moving an object is counted (it carries work).
//
// Threading: notify() and push() run on whichever thread changed the load or granted the
// handler, concurrently with each other and with pop() and balance(): policies synchronize
// their own state.
#pragma once

#include <roam/am/send.hpp>
#include <roam/lb/policy_settings.hpp>
#include <roam/mobile/lifecycle.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace roam::lb {

using object_id = roam::object_id;

/// What a node knows of the load of one of its objects (roam/mobile/object_info.hpp).
using object_info = roam::object_load;

/// A handler ready to run (in order, access granted). Move-only; run it by returning it
/// from pop().
class runnable {
 public:
  runnable() = default;
  /// The handler carried by message `m`, for object `target` (made by the runtime).
  explicit runnable(detail::message_ptr m, object_id target) noexcept
      : message_(std::move(m)), target_(target) {}
  /// False for an empty runnable (default-constructed, moved from or released).
  explicit operator bool() const noexcept { return static_cast<bool>(message_); }
  /// The object the handler runs on.
  const object_id& object() const noexcept { return target_; }
  /// The cost its sender gave it (roam::send_cost; 1 by default).
  double cost() const noexcept;
  /// Takes the handler's message out, leaving this runnable empty (used by the runtime).
  detail::message_ptr release() noexcept { return std::move(message_); }

 private:
  detail::message_ptr message_;
  object_id target_;
};

/// A node's load-balancing policy: the runtime calls balance(), notify(), push() and pop() as
/// described at the top of this file; policies synchronize their own state.
class policy {
 public:
  virtual ~policy() = default;
  /// Distributed balancing (see the file comment).
  virtual void balance() {}
  /// An object's load changed. Keep it short.
  virtual void notify(const object_id& /*id*/) {}
  /// True if this policy schedules runnable handlers itself through push() and pop().
  virtual bool schedules_handlers() const { return false; }
  /// A handler became runnable; `worker` is the calling worker's index (-1: another
  /// thread). Only called when schedules_handlers().
  virtual void push(int /*worker*/, runnable /*handler*/) {}
  /// The next handler for worker `worker` (-1: the node's application thread), or an empty
  /// runnable. Only called when schedules_handlers(). Workers of a node do not park while
  /// its policy holds handlers, so return one when asked if there is any.
  virtual runnable pop(int /*worker*/) { return {}; }
  /// Whether the runtime should measure handler run times (object_info::mean_run_us).
  virtual bool wants_run_times() const { return false; }
};

/// Makes `name` usable with --roam-lb / ROAM_LB: every node calls `make` once when it
/// starts. Call before roam::run. The built-in names cannot be replaced.
void register_policy(const std::string& name,
                     std::function<std::unique_ptr<policy>(const config&)> make);
/// The names --roam-lb accepts now.
std::vector<std::string> policy_names();

// ---- for policies (call from a thread of the node) ----------------------------------------

/// The calling node's policy.
policy& this_policy();
/// The calling node's policy as P (throws roam::usage_error if it is another type).
template <class P>
P& this_policy_as() {
  auto* p = dynamic_cast<P*>(&this_policy());
  if (!p) throw usage_error("roam::lb::this_policy_as: the node runs another policy");
  return *p;
}
/// The objects resident on the calling node with their loads (a snapshot). An object that
/// is leaving (its move waits for its running handlers) is not listed: its load is its
/// destination's.
std::vector<object_info> local_objects();
/// Sum of local_objects()' load().
double local_load();
/// The number of workers that run the calling node's handlers.
unsigned local_workers();
/// Moves a resident object to `dest` ahead of its waiting messages, which go with it (at
/// once, or when its running handlers finish). False if it is not resident here.
/// If the policy holds handlers of the object (received through push(), not yet returned by
/// pop()), the move waits for them: hand them over with return_handler() (or return them
/// from pop(): they give their turn back instead of running).
bool move_object(const object_id& id, node_id dest);
/// Gives a handler received through push() back to the runtime without running it: after
/// move_object() for its object, it goes with the object; otherwise it runs on this node as
/// if pop() had returned it. Call it without holding locks the policy's push() takes.
void return_handler(runnable handler);
/// What the calling node's balancer has done so far in this run.
struct statistics {
  /// Processor time spent balancing: in balance() and in the policy's control handlers
  /// (thread CPU time, so that waiting for a core on a busy machine does not count).
  double balance_seconds = 0;
  std::uint64_t balance_calls = 0;  ///< calls of balance()
  /// move_object() calls that returned true: the object left, or leaves once its running
  /// handlers end (such a move is still refused, the object staying, if by then it no
  /// longer fits in one message).
  std::uint64_t objects_moved = 0;
};
statistics local_statistics();
/// Turns distributed balancing (balance()) on or off on the calling node; on by default.
void enable_dist_balancing(bool on);
/// The settings the job runs with (policy_settings parameterizes the built-in policies).
const config& settings();

namespace internal {
/// Adds the processor time of a scope (a control handler) to the balancing overhead of
/// node `n` (statistics::balance_seconds), unless the thread already accounts for it (a
/// handler delivered in process from inside balance()).
class overhead_scope {
 public:
  explicit overhead_scope(detail::node_runtime& n) noexcept;
  ~overhead_scope();
  overhead_scope(const overhead_scope&) = delete;
  overhead_scope& operator=(const overhead_scope&) = delete;

 private:
  detail::node_runtime* node_;
  std::int64_t start_ns_;
};

/// Counts a control handler as running on node `n`, so that the job's end waits for it;
/// once the end has begun (every body returned), admitted() is false and the message is
/// dropped: a balancing decision then could only start work after the job's last
/// quiescence detection.
class control_scope {
 public:
  explicit control_scope(detail::node_runtime& n) noexcept;
  ~control_scope();
  control_scope(const control_scope&) = delete;
  control_scope& operator=(const control_scope&) = delete;
  [[nodiscard]] bool admitted() const noexcept { return node_ != nullptr; }

 private:
  detail::node_runtime* node_;
};

/// Control handlers run as soon as their message arrives, on the thread that delivers it
/// (another node's thread in one process, the thread that drives MPI otherwise), so that
/// balancing requests are answered even while every worker runs a long handler.
template <class H>
struct control_handler {
  static void invoke(detail::node_runtime& n, detail::message_ptr& m) {
    const control_scope running(n);
    if (!running.admitted()) return;
    const overhead_scope accounted(n);
    detail::am_handler<H>::invoke(n, m);
  }
  static bool admit(detail::node_runtime& n, detail::message_ptr& m) {
    invoke(n, m);
    return true;
  }
  static constexpr std::string_view name = detail::type_name<control_handler>();
  static inline detail::handler_entry entry{
      name, &invoke, ~0u, &admit, nullptr, detail::handler_traits<H>::is_function_pointer};
  static inline const bool registered = detail::handler_registry::add(&entry);
};
}  // namespace internal

/// A message between policies, like roam::send but:
/// - not counted by quiescence detection;
/// - its handler runs as soon as the message arrives, on the thread that delivers it, even
///   while every worker is busy: it must be short and must not wait (no futures, no
///   roam::mutex, no call().get()); it may send messages and move objects.
/// - once the body of roam::run has returned on every node, control messages are dropped
///   on arrival (the job's end stops balancing before its last quiescence detection).
/// Ordering: the control messages from one node to another run in the order they were sent
/// (the transport's per-pair order), which greedy_refine relies on.
template <class F, class... Args>
void send_control(node_id dest, F&& fn, Args&&... args) {
  using H = std::decay_t<F>;
  auto& node = detail::sending_node("roam::lb::send_control");
  (void)internal::control_handler<H>::registered;
  detail::message_ptr m =
      detail::build_message<H>(dest, fn, detail::flag_system, std::forward<Args>(args)...);
  m->header.handler = detail::id_of(internal::control_handler<H>::entry);
  detail::post(node, std::move(m));
}

namespace internal {
/// Including this header links the balancer (so that --roam-lb works in programs that use
/// it, and costs nothing in those that do not).
bool link_load_balancer() noexcept;
inline const bool load_balancer_linked = link_load_balancer();
}  // namespace internal

}  // namespace roam::lb
