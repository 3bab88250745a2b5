// One node: its scheduler, counters, pending calls and rendezvous slots.
#pragma once

#include "aggregation_lanes.hpp"
#include "held_arrivals.hpp"
#include "scheduler.hpp"

#include <roam/core/config.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/transport/transport.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace roam::detail {

class process_runtime;

class node_runtime {
 public:
  node_runtime(process_runtime& process, node_id id, scheduler::options opt,
               std::function<bool()> progress);
  ~node_runtime();
  node_runtime(const node_runtime&) = delete;
  node_runtime& operator=(const node_runtime&) = delete;

  node_id id() const noexcept { return id_; }
  node_id size() const noexcept;
  process_runtime& process() noexcept { return process_; }
  scheduler& sched() noexcept { return scheduler_; }
  const scheduler& sched() const noexcept { return scheduler_; }

  /// Queues a message this node sent to itself.
  void accept_local(message_ptr m) noexcept;
  /// Queues a validated message that arrived from another node.
  void accept_arrival(message_ptr m) noexcept;
  /// accept_arrival() for a message another node of this process sent (the transport's
  /// delivery inside a send): held while the sending thread admits an arrival or messages
  /// are held for this node, and then delivered in hand-over order by the holding thread
  /// once its outermost admission is over, or by a thread already delivering them
  /// (held_arrivals.hpp).
  void accept_from_this_process(message_ptr m) noexcept;
  /// Queues an arrival that its admission already let through.
  void queue_admitted_arrival(message_ptr m) noexcept;
  /// Runs the handler of a message (work_item::execute of messages).
  static void execute(work_item* w);
  /// What other nodes sent here and no worker has started yet: the injection queue and
  /// the channel bundles held for their stream's turn (a snapshot, for flow control).
  std::size_t waiting_arrivals() const noexcept {
    return scheduler_.queued_arrivals() + streams.held_bundles.load(std::memory_order_relaxed);
  }

  /// Calls the extensions' start (process start), quiesce (the job's shutdown, before its
  /// last quiescence detection) and stop (process shutdown) functions.
  void start_extensions();
  /// Calls the extensions' prepare hooks (the application thread, before the body).
  void prepare_extensions();
  void quiesce_extensions();
  /// Calls the extensions' idle hooks (a worker about to park). True if one asked to be
  /// called again: the caller should not sleep much longer than a second.
  bool idle_extensions() noexcept;
  void stop_extensions() noexcept;

 private:
  void destroy_extensions() noexcept;
  /// Offers an arriving message to its handler's admit function (true: it took it).
  bool admitted(message_ptr& m) noexcept;
  /// accept_local() and accept_arrival(): `queue` is the scheduler queue they differ in.
  void accept(message_ptr m, void (scheduler::*queue)(work_item*) noexcept) noexcept;
  /// Delivers what is held for this node unless another thread already does.
  void deliver_held() noexcept;
  /// Delivers what this thread's admissions held, once its outermost admission is over.
  static void deliver_listed_held() noexcept;

 public:
  // Counters of non-system messages, for termination detection.
  alignas(64) std::atomic<std::uint64_t> sent{0};
  alignas(64) std::atomic<std::uint64_t> handled{0};

  // Pending calls (replies route back here).
  std::uint64_t add_call(std::shared_ptr<reply_target> t);
  std::shared_ptr<reply_target> take_call(std::uint64_t id);

  // Rendezvous slots for collectives and runtime protocols.
  std::mutex slots_lock;
  std::unordered_map<std::uint64_t, std::shared_ptr<void>> slots;
  std::atomic<std::uint64_t> collective_sequence{0};

  /// Aggregation lanes of the threads that sent channel messages (aggregation.cpp).
  std::mutex lanes_lock;
  std::vector<std::unique_ptr<thread_lanes>> thread_lanes_list;
  ordered_streams streams;  ///< ordered bundles that arrived here, per sender thread
  /// Lanes relaying routed records on to their nodes (a routed job only; routing.cpp).
  std::unique_ptr<relay_lanes> relays;
  /// Lanes of the same shape for this node's own traffic that takes a relay.
  std::unique_ptr<relay_lanes> own_relays;

  /// States of the registered node extensions (see register_node_extension).
  std::array<void*, most_node_extensions> extensions{};
  std::size_t extension_count = 0;  ///< registered when the node was made

  ready_flag stop;  ///< the job is quiescent and shuts down (shutdown_protocol)
  /// When the trace last sampled this node's counters (trace_counters), in steady-clock ns.
  std::atomic<std::uint64_t> trace_sampled_ns{0};

 private:
  process_runtime& process_;
  node_id id_;
  scheduler scheduler_;
  held_arrivals held_;
  std::mutex calls_lock_;
  std::unordered_map<std::uint64_t, std::shared_ptr<reply_target>> calls_;
  std::uint64_t next_call_ = 1;
};

/// post() for a message already counted for quiescence (an aggregation bundle, counted
/// when it was opened): delivers it locally or hands it to the transport.
void post_counted(node_runtime& from, message_ptr m) noexcept;

/// Queues a message that was already admitted (its pending count taken) to run through its
/// handler on a worker of `n`, without its admit function. The layers above reach it only
/// through set_aside_message::run_later.
void run_later(node_runtime& n, message_ptr m) noexcept;

/// Makes the calling thread belong to `n` (or to no node with nullptr).
void bind_thread_to_node(node_runtime* n) noexcept;

/// Termination detection started from `n`: returns when a quiescent instant was observed.
void detect_quiescence(node_runtime& n);

/// Runtime-internal messages carrying raw payloads (no cereal).
message_ptr make_system_message(node_id dest, const handler_entry& h, const void* payload,
                                std::size_t size);

/// The payload of a runtime-internal message, which must be exactly one T.
template <class T>
T read_system_payload(const message& m) {
  if (m.header.payload_size != sizeof(T))
    throw deserialization_error("expected " + std::to_string(sizeof(T)) + " payload bytes, got " +
                                std::to_string(m.header.payload_size));
  T value;
  std::memcpy(&value, m.payload(), sizeof(T));
  return value;
}

/// Flow control before a send to `dest` from `from`: returns at once unless the caller is
/// an application thread acting for `from` (not a handler, not while it admits an arrival);
/// such a thread waits, driving the network but running no handlers, while the process
/// holds more than --roam-send-backlog unsent bytes or `dest`, when in this process, has more than
/// --roam-inbox-limit arrivals queued.
void hold_back_application_thread(node_runtime& from, node_id dest);

}  // namespace roam::detail
