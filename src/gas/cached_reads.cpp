// get, lget and rget through the calling node's cache; invalidation and phases.
#include "node_cache.hpp"
#include "process_memory.hpp"

#include <roam/am/collectives.hpp>
#include <roam/gas/cache.hpp>
#include <roam/gas/detail/operations.hpp>

#include <string>

namespace roam::gas {

namespace detail {

future<void> cached_get(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes,
                        std::byte* dest, cache_read mode) {
  const char* operation = mode == cache_read::cached_only ? "lget"
                          : mode == cache_read::refetch   ? "rget"
                                                          : "get";
  process_memory& m = process_memory::require(operation);
  const byte_run run{offset, bytes};
  // Memory the calling thread reads directly is read where it is: a copy would only go stale.
  if (a.slot == 0 || m.reads_directly(a.node)) return get_runs(a, {&run, 1}, dest, operation);
  if (a.policy == 0) {
    if (mode == cache_read::cached_only) {
      promise<void> refused;
      refused.set_exception(std::make_exception_ptr(
          memory_error("roam::gas::lget: allocation " + std::to_string(a.slot) + " on node " +
                       std::to_string(a.node) +
                       " has no cache policy: nothing of it is ever cached (allocate it with "
                       "cache_policy::keep or lru)")));
      return refused.get_future();
    }
    return get_runs(a, {&run, 1}, dest, operation);
  }
  return m.cache(operation).read({a.node, a.slot, a.generation, offset, bytes}, dest, mode,
                                 static_cast<cache_policy>(a.policy), [a, run](std::byte* into) {
                                   return get_runs(a, {&run, 1}, into, "get");
                                 });
}

bool read_cached(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes,
                 std::byte* dest) {
  const char* operation = "get";
  process_memory& m = process_memory::require(operation);
  if (a.policy == 0 || a.slot == 0 || m.reads_directly(a.node)) return false;
  return m.cache(operation).read_hit({a.node, a.slot, a.generation, offset, bytes}, dest);
}

}  // namespace detail

void invalidate() {
  detail::process_memory::require("roam::gas::invalidate")
      .cache("roam::gas::invalidate")
      .invalidate();
}

void end_phase() {
  roam::barrier();
  invalidate();
}

cache_statistics node_cache_statistics() {
  const char* caller = "roam::gas::node_cache_statistics";
  return detail::process_memory::require(caller).cache(caller).statistics();
}

}  // namespace roam::gas
