#include <roam/trace/detail/recorder.hpp>

#include <pthread.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace roam::detail::trace {

std::atomic<bool> recording{false};

namespace {

// Events are kept in chunks of this many (at most 4096, fewer when the limit is lower).
std::size_t chunk_events = 4096;

// One thread's events. Written only by its thread while the job records; read by the
// writer after stop(), when those threads no longer record.
struct thread_buffer {
  std::uint32_t index = 0;
  std::string name;
  std::int64_t home_node = -1;  ///< attach_thread(): the node it is a track of
  std::vector<std::unique_ptr<event[]>> chunks;
  std::uint64_t kept = 0;
  std::uint64_t dropped = 0;
  std::uint32_t flows = 0;
};

std::mutex buffers_lock;
std::vector<std::unique_ptr<thread_buffer>> buffers;  // guarded by buffers_lock
// Bumped by every start(): a thread's pointer to a buffer of an earlier job is stale.
std::atomic<std::uint64_t> generation{0};
std::uint64_t limit = 0;
std::uint64_t process_bits = 0;

struct thread_state {
  thread_buffer* buffer = nullptr;
  std::uint64_t generation = 0;
  open_handler* innermost = nullptr;
};
thread_local thread_state tl;

// Not inlined, like every function here that reads the thread-local state: a fiber that
// records may resume on another thread, and a caller must not reuse an address computed
// before the switch.
[[gnu::noinline]] thread_state& state() noexcept { return tl; }

thread_buffer* buffer_of(thread_state& s) noexcept {
  const std::uint64_t now = generation.load(std::memory_order_acquire);
  if (s.buffer != nullptr && s.generation == now) [[likely]]
    return s.buffer;
  try {
    auto b = std::make_unique<thread_buffer>();
    char name[32] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof name) != 0) name[0] = '\0';
    b->name = name;
    std::lock_guard guard(buffers_lock);
    b->index = static_cast<std::uint32_t>(buffers.size());
    s.buffer = b.get();
    s.generation = now;
    buffers.push_back(std::move(b));
    return s.buffer;
  } catch (...) {  // no memory for a buffer: this thread's events are lost, not the job
    return nullptr;
  }
}

void append(thread_buffer& b, const event& e) noexcept {
  if (b.kept >= limit) {
    ++b.dropped;
    return;
  }
  const std::size_t at = b.kept % chunk_events;
  if (at == 0) try {
      b.chunks.push_back(std::unique_ptr<event[]>(new event[chunk_events]));
    } catch (...) {
      ++b.dropped;
      return;
    }
  b.chunks.back()[at] = e;
  ++b.kept;
}

}  // namespace

std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

void attach_thread(std::uint32_t node) noexcept {
  if (thread_buffer* b = buffer_of(state())) b->home_node = node;
}

void record(const event& e) noexcept {
  if (thread_buffer* b = buffer_of(state())) append(*b, e);
}

std::uint64_t new_flow() noexcept {
  thread_buffer* b = buffer_of(state());
  // A thread that keeps no more events starts no flow: its start would not be recorded.
  if (b == nullptr || b->kept >= limit) return 0;
  // 20 bits of process (+1, so that no id is 0), 12 of thread, 32 of count: unique while
  // a process has at most 4096 recording threads and each starts fewer than 2^32 flows.
  return process_bits | (std::uint64_t{b->index & 0xfffu} << 32) | ++b->flows;
}

void begin_handler(open_handler& h) noexcept {
  thread_state& s = state();
  h.outer = s.innermost;
  s.innermost = &h;
  h.run.begin_ns = now_ns();
}

void begin_message_handler(open_handler& h, std::uint32_t handler, std::uint64_t function,
                           std::uint32_t node, std::uint64_t bytes, std::uint64_t flow) noexcept {
  h.run.handler = handler;
  h.run.function = function;
  h.run.node = node;
  h.run.bytes = event_bytes(bytes);
  h.run.flow = flow;
  begin_handler(h);
}

void end_handler(open_handler& h) noexcept {
  h.run.end_ns = now_ns();
  thread_state& s = state();
  s.innermost = h.outer;
  if (thread_buffer* b = buffer_of(s)) append(*b, h.run);
}

open_handler* innermost_handler() noexcept { return state().innermost; }

open_handler* suspend_handlers() noexcept {
  thread_state& s = state();
  open_handler* innermost = s.innermost;
  s.innermost = nullptr;
  const std::uint64_t now = now_ns();
  thread_buffer* b = buffer_of(s);
  for (open_handler* h = innermost; h != nullptr; h = h->outer) {
    h->run.end_ns = now;
    h->run.flow_out = new_flow();
    if (b != nullptr) append(*b, h->run);
    // The next run continues where this one stopped.
    h->run.flow = h->run.flow_out;
    h->run.flow_out = 0;
    ++h->run.part;
  }
  return innermost;
}

