#include <roam/base/error.hpp>
#include <roam/core/config.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

namespace roam {
namespace {

using setting_values::bytes;
using setting_values::choice;
using setting_values::count;
using setting_values::on_off;

// The count and switch settings differ only in their field (and bounds).
template <std::uint32_t config::*field, std::uint32_t min, std::uint32_t max>
void store_count(config& c, std::string_view v, const std::string& o) {
  c.*field = count(v, o, min, max);
}

template <bool config::*field>
void store_switch(config& c, std::string_view v, const std::string& o) {
  c.*field = on_off(v, o);
}

std::vector<setting<config>> core_settings() {
  return {
      {"transport", "ROAM_TRANSPORT", "auto|inproc|mpi",
       "auto: mpi when started by mpiexec with several ranks, else inproc", false,
       [](config& c, std::string_view v, const std::string& o) {
         constexpr transport_kind kinds[] = {transport_kind::automatic, transport_kind::inproc,
                                             transport_kind::mpi};
         c.transport = kinds[choice(v, o, {"auto", "inproc", "mpi"})];
       }},
      {"nodes", "ROAM_NODES", "1..4096", "virtual nodes of the inproc transport (default 1)", false,
       store_count<&config::nodes, 1, 4096>},
      {"nodes-per-rank", "ROAM_NODES_PER_RANK", "1..4096",
       "nodes hosted by each MPI rank (mixed mode; messages between nodes of one rank stay "
       "off MPI) (default 1)",
       false, store_count<&config::nodes_per_rank, 1, 4096>},
      {"threads", "ROAM_THREADS", "0..1024",
       "workers per node; 0 = hardware threads - 1 shared by the host's nodes (default 0)", false,
       store_count<&config::threads, 0, 1024>},
      {"comm-thread", "ROAM_COMM_THREAD", "on|off",
       "dedicated MPI communication thread; off: idle workers poll in turn (default off)", true,
       store_switch<&config::comm_thread>},
      {"inline-bytes", "ROAM_INLINE_BYTES", "0..65536",
       "largest payload sent inside the header message (default 512; never below the "
       "largest aggregation buffer up to 65536, so a full buffer is one message)",
       false, store_count<&config::inline_bytes, 0, 65536>},
      {"aggregate-bytes", "ROAM_AGGREGATE_BYTES", "0..16777216",
       "size of a channel's aggregation buffer per destination and thread; 0: no "
       "aggregation (default 8192)",
       false, store_count<&config::aggregate_bytes, 0, 16u << 20>},
      {"aggregate-growth", "ROAM_AGGREGATE_GROWTH", "1|2|4|..|64",
       "a buffer that keeps filling doubles, up to this many times --roam-aggregate-bytes; "
       "1: fixed size (default 4)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         const std::uint32_t g = count(v, o, 1, 64);
         if ((g & (g - 1)) != 0)
           throw config_error("invalid value '" + std::string(v) + "' for " + o +
                              ": expected a power of two in [1, 64]");
         c.aggregate_growth = g;
       }},
      {"send-window", "ROAM_SEND_WINDOW", "4K..1024M",
       "bytes one rank may have in flight to another before the receiver grants them back "
       "(mpi flow control; bytes, or K/M suffix) (default 256K)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.send_window_bytes = bytes(v, o, std::uint64_t{4} << 10, std::uint64_t{1} << 30);
       }},
      {"send-backlog", "ROAM_SEND_BACKLOG", "64K..64G",
       "unsent bytes a process may hold before an application thread that sends waits; "
       "handlers never wait (default 64M)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.send_backlog_bytes = bytes(v, o, std::uint64_t{64} << 10, std::uint64_t{64} << 30);
       }},
      {"inbox-limit", "ROAM_INBOX_LIMIT", "16..1000000000",
       "messages queued at a node by other nodes beyond which senders to it wait (default "
       "65536)",
       false, store_count<&config::inbox_limit, 16, 1000000000>},
      {"route-min-nodes", "ROAM_ROUTE_MIN_NODES", "0..4294967295",
       "jobs of this many nodes or more route channel messages (and direct sends that must "
       "stay in order with them) through a grid of the nodes: about 4 sqrt(nodes) buffers "
       "per thread instead of 2 x nodes, two steps per message; 0: never (default 1024)",
       false, store_count<&config::route_min_nodes, 0, 4294967295u>},
      {"lend-app-thread", "ROAM_LEND_APP_THREAD", "on|off",
       "a waiting application thread runs its node's work (default on)", true,
       store_switch<&config::lend_app_thread>},
      {"stack-size", "ROAM_STACK_SIZE", "16K..1024M",
       "stack of each handler and tasklet, and of each worker's loop (network progress, "
       "admitting arrivals); bytes, or K/M suffix; an overflow stops the job naming the "
       "handler (default 128K)",
       false,
       [](config& c, std::string_view v, const std::string& o) {
         c.stack_bytes = bytes(v, o, std::uint64_t{16} << 10, max_stack_bytes);
       }},
      {"max-suspended", "ROAM_MAX_SUSPENDED", "0..1000000000",
       "handlers and tasklets suspended at once in a process, each holding a stack; beyond, "
       "the job stops naming this setting (default 0: what vm.max_map_count leaves)",
       false, store_count<&config::max_suspended, 0, 1000000000>},
      {"pin", "ROAM_PIN", "on|off", "pin workers to cores with hwloc (default off)", true,
       store_switch<&config::pin>},
      {"spin-us", "ROAM_SPIN_US", "0..1000000",
       "microseconds an idle worker searches before parking (default 50)", false,
       store_count<&config::spin_us, 0, 1000000>},
      {"poll-us", "ROAM_POLL_US", "1..1000000",
       "network poll interval of parked threads, x10 while another thread of the node spins; "
       "after traffic the first sleeps are 1/8, 1/4, 1/2 of it (default 100)",
       false, store_count<&config::poll_us, 1, 1000000>},
      {"help", "ROAM_HELP", "on|off", "print this table and exit", true,
       store_switch<&config::help>},
  };
}

// Linking the core registers its settings (for --roam-help before any config is made).
[[maybe_unused]] const detail::settings_group& registered = config::registration();

// The node runtime's own settings are the fields of the config itself; every other layer's
// live in config::layers.
void* settings_target(void* context, const detail::settings_group& group) {
  auto& c = *static_cast<config*>(context);
  // registration(), not `registered`: a config made during static initialization (a global)
  // may come before this file's statics.
  return &group == &config::registration() ? static_cast<void*>(&c) : c.layers.get(group);
}

}  // namespace

const detail::settings_group& config::registration() {
  static const detail::settings_group& group =
      register_settings<config>("node runtime and transport (roam::config)", 20, core_settings());
  return group;
}

void config::set(std::string_view flag, std::string_view value) {
  (void)registration();
  detail::apply_setting(flag, value, settings_target, this);
}

config config::from_environment() {
  (void)registration();  // registered even when called during static initialization
  config c;
  detail::apply_environment(settings_target, &c);
  return c;
}

config config::from_args(int& argc, char** argv) {
  config c = from_environment();
  detail::apply_arguments(argc, argv, settings_target, &c);
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
  (void)registration();
  return detail::settings_help();
}

}  // namespace roam
