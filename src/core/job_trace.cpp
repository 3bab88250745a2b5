#include "job_trace.hpp"

#include "node_runtime.hpp"
#include "process_runtime.hpp"

#include <roam/base/detail/fatal.hpp>
#include <roam/base/detail/message_text.hpp>
#include <roam/core/detail/function_symbol.hpp>
#include <roam/trace/detail/recorder.hpp>
#include <roam/trace/trace_settings.hpp>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <locale>
#include <map>
#include <string_view>
#include <vector>

namespace roam::detail {

namespace {

// The top-level arguments of `name`'s template, when it is `wrapper<...>`.
std::vector<std::string> template_arguments(std::string_view name, std::string_view wrapper) {
  if (name.substr(0, wrapper.size()) != wrapper || name.size() < wrapper.size() + 2 ||
      name[wrapper.size()] != '<' || name.back() != '>')
    return {};
  std::vector<std::string> out(1);
  int depth = 0;
  for (const char c : name.substr(wrapper.size() + 1, name.size() - wrapper.size() - 2)) {
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    if (!(c == ' ' && out.back().empty())) out.back() += c;
  }
  return out;
}

void erase_all(std::string& text, std::string_view part) {
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at))
    text.erase(at, part.size());
}

}  // namespace

std::string trace_handler_name(std::string registered) {
  erase_all(registered, "roam::detail::");
  erase_all(registered, "{anonymous}::");
  erase_all(registered, "(anonymous namespace)::");
  if (auto a = template_arguments(registered, "method_kind"); a.size() == 3 && a[0][0] == '&')
    return a[0].substr(1);
  if (auto a = template_arguments(registered, "callable_kind"); a.size() == 3)
    return "callable on " + a[2];
  if (auto a = template_arguments(registered, "constructor_handler"); !a.empty())
    return "construct " + a[0];
  if (auto a = template_arguments(registered, "mobile_type"); a.size() == 1)
    return "install " + a[0];
  return registered;
}

std::string trace_part_file(const std::string& file, node_id rank) {
  return rank == 0 ? file : file + ".part" + std::to_string(rank);
}

std::string trace_file_of_run(const std::string& file, unsigned run) {
  if (run <= 1) return file;
  std::filesystem::path path(file);
  // A name that starts with its only dot (".trace") is all stem, no extension.
  const std::string extension = path.extension().string();
  path.replace_filename(path.stem().string() + ".run" + std::to_string(run) + extension);
  return path.string();
}

namespace {

void say_write_failed(const std::string& file) {
  std::fprintf(stderr, "%s\n",
               error_text("error: writing the trace file '" + file +
                          "' failed (--roam-trace): the trace is incomplete")
                   .c_str());
}

}  // namespace

job_trace::job_trace(const config& cfg, transport& net, node_id rank, node_id ranks)
    : rank_(rank), ranks_(ranks) {
  const auto& settings = cfg.of<roam::trace::trace_settings>();
  if (settings.file.empty()) return;
  // Every process makes the same runs (SPMD): they agree on the count.
  static std::map<std::string, unsigned> runs_per_file;
  file_ = trace_file_of_run(settings.file, ++runs_per_file[settings.file]);
  const std::string mine = trace_part_file(file_, rank);
  out_.open(mine, std::ios::out | std::ios::trunc);
  out_.imbue(std::locale::classic());  // JSON numbers, whatever locale the application set
  if (!out_)
    fatal("cannot write the trace file '" + mine + "' (--roam-trace): " + std::strerror(errno));
  const transport::clock_alignment clocks = net.align_clocks();
  shift_ns_ = -(clocks.offset_ns + clocks.epoch_ns);
  if (rank == 0)
    // The first element: every later one (here and in the parts) starts with a comma.
    out_ << "{\"traceEvents\":[\n{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"roam\",\"name\":\"clocks "
            "aligned\",\"pid\":1,\"tid\":0,\"ts\":0.000}";
  trace::start(rank, settings.event_limit);
  active_ = true;
}

job_trace::~job_trace() {
  if (active_) trace::stop();
}

void job_trace::write_part() {
  if (!active_) return;
  trace::stop();
  trace::trace_layout layout;
  layout.handler_name = [](std::uint32_t handler, std::uint64_t function) {
    return trace_handler_name(handler_display_name(handler, function));
  };
  layout.shift_ns = shift_ns_;
  const trace::written w = trace::write_events(out_, layout);
  if (rank_ != 0)
    out_.close();
  else
    out_.flush();
  if (!out_) say_write_failed(trace_part_file(file_, rank_));
  if (w.dropped != 0)
    std::fprintf(
        stderr, "%s\n",
        error_text("warning: the trace of rank " + std::to_string(rank_) + " left out " +
                   std::to_string(w.dropped) + " events: threads reached --roam-trace-limit (" +
                   std::to_string(w.events) + " kept); the trace marks where")
            .c_str());
}

void job_trace::merge() {
  if (!active_ || rank_ != 0) return;
  active_ = false;
  std::string missing;
  for (node_id r = 1; r < ranks_; ++r) {
    const std::string part = trace_part_file(file_, r);
    std::ifstream in(part, std::ios::in | std::ios::binary);
    if (!in) {
      missing += (missing.empty() ? "" : ", ") + part;
      continue;
    }
    if (in.peek() != std::ifstream::traits_type::eof()) out_ << in.rdbuf();
    in.close();
    std::remove(part.c_str());
  }
  out_ << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"roam\",\"ranks\":" << ranks_
       << "}}\n";
  out_.close();
  if (!out_) say_write_failed(file_);
  if (!missing.empty())
    std::fprintf(stderr, "%s\n",
                 error_text("warning: the trace '" + file_ + "' lacks the parts " + missing +
                            ": rank 0 cannot read them (written on another file system?); "
                            "merge them with tools/trace_merge.py")
                     .c_str());
}

void trace_counters(node_runtime& n, std::uint64_t now) noexcept {
  std::uint64_t last = n.trace_sampled_ns.load(std::memory_order_relaxed);
  // Signed: another thread may have stored a later time than this one's.
  if (static_cast<std::int64_t>(now - last) < 1000000 ||
      !n.trace_sampled_ns.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  trace::event e;
  e.kind = trace::event_kind::counter;
  e.begin_ns = now;
  e.node = n.id();
  e.label = "arrivals waiting";
  e.value = std::bit_cast<std::uint64_t>(static_cast<double>(n.waiting_arrivals()));
  trace::record(e);
  e.label = "process's unsent bytes";
  e.value = std::bit_cast<std::uint64_t>(static_cast<double>(n.process().net().unsent_bytes()));
  trace::record(e);
}

traced_message_run::traced_message_run(node_runtime& n, message& m) noexcept {
  const message_header& h = m.header;
  trace::begin_message_handler(run_, h.handler, h.function, n.id(), h.payload_size, h.flow);
  m.header.flow = 0;
  trace_counters(n, run_.run.begin_ns);
}

traced_message_run::~traced_message_run() { trace::end_handler(run_); }

void trace_send(node_runtime& from, message& m) noexcept {
  message_header& h = m.header;
  if (h.flow != 0) return;  // forwarded: the arrow runs from its first send
  h.flow = trace::new_flow();
  if (h.flow == 0) return;
  trace::event e;
  e.kind = trace::event_kind::send;
  e.begin_ns = trace::now_ns();
  e.flow = h.flow;
  e.node = from.id();
  e.value = h.dest;
  e.bytes = trace::event_bytes(h.payload_size);
  trace::record(e);
  trace_counters(from, e.begin_ns);
}

}  // namespace roam::detail
