#include "process_runtime.hpp"

#include <roam/core/detail/fiber.hpp>
#include "stack_overflow.hpp"

#include <roam/base/detail/message_text.hpp>
#include <roam/base/detail/thread_name.hpp>
#include <roam/core/detail/function_table.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/runtime.hpp>
#include <roam/trace/detail/recorder.hpp>
#include <roam/trace/trace_settings.hpp>
#include <roam/transport/detail/backends.hpp>

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <typeinfo>

namespace roam::detail {
namespace {

std::atomic<process_runtime*> active{nullptr};
std::mutex run_lock;

unsigned default_workers(const config& cfg, const transport& t, unsigned processes_on_host) {
  if (cfg.threads != 0) return cfg.threads;
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  unsigned nodes_on_host = t.local_count() * std::max(1u, processes_on_host);
  return std::max(1u, (hw > 1 ? hw - 1 : 1) / nodes_on_host);
}

/// One process is one rank: nodes per rank, when set, is its number of nodes. Two different
/// numbers are a mistake to name, not to settle silently.
node_id inproc_nodes(const config& cfg) {
  if (cfg.nodes_per_rank == 1) return cfg.nodes;
  if (cfg.nodes != 1 && cfg.nodes != cfg.nodes_per_rank)
    throw usage_error("--roam-nodes " + std::to_string(cfg.nodes) + " and --roam-nodes-per-rank " +
                      std::to_string(cfg.nodes_per_rank) +
                      " disagree on the nodes of this process (one process is one rank); set "
                      "one of them");
  return cfg.nodes_per_rank;
}

}  // namespace

namespace {

long node_of_this_thread() noexcept {
  node_runtime* n = current_node();
  return n ? static_cast<long>(n->id()) : -1;
}

// fatal() (base layer) names the node of the failing thread.
[[maybe_unused]] const bool fatal_names_nodes = [] {
  set_fatal_node_lookup(node_of_this_thread);
  return true;
}();

}  // namespace

process_runtime* active_process() noexcept { return active.load(); }

void send_raw_for_testing(node_id dest, std::vector<std::byte> bytes) {
  process_runtime* p = active_process();
  if (!p) throw usage_error("send_raw_for_testing called outside roam::run");
  p->net().send_raw_for_testing(dest, std::move(bytes));
}

void send_raw_payload_for_testing(node_id dest, std::vector<std::byte> bytes) {
  process_runtime* p = active_process();
  if (!p) throw usage_error("send_raw_payload_for_testing called outside roam::run");
  p->net().send_raw_payload_for_testing(dest, std::move(bytes));
}

node_runtime& sending_node(const char* caller) {
  if (node_runtime* n = current_node()) return *n;
  if (process_runtime* p = active_process(); p && p->nodes().size() == 1)
    return *p->nodes().front();
  throw usage_error(std::string(caller) +
                    " called outside roam::run, or from a thread of the application while this "
                    "process hosts several virtual nodes (call it from a node's thread instead)");
}

process_runtime::process_runtime(const config& cfg) : config_(cfg) {
  auto deliver = [this](message_ptr m, bool sealed_here) {
    if (!sealed_here) {
      this->deliver(std::move(m));
      return;
    }
    node_runtime* node = local(m->header.dest);
    node->accept_from_this_process(std::move(m));
  };
  bool use_mpi =
      cfg.transport == transport_kind::mpi ||
      (cfg.transport == transport_kind::automatic && launched_with_several_mpi_processes());
  // Grants of send credit wait while a node has too much queued, until the job's end:
  // then nothing runs any more, and a peer still draining must get its credit.
  auto overloaded = [this] { return !closed_.load(std::memory_order_acquire) && inbox_full(); };
  transport_ = use_mpi ? make_mpi_transport({cfg.frame_payload_bytes(), !cfg.comm_thread,
                                             cfg.nodes_per_rank, cfg.send_window_bytes, overloaded},
                                            deliver)
                       : make_inproc_transport(inproc_nodes(cfg), deliver);

  // Routing needs lanes to route through; without aggregation every message goes direct.
  routes_ = cfg.route_min_nodes != 0 && size() >= cfg.route_min_nodes && cfg.aggregate_bytes != 0;
  grid_ = route_grid(size(), transport_->local_count());
  relay_holds_credit_ = routes_ && grid_.relays_may_hold_credit(transport_->local_count());
  std::string fingerprint =
      handler_registry::fingerprint() + module_fingerprint() + extensions_fingerprint() +
      "setting frame-payload-bytes " + std::to_string(cfg.frame_payload_bytes()) +
      " (--roam-inline-bytes, --roam-aggregate-bytes, --roam-aggregate-growth)\n" +
      "setting nodes-per-rank " + std::to_string(cfg.nodes_per_rank) +
      " (--roam-nodes-per-rank)\n" + "setting send-window " +
      std::to_string(cfg.send_window_bytes) + " (--roam-send-window)\n" + "routing " +
      (routes_ ? "on" : "off") + " (--roam-route-min-nodes, --roam-aggregate-bytes)\n" +
      // Traced ranks align their clocks with rank 0 before any traffic: all or none.
      "tracing " + (cfg.of<roam::trace::trace_settings>().file.empty() ? "off" : "on") +
      " (--roam-trace)\n";
  transport_->validate_fingerprint(fingerprint);
  trace_ = std::make_unique<job_trace>(cfg, *transport_, rank(), ranks());

  scheduler::options opt;
  opt.workers = default_workers(cfg, *transport_, transport_->processes_on_host());
  opt.spin = std::chrono::microseconds(cfg.spin_us);
  opt.poll = std::chrono::microseconds(cfg.poll_us);
  opt.pin = cfg.pin;
  set_fiber_stack_size(cfg.stack_bytes);
  set_fiber_suspension_cap(cfg.max_suspended);
  std::function<bool()> progress;
  if (transport_->needs_progress() && !cfg.comm_thread)
    progress = [t = transport_.get()] { return t->progress(); };
  for (node_id i = 0; i < transport_->local_count(); ++i) {
    // Consecutive cores per node, nodes of one host side by side.
    opt.pin_offset = (transport_->index_on_host() * transport_->local_count() + i) * opt.workers;
    nodes_.push_back(
        std::make_unique<node_runtime>(*this, transport_->first_local() + i, opt, progress));
  }
  shutdown_ = std::make_unique<shutdown_protocol>(*this);
}

process_runtime::~process_runtime() { stop(); }

bool process_runtime::inbox_full() noexcept {
  // Only the injection queue: it drains whenever a worker is free, whatever the handlers
  // wait for. Channel bundles held for their stream's turn drain only as that stream's
  // running bundle ends, which may wait for a reply from a rank whose traffic the held
  // grants would stop: counting them could deadlock.
  const std::size_t limit = config_.inbox_limit;
  for (const auto& node : nodes_)
    if (node->sched().queued_arrivals() > limit) return true;
  return false;
}

void process_runtime::start() {
  if (transport_->needs_progress() && config_.comm_thread)
    comm_thread_ = std::thread([this] {
      name_thread(pthread_self(), "roam-comm", static_cast<int>(transport_->first_local()));
      comm_thread_main();
    });
  for (auto& n : nodes_) n->sched().start();
  for (auto& n : nodes_) n->start_extensions();
}

void process_runtime::stop() {
  if (stopped_) return;
  stopped_ = true;
  // Extensions' threads first: they may still send to any node of the process.
  for (auto& n : nodes_) n->stop_extensions();
  closed_.store(true, std::memory_order_release);
  for (auto& n : nodes_) n->sched().stop();
  if (comm_thread_.joinable()) {
    comm_stop_.store(true);
    comm_thread_.join();
  }
  transport_->drain();
  trace_->write_part();
  transport_->process_barrier();
  trace_->merge();
}

void process_runtime::comm_thread_main() {
  // The communication thread belongs to the first local node so that fatal errors name it.
  bind_thread_to_node(nodes_.front().get());
  unsigned idle = 0;
  while (!comm_stop_.load(std::memory_order_relaxed)) {
    if (transport_->progress()) {
      idle = 0;
      continue;
    }
    // Spin briefly, then sleep until a send is queued or the poll interval passes.
    if (++idle < 64)
      cpu_relax();
    else if (idle < 128)
      std::this_thread::yield();
    else
      transport_->idle_wait(std::chrono::microseconds(config_.poll_us));
  }
  bind_thread_to_node(nullptr);
}

void process_runtime::deliver(message_ptr m) noexcept {
  // After the job's end only uncounted messages can arrive (the end follows quiescence):
  // control messages and location updates that nobody needs any more.
  if (closed_.load(std::memory_order_acquire)) {
    // A counted message cannot be in flight after the job's last quiescence detection:
    // one here was sent after it (a bug, or a thread the application left running).
    static std::atomic<bool> said{false};
    if (!(m->header.flags & flag_system) && !said.exchange(true))
      std::fprintf(stderr, "%s\n",
                   error_text("warning: a message arrived after the job ended and was "
                              "discarded (handler #" +
                              std::to_string(m->header.handler) + ", from node " +
                              std::to_string(m->header.source) +
                              "); it was sent after the job was quiescent")
                       .c_str());
    return;
  }
  const message_header& h = m->header;
  const char* problem =
      header_problem(h, {size(), transport_->first_local(), transport_->local_count()});
  if (problem)
    fatal(std::string("received a malformed message: ") + problem + " (header claims handler #" +
          std::to_string(h.handler) + ", node " + std::to_string(h.source) + " -> node " +
          std::to_string(h.dest) + ", " + std::to_string(h.payload_size) + " payload bytes)");
  local(h.dest)->accept_arrival(std::move(m));
}

int run_spmd_config_error(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  return 2;
}

int run_spmd(const config& cfg, std::function<void()> body) {
  if (cfg.help) {
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = std::getenv("PMI_RANK");
    if (!rank || std::string(rank) == "0") std::cout << config::help_text() << std::flush;
    return 0;
  }
  std::unique_lock exclusive(run_lock, std::try_to_lock);
  if (!exclusive.owns_lock()) throw usage_error("roam::run is already running in this process");

  handler_registry::seal();
  load_module_table();
  // Layers whose objects the application makes inside the run (a hetero_runtime) read their
  // settings from the run's.
  set_job_settings(&cfg.layers);
  struct job_settings_scope {
    ~job_settings_scope() { set_job_settings(nullptr); }
  } clear_job_settings;
  process_runtime process(cfg);
  active.store(&process);
  process.start();

  auto application = [&](node_runtime& n) {
    report_stack_overflows_on_this_thread();
    bind_thread_to_node(&n);
    mark_application_thread(true);
    try {
      n.prepare_extensions();
      const trace::region_scope traced("roam::run body", n.id());
      body();
    } catch (const std::exception& e) {
      fatal("the application body threw " + type_name_of(typeid(e)) + ": " + e.what());
    } catch (...) {
      fatal("the application body threw an exception not derived from std::exception");
    }
    // The job ends collectively (shutdown_protocol.hpp); waiting threads keep running
    // their node's work.
    process.shutdown().finish(n);
    mark_application_thread(false);
    bind_thread_to_node(nullptr);
  };

  std::vector<std::thread> others;
  auto& nodes = process.nodes();
  for (std::size_t i = 1; i < nodes.size(); ++i)
    others.emplace_back([&, i] { application(*nodes[i]); });
  application(*nodes.front());
  for (auto& t : others) t.join();

  process.stop();
  active.store(nullptr);
  return 0;
}

}  // namespace roam::detail

namespace roam {

node_id num_nodes() { return detail::size_of(detail::sending_node("roam::num_nodes")); }
void wait_quiescence() { detail::detect_quiescence(detail::require_node("roam::wait_quiescence")); }

}  // namespace roam