void resume_handlers(open_handler* innermost) noexcept {
  const std::uint64_t now = now_ns();
  for (open_handler* h = innermost; h != nullptr; h = h->outer) h->run.begin_ns = now;
  // Fibers are resumed only between items, from a worker's loop or a thread's own stack,
  // where no handler is open: the chain is all the thread has open.
  state().innermost = innermost;
}

void start(std::uint32_t process, std::uint32_t events_per_thread) {
  // Pointers that threads keep to an earlier job's buffers are stale before those go, and
  // again once the new job's parameters are set (a buffer registered in between is gone).
  generation.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard guard(buffers_lock);
    buffers.clear();
  }
  limit = events_per_thread;
  chunk_events = std::min<std::size_t>(4096, events_per_thread);
  process_bits = (std::uint64_t{process & 0xfffffu} + 1) << 44;
  generation.fetch_add(1, std::memory_order_acq_rel);
  recording.store(true, std::memory_order_release);
}

void stop() noexcept { recording.store(false, std::memory_order_release); }

// ---- writing ---------------------------------------------------------------------------

void write_json_string(std::ostream& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out << '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (u < 0x20 || u >= 0x80) {
      // Bytes above ASCII too: a thread's name cut at 15 bytes may end inside a UTF-8
      // character, which JSON readers reject; escaped, each byte reads as a Latin-1 one.
      out << "\\u00" << hex[u >> 4] << hex[u & 15];
    } else {
      out << c;
    }
  }
  out << '"';
}

namespace {

// Microseconds with nanosecond digits, as the trace-event format counts time.
void write_time(std::ostream& out, std::int64_t ns) {
  if (ns < 0) {
    out << '-';
    ns = -ns;
  }
  const std::int64_t fraction = ns % 1000;
  out << ns / 1000 << '.' << static_cast<char>('0' + fraction / 100)
      << static_cast<char>('0' + fraction / 10 % 10) << static_cast<char>('0' + fraction % 10);
}

// Flow ids as strings: JSON numbers beyond 2^53 lose digits in JavaScript viewers.
void write_id(std::ostream& out, std::uint64_t id) {
  out << "\"0x" << std::hex << id << std::dec << '"';
}

class event_writer {
 public:
  event_writer(std::ostream& out, const trace_layout& layout) : out_(out), layout_(layout) {}

  // The event's process and thread: a node is a process of the trace, a thread a track of it.
  void place(std::uint32_t node, std::uint32_t thread) {
    out_ << "\"pid\":" << node + 1 << ",\"tid\":" << thread + 1;
  }
  void stamp(const char* key, std::uint64_t ns) {
    out_ << ",\"" << key << "\":";
    write_time(out_, static_cast<std::int64_t>(ns) + layout_.shift_ns);
  }

  void flow(char phase, const char* category, std::uint64_t id, std::uint32_t node,
            std::uint32_t thread, std::uint64_t ns) {
    out_ << ",\n{\"ph\":\"" << phase << "\",";
    if (phase == 'f') out_ << "\"bp\":\"e\",";
    out_ << "\"cat\":\"" << category << "\",\"name\":\"" << category << "\",\"id\":";
    write_id(out_, id);
    out_ << ',';
    place(node, thread);
    stamp("ts", ns);
    out_ << '}';
  }

  // ",\n{" and the fields every slice and instant starts with. `phase`: "X" (a slice) or
  // "i" (an instant on its thread's track).
  void begin_event(const char* phase, const char* category, std::string_view name,
                   std::uint32_t node, std::uint32_t thread, std::uint64_t ns) {
    out_ << ",\n{\"ph\":\"" << phase << (phase[0] == 'i' ? "\",\"s\":\"t" : "") << "\",\"cat\":\""
         << category << "\",\"name\":";
    write_json_string(out_, name);
    out_ << ',';
    place(node, thread);
    stamp("ts", ns);
  }
  void duration(const event& e) {
    out_ << ",\"dur\":";
    write_time(out_, static_cast<std::int64_t>(e.end_ns - e.begin_ns));
  }
  // An object's id as roam's messages name it (home:index), and its type when known.
  void object(const event& e) {
    out_ << ",\"object\":\"" << e.object_home << ':' << e.value << '"';
    if (e.type != nullptr) {
      out_ << ",\"type\":";
      write_json_string(out_, e.type);
    }
  }

  void handler(const event& e, std::uint32_t thread) {
    begin_event("X", "handler", name_of(e.handler, e.function), e.node, thread, e.begin_ns);
    duration(e);
    out_ << ",\"args\":{\"bytes\":" << e.bytes << ",\"part\":" << e.part;
    if (e.value != 0) object(e);
    out_ << "}}";
    if (e.flow != 0)
      flow('f', e.part == 0 ? "message" : "resume", e.flow, e.node, thread, e.begin_ns);
    // Inside the run it leaves, which ends at end_ns: a flow binds to the slice around it.
    if (e.flow_out != 0)
      flow('s', "resume", e.flow_out, e.node, thread,
           e.end_ns > e.begin_ns ? e.end_ns - 1 : e.end_ns);
  }

