#include <roam/core/config.hpp>
#include <roam/core/error.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

namespace roam {
namespace {

struct setting {
  const char* flag;  // without the leading "--roam-"
  const char* env;
  const char* values;
  const char* meaning;
  bool is_switch;  // may appear without a value ("--roam-help", "--roam-pin")
  std::function<void(config&, std::string_view, const std::string& origin)> apply;
};

std::uint32_t parse_count(std::string_view text, const std::string& origin, std::uint32_t min,
                          std::uint32_t max) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < min || v > max)
    throw config_error("roam: invalid value '" + std::string(text) + "' for " + origin +
                       ": expected an integer in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "]");
  return static_cast<std::uint32_t>(v);
}

double parse_real(std::string_view text, const std::string& origin, double min, double max) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !(v >= min && v <= max))
    throw config_error("roam: invalid value '" + std::string(text) + "' for " + origin +
                       ": expected a number in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "]");
  return v;
}

// A size in bytes with an optional binary suffix: 262144, 256K, 256KiB, 1M, 1MiB, 1G.
std::uint64_t parse_bytes(std::string_view text, const std::string& origin, std::uint64_t min,
                          std::uint64_t max) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    shift = 10;
  else if (suffix == "M" || suffix == "MiB")
    shift = 20;
  else if (suffix == "G" || suffix == "GiB")
    shift = 30;
  else if (!suffix.empty())
    ec = std::errc::invalid_argument;
  const bool fits = ec == std::errc{} && end != text.data() && (v << shift >> shift) == v;
  v <<= shift;
  if (!fits || v < min || v > max)
    throw config_error("roam: invalid value '" + std::string(text) + "' for " + origin +
                       ": expected a size in [" + std::to_string(min >> 10) + "K, " +
                       std::to_string(max >> 20) + "M] (bytes, or with a K, M or G suffix)");
  return v;
}

bool parse_bool(std::string_view text, const std::string& origin) {
  if (text == "1" || text == "on" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "off" || text == "false" || text == "no") return false;
  throw config_error("roam: invalid value '" + std::string(text) + "' for " + origin +
                     ": expected on|off (or 1|0, true|false, yes|no)");
}

const std::vector<setting>& settings() {
  static const std::vector<setting> table = {
      {"transport", "ROAM_TRANSPORT", "auto|inproc|mpi",
       "auto: mpi when started by mpiexec with several ranks, else inproc", false,
       [](config& c, std::string_view v, const std::string& o) {
         if (v == "auto")
           c.transport = transport_kind::automatic;
         else if (v == "inproc")
           c.transport = transport_kind::inproc;
         else if (v == "mpi")
           c.transport = transport_kind::mpi;
         else
           throw config_error("roam: invalid value '" + std::string(v) + "' for " + o +
                              ": expected auto, inproc or mpi");
       }},
      {"nodes", "ROAM_NODES", "1..4096", "virtual nodes of the inproc transport (default 1)", false,
       [](config& c, std::string_view v, const std::string& o) {
         c.nodes = parse_count(v, o, 1, 4096);
       }},
      {"threads", "ROAM_THREADS", "0..1024",
       "workers per node; 0 = hardware threads - 1 shared by the host's nodes (default 0)", false,
       [](config& c, std::string_view v, const std::string& o) {
         c.threads = parse_count(v, o, 0, 1024);
       }},
      {"comm-thread", "ROAM_COMM_THREAD", "on|off",
       "dedicated MPI communication thread; off: idle workers poll in turn (default off)", true,
       [](config& c, std::string_view v, const std::string& o) {
         c.comm_thread = parse_bool(v, o);
       }},
      {"inline-bytes", "ROAM_INLINE_BYTES", "0..65536",
       "largest payload sent inside the header message (default 512; never below the "
       "largest aggregation buffer up to 65536, so a full buffer is one message)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.inline_bytes = parse_count(v, o, 0, 65536);
       }},
      {"aggregate-bytes", "ROAM_AGGREGATE_BYTES", "0..16777216",
       "size of a channel's aggregation buffer per destination and thread; 0: no "
       "aggregation (default 8192)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.aggregate_bytes = parse_count(v, o, 0, 16u << 20);
       }},
      {"aggregate-growth", "ROAM_AGGREGATE_GROWTH", "1|2|4|..|64",
       "a buffer that keeps filling doubles, up to this many times --roam-aggregate-bytes; "
       "1: fixed size (default 4)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         const std::uint32_t g = parse_count(v, o, 1, 64);
         if ((g & (g - 1)) != 0)
           throw config_error("roam: invalid value '" + std::string(v) + "' for " + o +
                              ": expected a power of two in [1, 64]");
         c.aggregate_growth = g;
       }},
      {"lend-app-thread", "ROAM_LEND_APP_THREAD", "on|off",
       "a waiting application thread runs its node's work (default on)", true,
       [](config& c, std::string_view v, const std::string& o) {
         c.lend_app_thread = parse_bool(v, o);
       }},
      {"stack-size", "ROAM_STACK_SIZE", "16K..1024M",
       "stack of each handler and tasklet (bytes, or K/M suffix); an overflow stops the job "
       "naming the handler (default 128K)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.stack_bytes = parse_bytes(v, o, std::uint64_t{16} << 10, max_stack_bytes);
       }},
      {"pin", "ROAM_PIN", "on|off", "pin workers to cores with hwloc (default off)", true,
       [](config& c, std::string_view v, const std::string& o) { c.pin = parse_bool(v, o); }},
      {"spin-us", "ROAM_SPIN_US", "0..1000000",
       "microseconds an idle worker searches before parking (default 50)", false,
       [](config& c, std::string_view v, const std::string& o) {
         c.spin_us = parse_count(v, o, 0, 1000000);
       }},
      {"poll-us", "ROAM_POLL_US", "1..1000000",
       "network poll interval of parked threads, x10 while another thread of the node spins; "
       "after traffic the first sleeps are 1/8, 1/4, 1/2 of it (default 100)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.poll_us = parse_count(v, o, 1, 1000000);
       }},
      {"lb", "ROAM_LB", "name",
       "load balancing: none, work_stealing, diffusion, master_worker, greedy_refine, or a "
       "registered policy (default work_stealing)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         if (v.empty())
           throw config_error("roam: empty value for " + o + ": expected a policy name");
         c.lb = std::string(v);
       }},
      {"lb-period-us", "ROAM_LB_PERIOD_US", "10..60000000",
       "the balancing period: how often a node runs its policy (sooner when a worker runs out of "
       "work); greedy_refine's round period (default 2000)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.lb_period_us = parse_count(v, o, 10, 60000000);
       }},
      {"lb-threshold", "ROAM_LB_THRESHOLD", "0..1e9",
       "load below which a node asks for work (diffusion, master_worker; default 1)", false,
       [](config& c, std::string_view v, const std::string& o) {
         c.lb_threshold = parse_real(v, o, 0, 1e9);
       }},
      {"lb-neighbors", "ROAM_LB_NEIGHBORS", "1..4096", "diffusion neighbourhood size (default 2)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.lb_neighbors = parse_count(v, o, 1, 4096);
       }},
      {"lb-tolerance", "ROAM_LB_TOLERANCE", "0..10",
       "greedy_refine: the makespan above the lower bound it leaves alone, and the least gain "
       "worth moving for; diffusion, master_worker: relative load difference worth a request "
       "(a fraction; default 0.05)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.lb_tolerance = parse_real(v, o, 0, 10);
       }},
      {"lb-master", "ROAM_LB_MASTER", "0..4095", "master_worker's master node (default 0)", false,
       [](config& c, std::string_view v, const std::string& o) {
         c.lb_master = parse_count(v, o, 0, 4095);
       }},
      {"help", "ROAM_HELP", "on|off", "print this table and exit", true,
       [](config& c, std::string_view v, const std::string& o) { c.help = parse_bool(v, o); }},
  };
  return table;
}

