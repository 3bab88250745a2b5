// roam — what the layers above the node runtime may use of it. Not for applications.
#pragma once

#include <roam/base/detail/fatal.hpp>
#include <roam/base/error.hpp>
#include <roam/core/config.hpp>
#include <roam/core/detail/set_aside_message.hpp>
#include <roam/trace/detail/recorder.hpp>
#include <roam/transport/detail/exposed_memory.hpp>
#include <roam/transport/message.hpp>
#include <roam/transport/node_id.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

namespace roam::detail {

class node_runtime;
struct fiber;

/// The node the calling thread belongs to (worker, communication or application thread of
/// that node), or nullptr for threads that belong to no node.
node_runtime* current_node() noexcept;
/// Same, but throws roam::usage_error naming `caller` when there is none.
node_runtime& require_node(const char* caller);
/// The node a call from this thread acts for: the thread's node, or the only node of this
/// process for threads the application started itself. Throws roam::usage_error otherwise.
node_runtime& sending_node(const char* caller);
node_id id_of(const node_runtime& n) noexcept;
node_id size_of(const node_runtime& n) noexcept;
/// The nodes hosted by the process of `n`: ids [first, first + count).
struct local_node_range {
  node_id first = 0;
  node_id count = 0;
};
local_node_range local_nodes_of(node_runtime& n) noexcept;
/// Exposes `bytes` bytes of this process to one-sided copies by the other processes
/// (transport::expose): collective over the processes, called from a node extension's make()
/// on every process (before the nodes start). nullptr under a transport without them.
std::unique_ptr<exposed_memory> expose_process_memory(node_runtime& n, std::uint64_t bytes);
/// The number of worker threads that run the node's handlers (its application thread,
/// which runs work only while it waits, is not counted).
unsigned workers_of(const node_runtime& n) noexcept;

/// The readable (demangled) name of a type, for error messages.
std::string type_name_of(const std::type_info& type);
/// A mangled C++ symbol demangled; any other name as it is.
std::string demangled(const char* symbol);

/// The largest message (header and payload) `from` can send to `dest`: what a block holds
/// (a larger one cannot be built: std::length_error), or what a relay's record carries
/// when the job routes it to `dest` (ADR 43; post() refuses larger ones with usage_error).
std::uint64_t largest_message_to(node_runtime& from, node_id dest) noexcept;
/// Fills in source, checks dest and sends (locally or through the transport; headers are
/// sealed only where they leave the process).
/// Counts the message for quiescence unless it carries flag_system.
/// Messages posted by one thread to one node start in posting order.
void post(node_runtime& from, message_ptr m);

/// A message was consumed by an admit function without running (forwarded, failed, or an
/// installation done on arrival): counts its arrival as handled, as running it would have.
/// Messages set aside to run later go through set_aside_message instead.
void note_handled(node_runtime& n) noexcept;

/// The settings the job runs with.
const config& settings_of(const node_runtime& n) noexcept;
/// The calling thread's worker index on its node, or -1 when it is not a worker.
int worker_index() noexcept;

/// Hooks of a scheduling layer (load balancing) into a node's workers. Set them from a
/// node extension's constructor, before the workers start.
struct scheduling_hooks {
  /// Called by a worker each time it looks for work and finds none. Must be quick.
  void (*idle)(void* context) = nullptr;
  /// Asked for work by a worker (its index; -1 for other threads of the node) when the
  /// node's own queues (runtime messages, tasks) are empty.
  work_item* (*take)(void* context, int worker) = nullptr;
  /// Whether `take` has work (with `take`): a worker about to park asks it after
  /// announcing itself as a sleeper, so work made available then is not missed.
  bool (*has_work)(void* context) = nullptr;
  void* context = nullptr;
};
void set_scheduling_hooks(node_runtime& n, const scheduling_hooks& hooks) noexcept;
/// Wakes a parked worker of `n` (after work was made available through `take`).
void wake_a_worker(node_runtime& n) noexcept;
/// A message as a work item that runs its handler (node execution) when taken.
work_item* as_work_item(message_ptr m) noexcept;

/// Per-node state of a layer above the core (the mobile-object directory, the load
/// balancer). A layer registers its factory during static initialization; every node creates
/// the states when it is constructed, by increasing `order`, and destroys them after its
/// workers have stopped, in the reverse order. Layers a program does not use are not linked,
/// so they cost nothing; the core names none of them.
struct node_extension {
  const char* name = nullptr;  ///< for messages ("mobile objects")
  /// Creation order: a layer's extension comes after those of the layers below it (the
  /// mobile layer's 50, the load balancer's 60).
  int order = 0;
  void* (*make)(node_runtime& n) = nullptr;
  void (*destroy)(void* state) noexcept = nullptr;
  /// Optional: called once the process's nodes run (workers started), and at the start of
  /// the process's shutdown, after the job's collective end and before this process's nodes
  /// stop (other processes may have stopped already: what is sent from here is discarded).
  /// An extension's own threads start and stop here.
  void (*start)(void* state) = nullptr;
  void (*stop)(void* state) noexcept = nullptr;
  /// Optional: lines ("<what> <number> <detail>\n") that every process must agree on, added to
  /// the binary fingerprint compared at start-up: state numbered in registration order (the
  /// global roam::node_locals), which would misroute messages if processes numbered it
  /// differently.
  std::string (*fingerprint)() = nullptr;
  /// Optional: called on every node once the body of roam::run has returned on every node,
  /// on the node's application thread (the node's workers still run), before the last
  /// quiescence detection of the job's shutdown. The extension stops originating work: its
  /// threads stop, and uncounted messages that would start counted work (the load
  /// balancer's control messages) are dropped from now on. It returns once nothing of it
  /// can still send; what it sent before is counted and waited for by the detection.
  void (*quiesce)(void* state) = nullptr;
  /// Optional: housekeeping that must not wait for traffic (the mobile layer's directory
  /// sweep), called by every worker of the node about to park, on its thread: keep it to a
  /// few loads when there is nothing to do. It may send system messages; it must not wait.
  /// Returns true to be called again within about a second though nothing else wakes the
  /// worker.
  bool (*idle)(void* state) = nullptr;
  /// Optional: called on every node's application thread before the body of roam::run, once
  /// every process has started, in creation order. Like the body it may send messages, wait
  /// and take part in collectives (every node calls it): the checkpoint layer restores a
  /// checkpoint here.
  void (*prepare)(void* state) = nullptr;
};
/// Names a registered extension.
using extension_key = unsigned;
/// How many extensions a process may register (a node holds a fixed array of their states,
/// read on every message to a mobile object).
inline constexpr std::size_t most_node_extensions = 16;
/// Registers an extension (during static initialization, before roam::run); returns its key.
/// More than 16 extensions is a fatal error (a bug in roam).
extension_key register_node_extension(const node_extension& e) noexcept;
/// The fingerprint lines of every registered extension, in registration order.
std::string extensions_fingerprint();
/// The state of the extension `key` on `n`.
void* extension_state(node_runtime& n, extension_key key) noexcept;

/// Starts a thread bound to `n` that runs `body`: it may send messages and wait for
/// futures (a wait blocks it; it never runs the node's work). A node extension's helper
/// thread (the load balancer's) is one; join it from the extension's stop(). The thread is
/// named `role` followed by the node's id (what `top -H`, gdb and perf show).
std::thread start_service_thread(node_runtime& n, const char* role, std::function<void()> body);

/// Fault injection for tests: ships raw bytes as if they were a message to `dest`.
void send_raw_for_testing(node_id dest, std::vector<std::byte> bytes);
/// Fault injection for tests: ships raw bytes as a large message's separate payload frame.
void send_raw_payload_for_testing(node_id dest, std::vector<std::byte> bytes);

/// A note of what the calling fiber works on, opaque to the core (the mobile-object layer
/// notes the object message whose handler runs, to catch a handler waiting for its own
/// object). Returns the previous note; off a fiber it notes nothing and returns nullptr.
const void* exchange_fiber_note(const void* note) noexcept;
/// The calling fiber's note, or nullptr (no note, or not on a fiber).
const void* fiber_note() noexcept;

/// Something that becomes ready once (future states, runtime flags) and that threads of a
/// node can wait for while running other work.
class waitable {
 public:
  /// The item running on the calling fiber (a handler) can never see this ready (it holds
  /// what readiness needs): a wait on it from that item throws roam::usage_error with `why`
  /// instead of hanging. Later items that reuse the fiber may wait.
  /// Call before the waitable is shared with other threads.
  void forbid_wait_from_this_fiber(std::string why);

