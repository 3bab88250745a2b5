#include "node_runtime.hpp"
#include "routing.hpp"

#include "broadcast_relay.hpp"

#include <roam/base/detail/message_text.hpp>
#include <roam/core/detail/fiber.hpp>
#include "process_runtime.hpp"

#include <roam/base/detail/thread_name.hpp>

#include <roam/core/detail/function_symbol.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/runtime.hpp>
#include <roam/trace/detail/recorder.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <typeinfo>
#include <vector>

namespace roam::detail {
namespace {

// initial-exec: roam is linked into the executable, so its thread-locals sit at a fixed
// offset from the thread pointer; reading them costs a load, not a __tls_get_addr call.
thread_local node_runtime* tl_node [[gnu::tls_model("initial-exec")]] = nullptr;
// Admission functions running on this thread (nested deliveries count each): what they
// send is never held back (hold_back_application_thread), and what they send to a node of
// this process is held (held_arrivals.hpp).
thread_local unsigned tl_admitting [[gnu::tls_model("initial-exec")]] = 0;
// The nodes whose held arrivals this thread answers for once its outermost admission is
// over (a node may be listed by several threads, or more than once: one claims its list,
// the others find nothing to do), and their count, which the hot path reads (the list's
// thread-local has a constructor, and reaching it costs a call).
thread_local std::vector<node_runtime*> tl_listed;
thread_local std::size_t tl_listed_count [[gnu::tls_model("initial-exec")]] = 0;

std::string describe(const message_header& h) {
  std::string text = "handler '";
  text += handler_display_name(h.handler, h.function);
  text += "', message from node ";
  text += std::to_string(h.source);
  text += " to node ";
  text += std::to_string(h.dest);
  return text;
}

// ---- built-in handlers ---------------------------------------------------------------

void on_reply(node_runtime& node, message_ptr& owned) {
  message& m = *owned;
  auto target = node.take_call(m.header.reply_to);
  if (!target)
    throw deserialization_error("reply for call id " + std::to_string(m.header.reply_to) +
                                " which is not pending on node " + std::to_string(node.id()));
  target->deliver(m.payload(), m.header.payload_size, (m.header.flags & flag_error_reply) != 0);
}

handler_entry reply_handler{"roam.core.reply", on_reply};

const bool registered = handler_registry::add(&reply_handler);

}  // namespace

// ---- node_runtime ----------------------------------------------------------------------

namespace {

struct extension_registry {
  std::array<node_extension, most_node_extensions> entries{};
  std::size_t count = 0;
  /// Keys by increasing order: the order of creation and start.
  std::array<extension_key, most_node_extensions> by_order{};
};

extension_registry& extensions_registered() noexcept {
  static extension_registry registry;
  return registry;
}

}  // namespace

extension_key register_node_extension(const node_extension& e) noexcept {
  extension_registry& r = extensions_registered();
  if (r.count == most_node_extensions)
    fatal(std::string("too many node extensions: cannot register '") + (e.name ? e.name : "?") +
          "'");
  const auto key = static_cast<extension_key>(r.count++);
  r.entries[key] = e;
  std::size_t at = key;  // insertion into by_order, stable for equal orders
  while (at > 0 && r.entries[r.by_order[at - 1]].order > e.order) {
    r.by_order[at] = r.by_order[at - 1];
    --at;
  }
  r.by_order[at] = key;
  return key;
}

std::string extensions_fingerprint() {
  const extension_registry& r = extensions_registered();
  std::string lines;
  for (std::size_t i = 0; i < r.count; ++i)
    if (r.entries[i].fingerprint) lines += r.entries[i].fingerprint();
  return lines;
}

void* extension_state(node_runtime& n, extension_key key) noexcept { return n.extensions[key]; }

node_runtime::node_runtime(process_runtime& process, node_id id, scheduler::options opt,
                           std::function<bool()> progress)
    : process_(process), id_(id), scheduler_(*this, opt, std::move(progress)) {
  (void)registered;
  make_relay_lanes(*this);
  const extension_registry& r = extensions_registered();
  extension_count = r.count;
  try {
    for (std::size_t i = 0; i < r.count; ++i) {
      const extension_key key = r.by_order[i];
      if (auto make = r.entries[key].make) extensions[key] = make(*this);
    }
  } catch (...) {
    destroy_extensions();  // the destructor does not run for a constructor that throws
    throw;
  }
}

void node_runtime::destroy_extensions() noexcept {
  // Upper layers first (their states may hold messages and objects), in reverse order.
  const extension_registry& r = extensions_registered();
  for (std::size_t i = extension_count; i-- > 0;) {
    const extension_key key = r.by_order[i];
    if (extensions[key]) {
      r.entries[key].destroy(extensions[key]);
      extensions[key] = nullptr;
    }
  }
}

node_runtime::~node_runtime() {
  if (const std::size_t lost = held_.still_held())
    fatal("internal error: " + std::to_string(lost) + " messages for node " + std::to_string(id_) +
          " were held in this process and never delivered");
  destroy_extensions();
  release_thread_lanes(*this);
}

namespace {

/// Calls one hook of every extension of `n` that has it: in creation order, or (stopping)
/// in the reverse order.
template <class Hook>
void call_extension_hooks(node_runtime& n, Hook node_extension::*hook, bool reverse) {
  const extension_registry& r = extensions_registered();
  for (std::size_t i = 0; i < n.extension_count; ++i) {
    const extension_key key = r.by_order[reverse ? n.extension_count - 1 - i : i];
    if (auto call = r.entries[key].*hook; call && n.extensions[key]) call(n.extensions[key]);
  }
}

}  // namespace

void node_runtime::start_extensions() {
  call_extension_hooks(*this, &node_extension::start, false);
}

void node_runtime::prepare_extensions() {
  call_extension_hooks(*this, &node_extension::prepare, false);
}

void node_runtime::quiesce_extensions() {
  call_extension_hooks(*this, &node_extension::quiesce, true);
}

void node_runtime::stop_extensions() noexcept {
  call_extension_hooks(*this, &node_extension::stop, true);
}

bool node_runtime::idle_extensions() noexcept {
  const extension_registry& r = extensions_registered();
  bool again = false;
  for (std::size_t i = 0; i < extension_count; ++i) {
    const extension_key key = r.by_order[i];
    if (auto idle = r.entries[key].idle; idle && extensions[key]) again |= idle(extensions[key]);
  }
  return again;
}

std::thread start_service_thread(node_runtime& n, const char* role, std::function<void()> body) {
  return std::thread([&n, role, body = std::move(body)] {
    bind_thread_to_node(&n);
    name_thread(pthread_self(), role, static_cast<int>(id_of(n)));
    body();
    bind_thread_to_node(nullptr);
  });
}

void note_handled(node_runtime& n) noexcept { n.handled.fetch_add(1); }

// ---- set_aside_message --------------------------------------------------------------------

set_aside_message set_aside_message::set_aside(node_runtime& n, message_ptr m) noexcept {
  n.sent.fetch_add(1);
  return set_aside_message(std::move(m));
}

void set_aside_message::lost() noexcept {
  fatal(
      "internal error: a set-aside message was dropped without running or being counted "
      "as handled (quiescence detection would never see it finish)");
}

void set_aside_message::run_later(node_runtime& n) && noexcept {
  detail::run_later(n, std::move(m_));
}

message_ptr set_aside_message::handled(node_runtime& n) && noexcept {
  n.handled.fetch_add(1);
  return std::move(m_);
}

local_node_range local_nodes_of(node_runtime& n) noexcept {
  return {n.process().net().first_local(), n.process().net().local_count()};
}

std::unique_ptr<exposed_memory> expose_process_memory(node_runtime& n, std::uint64_t bytes) {
  return n.process().net().expose(bytes);
}

const config& settings_of(const node_runtime& n) noexcept {
  return const_cast<node_runtime&>(n).process().settings();
}

int worker_index() noexcept { return current_worker(); }

void set_scheduling_hooks(node_runtime& n, const scheduling_hooks& hooks) noexcept {
  n.sched().set_hooks(hooks);
}

void wake_a_worker(node_runtime& n) noexcept { n.sched().notify_new_work(); }

work_item* as_work_item(message_ptr m) noexcept {
  m->execute = &node_runtime::execute;
  return m.release();
}

void run_later(node_runtime& n, message_ptr m) noexcept {
  // Already admitted (or set aside by its admission): straight to the queue.
  m->execute = &node_runtime::execute;
  n.sched().push(m.release());
}

node_id node_runtime::size() const noexcept { return process_.size(); }

bool node_runtime::admitted(message_ptr& m) noexcept {
  const handler_entry* e = handler_registry::find(m->header.handler);
  if (!e || !e->admit) return false;
  const message_header h = m->header;
  // In-process delivery runs on the sender's thread: admission acts for this node (errors
  // name it, messages it sends come from it).
  node_runtime* const caller = tl_node;
  tl_node = this;
  ++tl_admitting;
  struct restore {
    node_runtime* node;
    ~restore() {
      tl_node = node;
      --tl_admitting;
    }
  } restore_caller{caller};
  try {
    return e->admit(*this, m);
  } catch (const deserialization_error& ex) {
    fatal("malformed payload for " + describe(h) + " (" + std::to_string(h.payload_size) +
          " payload bytes): " + exception_text(ex));
  } catch (const std::exception& ex) {
    fatal(describe(h) + ": admitting the message threw " + type_name_of(typeid(ex)) + ": " +
          ex.what());
  } catch (...) {
    fatal(describe(h) +
          ": admitting the message threw an exception not derived from std::exception");
  }
}

// What an admission sent to nodes of this process is delivered after the message that was
// admitted is queued, not before: a message it leads to may come back to this node, and
// must not be queued ahead of it.
inline void node_runtime::accept(message_ptr m,
                                 void (scheduler::*queue)(work_item*) noexcept) noexcept {
  if (m->header.flags & flag_broadcast) [[unlikely]]
    relay_broadcast(*this, *m);
  if (!admitted(m)) {
    m->execute = &node_runtime::execute;
    (scheduler_.*queue)(m.release());
  }
  if (tl_admitting == 0 && tl_listed_count != 0) [[unlikely]]
    deliver_listed_held();
}

void node_runtime::accept_local(message_ptr m) noexcept { accept(std::move(m), &scheduler::push); }

void node_runtime::accept_arrival(message_ptr m) noexcept {
  accept(std::move(m), &scheduler::push_arrival);
}

void node_runtime::accept_from_this_process(message_ptr m) noexcept {
  if (tl_admitting == 0 && held_.idle()) [[likely]] {
    accept_arrival(std::move(m));
    return;
  }
  if (!held_.hold(std::move(m))) return;  // the thread delivering the list takes it too
  if (tl_admitting == 0) {
    deliver_held();
  } else if (tl_listed_count == 0 || tl_listed.back() != this) {  // a burst lists it once
    tl_listed.push_back(this);
    ++tl_listed_count;
  }
}

void node_runtime::deliver_held() noexcept {
  if (held_.claim()) held_.deliver_all([this](message_ptr m) { accept_arrival(std::move(m)); });
}

// Deliveries made here admit again, and what those hold is delivered by this loop, not by
// a nested one: the stack stays one admission deep however far the messages travel.
void node_runtime::deliver_listed_held() noexcept {
  thread_local bool delivering [[gnu::tls_model("initial-exec")]] = false;
  if (delivering) return;
  delivering = true;
  while (!tl_listed.empty()) {
    node_runtime* n = tl_listed.back();
    tl_listed.pop_back();
    --tl_listed_count;
    n->deliver_held();
  }
  delivering = false;
}

void node_runtime::queue_admitted_arrival(message_ptr m) noexcept {
  m->execute = &node_runtime::execute;
  scheduler_.push_arrival(m.release());
}

namespace {

// Runs a message's handler; what it throws ends the job, naming the handler.
void invoke_handler(node_runtime& self, const handler_entry& e, const message_header& h,
                    message_ptr& m) {
  try {
    e.invoke(self, m);
  } catch (const deserialization_error& ex) {
    fatal("malformed payload for " + describe(h) + " (" + std::to_string(h.payload_size) +
          " payload bytes): " + exception_text(ex));
  } catch (const std::exception& ex) {
    fatal(describe(h) + ": the handler threw " + type_name_of(typeid(ex)) + ": " + ex.what());
  } catch (...) {
    fatal(describe(h) + ": the handler threw an exception not derived from std::exception");
  }
}

// invoke_handler() recorded as a handler run. Out of line: the untraced path neither makes
// nor zeroes the run's record.
[[gnu::noinline]] void invoke_traced(node_runtime& self, const handler_entry& e,
                                     const message_header& h, message_ptr& m) {
  const traced_message_run traced(self, *m);
  invoke_handler(self, e, h, m);
}

}  // namespace

void node_runtime::execute(work_item* w) {
  message_ptr m(static_cast<message*>(w));
  node_runtime& self = *tl_node;
  const message_header h = m->header;  // a copy: the handler may take the block
  const handler_entry* e = handler_registry::find(h.handler);
  if (!e)
    fatal("unknown handler id " + std::to_string(h.handler) + " in a message from node " +
          std::to_string(h.source) + " to node " + std::to_string(h.dest) + " (this binary has " +
          std::to_string(handler_registry::size()) + " handlers)");
  if (!e->invoke)
    fatal(describe(h) +
          ": a channel handler arrived as a message of its own; channel messages "
          "travel only inside bundles (corrupt message, or a different binary?)");
  if (trace::on()) [[unlikely]]
    invoke_traced(self, *e, h, m);
  else
    invoke_handler(self, *e, h, m);
  if (!(h.flags & flag_system)) self.handled.fetch_add(1);
}

std::uint64_t node_runtime::add_call(std::shared_ptr<reply_target> t) {
  std::lock_guard guard(calls_lock_);
  std::uint64_t id = next_call_++;
  calls_.emplace(id, std::move(t));
  return id;
}

std::shared_ptr<reply_target> node_runtime::take_call(std::uint64_t id) {
  std::lock_guard guard(calls_lock_);
  auto it = calls_.find(id);
  if (it == calls_.end()) return nullptr;
  auto t = std::move(it->second);
  calls_.erase(it);
  return t;
}

// ---- node_api ---------------------------------------------------------------------------

std::string demangled(const char* symbol) {
  int status = 0;
  char* out = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string result = (status == 0 && out) ? out : symbol;  // a C name stays as it is
  std::free(out);
  return result;
}

std::string type_name_of(const std::type_info& type) { return demangled(type.name()); }

void bind_thread_to_node(node_runtime* n) noexcept {
  forget_thread_lanes();
  tl_node = n;
}
// Not inlined: a fiber may resume on another thread, and a caller must not reuse a
// thread-local address computed before the switch.
[[gnu::noinline]] node_runtime* current_node() noexcept { return tl_node; }

}  // namespace roam::detail