void apply_environment(config& c) {
  for (const auto& s : settings())
    if (const char* v = std::getenv(s.env))
      s.apply(c, v, std::string("environment variable ") + s.env);
}

}  // namespace

config config::from_environment() {
  config c;
  apply_environment(c);
  return c;
}

config config::from_args(int& argc, char** argv) {
  config c = from_environment();
  int out = argc > 0 ? 1 : 0;
  for (int i = out; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.rfind("--roam-", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    std::string_view body = arg.substr(7);
    std::string_view name = body.substr(0, body.find('='));
    const setting* match = nullptr;
    for (const auto& s : settings())
      if (name == s.flag) match = &s;
    if (!match)
      throw config_error("roam: unknown flag '" + std::string(arg) +
                         "'; run with --roam-help for the list");
    std::string origin = "--roam-" + std::string(name);
    std::string value;
    if (body.size() > name.size()) {
      value = std::string(body.substr(name.size() + 1));
    } else if (match->is_switch) {
      // A switch takes the next argument only if it is a boolean word, so that
      // "--roam-pin input.txt" leaves input.txt to the application.
      static constexpr std::string_view words[] = {"on",   "off",   "1",   "0",
                                                   "true", "false", "yes", "no"};
      bool next_is_word = false;
      if (i + 1 < argc)
        for (auto w : words) next_is_word = next_is_word || w == argv[i + 1];
      value = next_is_word ? argv[++i] : "on";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw config_error("roam: flag " + origin + " needs a value (" + match->values + ")");
    }
    match->apply(c, value, origin);
  }
  if (argc > 0) argv[out] = nullptr;
  argc = out;
  return c;
}

std::uint32_t config::frame_payload_bytes() const noexcept {
  // Up to 64 KiB: every posted receive of the mpi transport holds a frame, and larger
  // buffers gain little from saving one message each.
  constexpr std::uint32_t largest_aggregated_frame = 65536;
  const std::uint64_t largest_bundle = std::uint64_t{aggregate_bytes} * aggregate_growth;
  return std::max(inline_bytes, static_cast<std::uint32_t>(std::min<std::uint64_t>(
                                    largest_bundle, largest_aggregated_frame)));
}

std::string config::help_text() {
  std::ostringstream os;
  os << "roam runtime settings (flag overrides environment variable):\n";
  for (const auto& s : settings()) {
    std::string flag = std::string("--roam-") + s.flag;
    os << "  " << flag << std::string(flag.size() < 20 ? 20 - flag.size() : 1, ' ') << s.env
       << std::string(std::strlen(s.env) < 20 ? 20 - std::strlen(s.env) : 1, ' ') << s.values
       << "\n      " << s.meaning << "\n";
  }
  return os.str();
}

}  // namespace roam