  // seq_cst: it is the re-check of a store-then-load handshake with mark_ready() (a waiter
  // raises waiters_, then reads ready_; the setter stores ready_, then reads waiters_).
  bool ready() const noexcept { return ready_.load(std::memory_order_seq_cst); }

 protected:
  /// Marks ready and wakes every thread waiting through wait(). Call once.
  void mark_ready() noexcept;

 private:
  friend bool wait_until(waitable&, std::chrono::steady_clock::time_point);
  friend void park_on(fiber*, void*);
  std::atomic<bool> ready_{false};
  std::atomic<int> waiters_{0};  // threads and fibers in wait()
  std::atomic<node_runtime*> waiting_node_{nullptr};
  std::mutex lock_;                          // guards suspended_; used by foreign_ready_
  std::condition_variable foreign_ready_;    // threads outside any node block here
  fiber* suspended_ = nullptr;               // fibers suspended in wait(), resumed when ready
  const fiber* forbidden_waiter_ = nullptr;  // see forbid_wait_from_this_fiber: the item
  std::uint64_t forbidden_run_ = 0;          // running on this fiber, on its run number
  std::unique_ptr<std::string> forbidden_why_;
};

/// A one-shot flag threads can wait on with detail::wait.
class ready_flag : public waitable {
 public:
  void set() noexcept { mark_ready(); }
};

/// Waits until `w` is ready. Inside a handler or tasklet (on a fiber) the fiber is
/// suspended and its thread runs other work; it resumes on any thread of its node. A node's
/// application thread runs the node's work (and takes communication duty) while it waits,
/// and parks when there is none. Other threads block.
void wait(waitable& w);
/// wait() with a deadline, for threads that are not fibers (an application thread runs its
/// node's work until then, or parks); returns whether `w` became ready. On a fiber it
/// throws roam::usage_error: a handler's waits have no deadline.
bool wait_until(waitable& w, std::chrono::steady_clock::time_point deadline);

/// Receiver of the reply to a call, living on the calling node until the reply arrives.
class reply_target {
 public:
  virtual ~reply_target() = default;
  /// `payload` is the reply's serialized value, or an error description if `is_error`.
  /// Runs on a worker of the calling node. May throw deserialization_error.
  virtual void deliver(const std::byte* payload, std::size_t size, bool is_error) = 0;
};

/// Records a pending call on `n`; the returned id goes in header.reply_to.
std::uint64_t register_call(node_runtime& n, std::shared_ptr<reply_target> target);
/// Sends the reply for `request` (already executed on `n`): the payload of `reply` is the
/// value (or an error text with flag_error_reply).
void send_reply(node_runtime& n, const message_header& request, message_ptr reply, bool is_error);

/// The run of message `m`'s handler on node `n` in the trace, for as long as it lives
/// (tracing only: construct it when trace::on()). The message's arrow ends here: its flow is
/// cleared, so that a later run of the message (set aside by a gate) or its sending on
/// starts an arrow of its own. Used by node_runtime::execute and by runs that happen in an
/// admission (a migrated object's install).
class traced_message_run {
 public:
  traced_message_run(node_runtime& n, message& m) noexcept;
  ~traced_message_run();
  traced_message_run(const traced_message_run&) = delete;
  traced_message_run& operator=(const traced_message_run&) = delete;

 private:
  trace::open_handler run_;
};

/// Keyed slots that live on a node until erased: the meeting points of collectives.
/// `make` builds the slot when the key is first used.
std::shared_ptr<void> rendezvous_slot(node_runtime& n, std::uint64_t key,
                                      std::shared_ptr<void> (*make)());
void erase_rendezvous_slot(node_runtime& n, std::uint64_t key);
/// Next collective sequence number of `n` (collectives are called in the same order by
/// the application thread of every node).
std::uint64_t next_collective_sequence(node_runtime& n) noexcept;

}  // namespace roam::detail