// Here, beside the thread-local it reads: handlers call it per message (to find their
// node's data), and the common case is then one load.
roam::node_id roam::this_node() {
  if (detail::node_runtime* n = detail::tl_node) return n->id();
  return detail::id_of(detail::sending_node("roam::this_node"));
}

namespace roam::detail {

node_runtime& require_node(const char* caller) {
  if (!tl_node)
    throw usage_error(std::string(caller) +
                      " called outside roam::run or from a thread that belongs to no node");
  return *tl_node;
}

node_id id_of(const node_runtime& n) noexcept { return n.id(); }
node_id size_of(const node_runtime& n) noexcept { return n.size(); }
unsigned workers_of(const node_runtime& n) noexcept { return n.sched().workers(); }

// Flow control's last resort, and the one place roam makes a sender wait: an application
// thread that sends faster than the job takes in waits while its process holds more than
// --roam-send-backlog unsent bytes or the node it sends to in this process has more than
// --roam-inbox-limit arrivals queued. A thread that belongs to no node (one the
// application started, which may send when its process hosts one node; a device backend's
// or a driver's thread running a completion) waits only for the backlog: the network
// drains it whatever that thread was to do, while a node's queue may be bounded by
// bundles held behind a handler that waits for that very thread (a promise it fulfils).
// Handlers never wait here: what they send answers what they received, which flow control
// already bounds, and a handler waiting for credit could hold up the very node that must
// grant it. Nor does an application thread while it admits an arrival (it may hold the
// transport's progress lock, and acts for another node).
// The waiting thread drives the network but runs no handlers: a send must not run the
// application's code inside it (a lock the caller holds, an iteration under way); the
// node's workers drain its queue.
void hold_back_application_thread(node_runtime& from, node_id dest) {
  // The runtime's own threads (workers, the communication and service threads) belong to
  // a node and are not application threads.
  const bool of_no_node = tl_node == nullptr;
  if (!(is_application_thread() ? tl_node == &from : of_no_node) || on_fiber() || tl_admitting != 0)
    return;
  process_runtime& p = from.process();
  const config& cfg = p.settings();
  node_runtime* const local_dest = of_no_node ? nullptr : p.local(dest);
  auto over = [&] {
    return p.net().unsent_bytes() > cfg.send_backlog_bytes ||
           (local_dest && local_dest->waiting_arrivals() > cfg.inbox_limit);
  };
  if (!over()) [[likely]]
    return;
  scheduler& s = from.sched();
  flush_thread_lanes();  // what this thread aggregated may be what the receiver waits for
  while (over()) {
    if (s.progress()) continue;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::uint64_t largest_message_to(node_runtime& from, node_id dest) noexcept {
  if (routed_elsewhere(from, dest)) return largest_carried_message;
  return sizeof(message_header) + max_payload_bytes;
}

void post(node_runtime& from, message_ptr m) {
  message_header& h = m->header;
  h.source = from.id();
  m->local_progress = 0;  // a new arrival where it goes
  if (h.dest >= from.size())
    fatal("message for node " + std::to_string(h.dest) + " but the job has " +
          std::to_string(from.size()) + " nodes (" + describe(h) + ")");
  if (!(h.flags & flag_system)) {
    const bool carried = !(h.flags & flag_broadcast) && routed_elsewhere(from, h.dest);
    if (carried && m->wire_size() > largest_carried_message)  // before it is counted
      throw usage_error("a message of " + std::to_string(m->wire_size()) + " bytes to node " +
                        std::to_string(h.dest) +
                        " is larger than a routed job carries (4 GiB; --roam-route-min-nodes)");
    from.sent.fetch_add(1);
    hold_back_application_thread(from, h.dest);
    // What this thread aggregated for dest goes first: on its path (a routed job), or
    // shipped before it.
    if (carried) {
      // Here, not only in post_counted(): a carried message does not pass there, and its
      // record carries the header with the flow.
      if (trace::on()) [[unlikely]]
        trace_send(from, *m);
      // An admission function acts for the node on a thread whose lanes may be in the
      // middle of shipping: it sends through the node's relay lanes, which the thread's
      // other messages to dest also pass.
      if (tl_admitting == 0 && carry_through_lanes(from, m)) return;
      carry_through_relays(from, m);
      return;
    }
    // Not while admitting: the thread's own lanes may be shipping the very bundle whose
    // delivery (in this process, on this thread) runs this admission.
    if (tl_admitting == 0) flush_ordered_lane(from, h.dest);
  }
  post_counted(from, std::move(m));
}

void post_counted(node_runtime& from, message_ptr m) noexcept {
  m->header.source = from.id();
  if (trace::on()) [[unlikely]]
    trace_send(from, *m);
  if (m->header.dest == from.id()) {
    from.accept_local(std::move(m));
    return;
  }
  from.process().net().send(std::move(m));
}

message_ptr make_system_message(node_id dest, const handler_entry& h, const void* payload,
                                std::size_t size) {
  message_ptr m = message::allocate(size);
  m->header.handler = id_of(h);
  m->header.dest = dest;
  m->header.flags = flag_system;
  m->header.payload_size = size;
  if (size) std::memcpy(m->payload(), payload, size);
  return m;
}

std::uint64_t register_call(node_runtime& n, std::shared_ptr<reply_target> target) {
  return n.add_call(std::move(target));
}

void send_reply(node_runtime& n, const message_header& request, message_ptr reply, bool is_error) {
  reply->header.handler = id_of(reply_handler);
  reply->header.dest = request.source;
  reply->header.reply_to = request.reply_to;
  reply->header.flags = (request.flags & flag_system) | (is_error ? flag_error_reply : 0u);
  post(n, std::move(reply));
}

std::shared_ptr<void> rendezvous_slot(node_runtime& n, std::uint64_t key,
                                      std::shared_ptr<void> (*make)()) {
  std::lock_guard guard(n.slots_lock);
  auto& slot = n.slots[key];
  if (!slot) slot = make();
  return slot;
}

void erase_rendezvous_slot(node_runtime& n, std::uint64_t key) {
  std::lock_guard guard(n.slots_lock);
  n.slots.erase(key);
}

std::uint64_t next_collective_sequence(node_runtime& n) noexcept {
  return n.collective_sequence.fetch_add(1) + 1;
}

// ---- waiting ------------------------------------------------------------------------------

void waitable::forbid_wait_from_this_fiber(std::string why) {
  const fiber_run here = current_fiber_run();
  forbidden_waiter_ = here.on;
  forbidden_run_ = here.run;
  if (forbidden_waiter_) forbidden_why_ = std::make_unique<std::string>(std::move(why));
}

void waitable::mark_ready() noexcept {
  ready_.store(true, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  if (node_runtime* n = waiting_node_.load()) n->sched().wake_waiters();
  fiber* resume = nullptr;
  {
    std::lock_guard guard(lock_);
    resume = suspended_;
    suspended_ = nullptr;
    foreign_ready_.notify_all();
  }
  while (resume) {
    fiber* next = next_waiter(resume);
    resume_later(resume);
    resume = next;
  }
}

// Runs on the thread's own stack once the waiting fiber's context is saved.
void park_on(fiber* f, void* arg) {
  auto& w = *static_cast<waitable*>(arg);
  {
    std::lock_guard guard(w.lock_);
    if (!w.ready()) {
      next_waiter(f) = w.suspended_;
      w.suspended_ = f;
      return;
    }
  }
  resume_later(f);  // became ready while the fiber was leaving
}

void wait(waitable& w) { (void)wait_until(w, std::chrono::steady_clock::time_point::max()); }

bool wait_until(waitable& w, std::chrono::steady_clock::time_point deadline) {
  if (w.ready()) return true;
  using clock = std::chrono::steady_clock;
  const bool timed = deadline != clock::time_point::max();
  // Whatever this thread aggregated may be what the wait is for.
  flush_thread_lanes();
  w.waiters_.fetch_add(1, std::memory_order_seq_cst);
  if (on_fiber()) {
    if (w.forbidden_waiter_ &&
        current_fiber_run() == fiber_run{w.forbidden_waiter_, w.forbidden_run_} && !w.ready()) {
      w.waiters_.fetch_sub(1);
      throw usage_error(*w.forbidden_why_);
    }
    if (timed) {
      w.waiters_.fetch_sub(1);
      throw usage_error(
          "a timed wait inside a handler (the runtime's own protocols wait "
          "with a deadline only on application threads)");
    }
    if (!w.ready()) suspend(park_on, &w);
    w.waiters_.fetch_sub(1);
    return true;
  }
  node_runtime* n = current_node();
  if (!n) {
    std::unique_lock lock(w.lock_);
    if (timed)
      w.foreign_ready_.wait_until(lock, deadline, [&] { return w.ready(); });
    else
      w.foreign_ready_.wait(lock, [&] { return w.ready(); });
    w.waiters_.fetch_sub(1);
    return w.ready();
  }
  w.waiting_node_.store(n);
  scheduler& s = n->sched();
  const int self = current_worker();
  // Workers always run work while waiting; application threads unless told not to;
  // service threads never.
  const bool run_work =
      self >= 0 || (is_application_thread() && n->process().settings().lend_app_thread);
  unsigned rounds = 0;
  auto since = std::chrono::steady_clock::now();
  // A waiter that runs work counts as the node's spinner (workers then park); one that
  // runs none must not keep parked workers from being woken.
  auto begin_spin = [&] {
    if (run_work) s.begin_spin();
  };
  auto end_spin = [&] {
    if (run_work) s.end_spin();
  };
  bool glance = false;  // woken by the timer only: look once, then sleep again
  // Without a network to poll, a parked waiter is woken by whatever it waits for, and new
  // work goes to a sleeping worker: the timer is only a backstop. It doubles while nothing
  // wakes the thread and it finds no work: a thousand virtual nodes' threads waiting on two
  // cores cost a wake-up each per millisecond otherwise, which was most of a 1024-node
  // barrier's time.
  constexpr auto first_backstop = std::chrono::microseconds(1000);
  constexpr auto longest_backstop = std::chrono::microseconds(64000);
  auto backstop = first_backstop;
  begin_spin();
  while (!w.ready()) {
    if (run_work) {
      if (work_item* item = s.find_work(self)) {
        end_spin();
        run_item(item);
        // Like a worker between items: a waiter that always finds work (tasks that each
        // start and suspend at once, waiting for what this wait is for) must still hear
        // from the network, or the reply it waits for, and requests others wait on, stay
        // unreceived while it runs through them all.
        if (s.has_progress()) s.poll_if_due();
        begin_spin();
        rounds = 0;
        glance = false;
        backstop = first_backstop;
        if (timed && clock::now() >= deadline) break;
        continue;
      }
      // Out of work, like an idle worker: the handlers this thread ran may have aggregated
      // records that the rest of the job waits for (even what this wait is for).
      flush_thread_lanes();
    }
    // A waiter that runs no work leaves the network to an awake worker, which polls it
    // between handlers: polling beside it only takes a core from the handlers (a stream of
    // messages keeps such a poller busy), and the waiter is woken when its value arrives.
    const bool poll = run_work || !s.worker_awake();
    if (poll && s.progress()) {
      rounds = 0;
      glance = false;
      continue;
    }
    if (!glance) {
      if (rounds == 0) since = clock::now();
      back_off(rounds++);
      // Reading the clock costs as much as a round; look every 32 rounds. A waiter that
      // runs no work has nothing to gain from spinning (and takes a core from those that
      // do), so it parks after its first look.
      if ((rounds & 31) != 31) continue;
      const auto now = clock::now();
      if (timed && now >= deadline) break;
      if (run_work && now - since < s.spin_budget()) continue;
    } else if (timed && clock::now() >= deadline) {
      break;
    }
    end_spin();
    const std::uint64_t epoch = s.waiter_epoch();
    if (!w.ready()) {
      bool duty = false;
      // A thread that lends itself to a node whose workers are all busy is the one that
      // runs what arrives (new work wakes only sleeping workers): it keeps the short timer.
      const bool covers_for_workers = run_work && !s.worker_parked();
      auto sleep = s.has_progress()     ? s.take_poll_duty(duty)
                   : covers_for_workers ? first_backstop
                                        : backstop;
      if (timed)
        sleep = std::min(sleep, std::chrono::ceil<std::chrono::microseconds>(
                                    std::max(deadline - clock::now(), clock::duration::zero())));
      s.park_waiter(epoch, sleep);
      s.release_poll_duty(duty);
    }
    glance = s.waiter_epoch() == epoch;  // nobody woke us: the timer did
    backstop = glance ? std::min(backstop * 2, longest_backstop) : first_backstop;
    begin_spin();
    rounds = 0;
  }
  end_spin();
  w.waiters_.fetch_sub(1);
  // The thread goes back to the application, which may not wait again for a long time:
  // what the handlers it ran here aggregated leaves now.
  if (run_work) flush_thread_lanes();
  return w.ready();
}

}  // namespace roam::detail
