// roam — the trace recorder: events kept per thread while a job runs, written at its end.
//
// Each thread appends to a buffer of its own (no lock, no shared cache line on the hot
// path); a thread's first event registers its buffer with the process, under a lock, once.
// Buffers outlive their threads, so that the job's end can write what every thread kept.
// When tracing is off (the default) every recording site costs one relaxed load of a flag
// that never changes while a job runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace roam::detail::trace {

/// What an event is. Internal: never sent, and not part of any file format.
enum class event_kind : std::uint8_t {
  handler,  ///< a run of a handler: from its start or resumption to its end or suspension
  send,     ///< a message left its sender at begin_ns (the start of flow `flow`)
  region,   ///< a named interval `label` (the application's body, a balancer's round)
  instant,  ///< a named moment `label` with `value`
  counter,  ///< the counter `label` of node `node` is `value` from begin_ns on
  /// mobile object `object_home`:`value` of type `type` leaves node `node` for node
  /// `handler` at begin_ns (its install message's flow follows it)
  migration,
};

/// One event. `label` and `type` point to text with static storage duration (string
/// literals, names the runtime keeps for the process's lifetime).
struct event {
  std::uint64_t begin_ns = 0;
  std::uint64_t end_ns = 0;
  /// handler: the flow that ends at its start (the message's send, or its suspension);
  /// send: the flow it starts; 0: none.
  std::uint64_t flow = 0;
  /// handler: the flow its suspension starts (to its resumption); 0 when it ended.
  std::uint64_t flow_out = 0;
  /// handler, migration: the index of the mobile object (0: none); send: the destination
  /// node; instant: the value; counter: the value's bits (a double, std::bit_cast).
  std::uint64_t value = 0;
  std::uint64_t function = 0;     ///< handler: the function token of a pointer handler
  const char* label = nullptr;    ///< region, instant, counter: the name
  const char* type = nullptr;     ///< handler: the mobile object's type, or nullptr
  std::uint32_t handler = 0;      ///< handler: its id in the handler registry
  std::uint32_t node = 0;         ///< the node the event belongs to
  std::uint32_t bytes = 0;        ///< handler, send: the message's payload bytes (saturated)
  std::uint32_t object_home = 0;  ///< handler on a mobile object: the object's home node
  std::uint32_t part = 0;         ///< handler: resumptions before this run
  event_kind kind = event_kind::handler;
};

static_assert(sizeof(event) == 88);

/// A message's payload size as an event keeps it (32 bits, saturated).
inline std::uint32_t event_bytes(std::uint64_t bytes) noexcept {
  return bytes > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(bytes);
}

/// Set while a job records (start() to stop()): the one test every recording site makes.
extern std::atomic<bool> recording;
inline bool on() noexcept { return recording.load(std::memory_order_relaxed); }

/// Nanoseconds of the steady clock, the trace's time base.
std::uint64_t now_ns() noexcept;

/// Makes the calling thread a track of node `node` in the trace, whether or not it records
/// anything (a worker that never ran a handler still shows, idle).
void attach_thread(std::uint32_t node) noexcept;

/// Appends `e` to the calling thread's buffer (beyond --roam-trace-limit: counts it only).
void record(const event& e) noexcept;

/// A flow id unique in the job: this process's index, the calling thread's and a count.
/// 0 (no flow) once the calling thread keeps no more events (--roam-trace-limit).
std::uint64_t new_flow() noexcept;

/// The handler a thread runs, kept open while it runs: its event is recorded when it ends
/// or suspends. Frames nest (a handler that runs another inline) and live on the stack of
/// the fiber that runs them, so they travel with it when it suspends.
struct open_handler {
  event run;
  open_handler* outer = nullptr;
};
/// Opens `h` (its `run` filled in but for begin_ns) on the calling thread.
void begin_handler(open_handler& h) noexcept;
/// begin_handler() for the run of a message's handler: the message's handler id, function
/// token, node, payload bytes (saturated) and flow.
void begin_message_handler(open_handler& h, std::uint32_t handler, std::uint64_t function,
                           std::uint32_t node, std::uint64_t bytes, std::uint64_t flow) noexcept;
/// Records and closes `h`, the calling thread's innermost open handler.
void end_handler(open_handler& h) noexcept;
/// The calling thread's innermost open handler, or nullptr (to add the object it runs on).
open_handler* innermost_handler() noexcept;
/// At a suspension: records the run of every handler open on the calling thread (they
/// all suspend with the fiber), each starting a flow to its resumption, and returns them.
open_handler* suspend_handlers() noexcept;
/// At the resumption: opens again on the calling thread what suspend_handlers() returned.
void resume_handlers(open_handler* innermost) noexcept;

/// Records its lifetime as the region `label` of `node` on the calling thread, when
/// tracing. For threads that do not suspend (an application thread's body, a balancer's
/// round): a region on a fiber would end on whichever thread resumed it.
class region_scope {
 public:
  region_scope(const char* label, std::uint32_t node) noexcept
      : label_(label), node_(node), begin_ns_(on() ? now_ns() : 0) {}
  region_scope(const region_scope&) = delete;
  region_scope& operator=(const region_scope&) = delete;
  ~region_scope() {
    if (begin_ns_ == 0 || !on()) return;
    event e;
    e.kind = event_kind::region;
    e.begin_ns = begin_ns_;
    e.end_ns = now_ns();
    e.label = label_;
    e.node = node_;
    record(e);
  }

 private:
  const char* label_;
  std::uint32_t node_;
  std::uint64_t begin_ns_;
};

/// Starts recording for this process (`process` names it in flow ids; `limit`: events per
/// thread). Call before the job's threads start.
void start(std::uint32_t process, std::uint32_t limit);
/// Stops recording. Call after the job's threads have ended (or no longer record).
void stop() noexcept;

/// How the writer names and places what the recorder kept.
struct trace_layout {
  /// The name of a handler event (its handler id and function token).
  std::function<std::string(std::uint32_t handler, std::uint64_t function)> handler_name;
  /// Added to every time stamp (nanoseconds): makes this process's clock the job's.
  std::int64_t shift_ns = 0;
};
/// What write_events() reports.
struct written {
  std::uint64_t events = 0;
  std::uint64_t dropped = 0;  ///< not kept: --roam-trace-limit
};
/// Writes every event this process kept as Chrome trace-event JSON objects, each line
/// starting with ",\n", and the metadata naming its nodes and threads. Call after stop().
/// Frees the buffers.
written write_events(std::ostream& out, const trace_layout& layout);

/// Writes `text` as a JSON string literal (quotes, escapes).
void write_json_string(std::ostream& out, std::string_view text);

}  // namespace roam::detail::trace
