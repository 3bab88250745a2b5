#include <roam/trace/trace_settings.hpp>

namespace roam::trace {
namespace {

std::vector<setting<trace_settings>> tracing_settings() {
  return {
      {"trace", "ROAM_TRACE", "path",
       "write a Chrome/Perfetto trace of the job to this file at its end (default: no trace)",
       false,
       [](trace_settings& s, std::string_view v, const std::string&) { s.file = std::string(v); }},
      {"trace-limit", "ROAM_TRACE_LIMIT", "1000..1000000000",
       "events each thread records at most; the trace notes what it left out (default 1000000)",
       false,
       [](trace_settings& s, std::string_view v, const std::string& o) {
         s.event_limit = setting_values::count(v, o, 1000, 1000000000);
       }},
  };
}

// Linking the layer registers its settings, so that --roam-help lists them.
[[maybe_unused]] const detail::settings_group& registered = trace_settings::registration();

}  // namespace

const detail::settings_group& trace_settings::registration() {
  static const detail::settings_group& group = register_settings<trace_settings>(
      "tracing (roam::trace::trace_settings)", 90, tracing_settings());
  return group;
}

}  // namespace roam::trace
