#include <roam/gas/gas_settings.hpp>

#include <vector>

namespace roam::gas {
namespace {

using namespace roam::setting_values;

std::vector<setting<gas_settings>> global_memory_settings() {
  return {
      {"gas-heap", "ROAM_GAS_HEAP", "64K..1024G",
       "bytes of each node's global heap for roam::gas::allocate; bytes, or K/M/G suffix "
       "(default 32M)",
       false,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.heap_bytes = bytes(v, o, std::uint64_t{64} << 10, std::uint64_t{1} << 40);
       }},
      {"gas-symmetric-heap", "ROAM_GAS_SYMMETRIC_HEAP", "64K..1024G",
       "bytes of each node's symmetric heap, for gvar and distributed_array (default 32M)", false,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.symmetric_heap_bytes = bytes(v, o, std::uint64_t{64} << 10, std::uint64_t{1} << 40);
       }},
      {"gas-max-allocations", "ROAM_GAS_MAX_ALLOCATIONS", "16..16777216",
       "live allocations each node's global heap may hold (default 65536)", false,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.max_allocations = count(v, o, 16, 1u << 24);
       }},
      {"gas-cache-bytes", "ROAM_GAS_CACHE_BYTES", "0..1024G",
       "bytes of each node's cache of remote global memory (default 64M)", false,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.cache_bytes = bytes(v, o, 0, std::uint64_t{1} << 40);
       }},
      {"gas-cache-shards", "ROAM_GAS_CACHE_SHARDS", "1..1024",
       "shards of each node's cache, each with its own lock and LRU order (default 16)", false,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.cache_shards = count(v, o, 1, 1024);
       }},
      {"gas-ward-check", "ROAM_GAS_WARD_CHECK", "on|off",
       "WARD regions report a read-after-write across nodes at close (debugging; default off)",
       true,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.ward_check = on_off(v, o);
       }},
      {"gas-path", "ROAM_GAS_PATH", "auto|am",
       "how one-sided operations reach other nodes' memory: auto (direct copies inside a "
       "process, MPI RMA between processes, active messages where neither serves) or am "
       "(active messages to every other node) (default auto)",
       false,
       [](gas_settings& s, std::string_view v, const std::string& o) {
         s.path = choice(v, o, {"auto", "am"}) == 0 ? path::automatic : path::active_messages;
       }},
  };
}

// Linking the layer registers its settings, so that --roam-help lists them.
[[maybe_unused]] const roam::detail::settings_group& registered = gas_settings::registration();

}  // namespace

const roam::detail::settings_group& gas_settings::registration() {
  static const roam::detail::settings_group& group = register_settings<gas_settings>(
      "global memory (roam::gas::gas_settings)", 45, global_memory_settings());
  return group;
}

}  // namespace roam::gas