  void region(const event& e, std::uint32_t thread) {
    begin_event("X", "roam", e.label, e.node, thread, e.begin_ns);
    duration(e);
    out_ << '}';
  }

  void instant(const event& e, std::uint32_t thread) {
    begin_event("i", "roam", e.label, e.node, thread, e.begin_ns);
    out_ << ",\"args\":{\"value\":" << e.value << "}}";
  }

  void counter(const event& e) {
    out_ << ",\n{\"ph\":\"C\",\"name\":";
    write_json_string(out_, e.label);
    out_ << ",\"pid\":" << e.node + 1;
    stamp("ts", e.begin_ns);
    const double value = std::bit_cast<double>(e.value);
    out_ << ",\"args\":{\"value\":";
    if (std::isfinite(value))
      out_ << value;
    else
      out_ << "null";  // JSON has no NaN or infinity (a load from a NaN cost)
    out_ << "}}";
  }

  void migration(const event& e, std::uint32_t thread) {
    begin_event("i", "migration", "object leaves", e.node, thread, e.begin_ns);
    out_ << ",\"args\":{\"to\":" << e.handler;
    object(e);
    out_ << "}}";
  }

  void dropped(const thread_buffer& b, std::uint32_t node, std::uint64_t last_ns) {
    begin_event("i", "roam", "trace limit reached (--roam-trace-limit)", node, b.index, last_ns);
    out_ << ",\"args\":{\"not_recorded\":" << b.dropped << "}}";
  }

  void metadata(const std::set<std::pair<std::uint32_t, std::uint32_t>>& tracks,
                const std::map<std::uint32_t, std::string>& thread_names) {
    std::uint32_t last_node = ~0u;
    for (const auto& [node, thread] : tracks) {
      if (node != last_node) {
        last_node = node;
        out_ << ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << node + 1
             << ",\"args\":{\"name\":\"node " << node << "\"}}";
        out_ << ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << node + 1
             << ",\"args\":{\"sort_index\":" << node << "}}";
      }
      out_ << ",\n{\"ph\":\"M\",\"name\":\"thread_name\",";
      place(node, thread);
      out_ << ",\"args\":{\"name\":";
      const auto name = thread_names.find(thread);
      write_json_string(out_, name != thread_names.end() && !name->second.empty()
                                  ? name->second
                                  : "thread " + std::to_string(thread));
      out_ << "}}";
    }
  }

 private:
  const std::string& name_of(std::uint32_t handler, std::uint64_t function) {
    auto [at, added] = names_.try_emplace({handler, function});
    if (added) at->second = layout_.handler_name(handler, function);
    return at->second;
  }

  std::ostream& out_;
  const trace_layout& layout_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::string> names_;
};

}  // namespace

written write_events(std::ostream& out, const trace_layout& layout) {
  std::vector<std::unique_ptr<thread_buffer>> taken;
  {
    std::lock_guard guard(buffers_lock);
    taken.swap(buffers);
  }
  generation.fetch_add(1, std::memory_order_acq_rel);  // threads that still point at them
  event_writer writer(out, layout);
  written total;
  std::set<std::pair<std::uint32_t, std::uint32_t>> tracks;
  std::map<std::uint32_t, std::string> names;
  for (const auto& b : taken) {
    names[b->index] = b->name;
    if (b->home_node >= 0) tracks.insert({static_cast<std::uint32_t>(b->home_node), b->index});
    std::uint32_t node = 0;
    std::uint64_t last_ns = 0;
    for (std::uint64_t i = 0; i < b->kept; ++i) {
      const event& e = b->chunks[i / chunk_events][i % chunk_events];
      node = e.node;
      last_ns = std::max(last_ns, e.end_ns > e.begin_ns ? e.end_ns : e.begin_ns);
      if (e.kind != event_kind::counter) tracks.insert({e.node, b->index});
      switch (e.kind) {
        case event_kind::handler:
          writer.handler(e, b->index);
          break;
        case event_kind::send:
          writer.flow('s', "message", e.flow, e.node, b->index, e.begin_ns);
          break;
        case event_kind::region:
          writer.region(e, b->index);
          break;
        case event_kind::instant:
          writer.instant(e, b->index);
          break;
        case event_kind::counter:
          writer.counter(e);
          break;
        case event_kind::migration:
          writer.migration(e, b->index);
          break;
      }
    }
    if (b->dropped != 0) {
      tracks.insert({node, b->index});
      writer.dropped(*b, node, last_ns);
    }
    total.events += b->kept;
    total.dropped += b->dropped;
  }
  writer.metadata(tracks, names);
  return total;
}

}  // namespace roam::detail::trace
