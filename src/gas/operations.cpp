// One-sided operations, routed: direct copies between heaps of this process, RMA under a
// lease to other processes (when the transport exposes memory), active messages to the
// owner otherwise (the fallback every node can take, and the first access before a lease).
#include "owner_side.hpp"
#include "process_memory.hpp"

#include <roam/am/collectives.hpp>
#include <roam/am/send.hpp>
#include <roam/core/runtime.hpp>
#include <roam/gas/detail/operations.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace roam::gas::detail {

namespace {

using roam::detail::node_runtime;

enum class route : std::uint8_t { direct, rma, messages };

/// How the calling thread reaches `node`'s memory: directly when a node of this process
/// hosts it (with --roam-gas-path am, only the calling thread's own node), by RMA when the
/// processes exposed their memory, by active messages otherwise.
route route_to(process_memory& m, node_id node) {
  if (m.reads_directly(node)) return route::direct;
  return m.hosts(node) || !m.window() ? route::messages : route::rma;
}

template <class T>
future<T> failed(std::exception_ptr error) {
  promise<T> p;
  p.set_exception(std::move(error));
  return p.get_future();
}

memory_error null_pointer(const char* operation) {
  return memory_error(std::string("roam::gas::") + operation + ": the pointer is null");
}

/// Copies by RMA when this process holds a lease on `a`, and returns true; else asks for one
/// and returns false (the caller goes through the owner). Runs beyond the allocation are
/// roam::memory_error. The lease table is held shared until the copy is complete, so a
/// recall of the lease waits for it.
bool copied_under_lease(process_memory& m, const allocation_ref& a, std::span<const byte_run> runs,
                        std::byte* packed, bool is_put, const char* operation) {
  {
    std::shared_lock held(m.leases().guard());
    if (const auto lease = m.leases().find(a.node, a.slot, a.generation)) {
      std::array<roam::detail::exposed_run, 4> few;
      std::vector<roam::detail::exposed_run> many;
      if (runs.size() > few.size()) many.resize(runs.size());
      const std::span<roam::detail::exposed_run> remote =
          runs.size() > few.size() ? std::span(many) : std::span(few).first(runs.size());
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const byte_run& r = runs[i];
        if (r.offset < lease->begin || r.offset > lease->end || r.bytes > lease->end - r.offset)
          throw memory_error(node_heap::out_of_bounds(operation, a.node, a.slot, a.generation,
                                                      r.offset, r.bytes, lease->begin, lease->end));
        remote[i] = {m.window_offset(a.node, a.slot, r.offset), r.bytes};
      }
      if (is_put)
        m.window()->put(m.process_of(a.node), remote, packed);
      else
        m.window()->get(m.process_of(a.node), remote, packed);
      return true;
    }
  }
  request_lease(m, a);
  return false;
}

void count(process_memory& m, route r, std::span<const byte_run> runs) {
  process_memory::counters& c = m.counted("roam::gas");
  (r == route::direct ? c.direct
   : r == route::rma  ? c.rma
                      : c.messages)
      .fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(total_bytes(runs), std::memory_order_relaxed);
}

/// Runs `local()` (a copy or atomic in this process) and returns its result as a ready
/// future, or its roam::memory_error as a failed one.
template <class T, class Body>
future<T> done_here(Body&& local) {
  try {
    if constexpr (std::is_void_v<T>) {
      local();
      return make_ready_future();
    } else {
      return make_ready_future(local());
    }
  } catch (const memory_error&) {
    return failed<T>(std::current_exception());
  }
}

}  // namespace

namespace {

/// A put (`is_put`: `packed` is read) or a get (`packed` is written) by whichever path reaches
/// `a`'s node.
future<void> transfer(const allocation_ref& a, std::span<const byte_run> runs, std::byte* packed,
                      bool is_put, const char* operation) {
  process_memory& m = process_memory::require(operation);
  if (a.slot == 0) return failed<void>(std::make_exception_ptr(null_pointer(operation)));
  const route r = route_to(m, a.node);
  switch (r) {
    case route::direct:
      count(m, r, runs);
      return done_here<void>([&] {
        if (is_put)
          copy_in(m, a, runs, packed, operation);
        else
          copy_out(m, a, runs, packed, operation);
      });
    case route::rma:
      try {
        if (copied_under_lease(m, a, runs, packed, is_put, operation)) {
          count(m, r, runs);
          return make_ready_future();
        }
      } catch (const memory_error&) {
        return failed<void>(std::current_exception());
      }
      break;
    case route::messages:
      break;
  }
  count(m, route::messages, runs);
  return is_put ? request_put(a, runs, packed) : request_get(a, runs, packed);
}

}  // namespace

future<void> put_runs(const allocation_ref& a, std::span<const byte_run> runs,
                      const std::byte* packed, const char* operation) {
  // Only read on this path: the pointer's constness comes back in transfer().
  return transfer(a, runs, const_cast<std::byte*>(packed), true, operation);
}

future<void> get_runs(const allocation_ref& a, std::span<const byte_run> runs, std::byte* packed,
                      const char* operation) {
  return transfer(a, runs, packed, false, operation);
}

future<void> put_runs_then(const allocation_ref& a, std::span<const byte_run> runs,
                           const std::byte* packed, roam::detail::message_ptr handler) {
  const char* operation = "put_then";
  process_memory& m = process_memory::require(operation);
  node_runtime& self = roam::detail::sending_node("roam::gas::put_then");
  if (a.slot == 0) return failed<void>(std::make_exception_ptr(null_pointer(operation)));
  if (route_to(m, a.node) == route::direct) {
    try {
      copy_in(m, a, runs, packed, operation);
    } catch (const memory_error&) {
      return failed<void>(std::current_exception());
    }
    roam::detail::post(self, std::move(handler));
    return make_ready_future();
  }
  return request_put_then(a, runs, packed, std::move(handler));
}

future<global_ptr<void>> allocate_bytes(node_id node, std::uint64_t bytes, std::uint8_t policy) {
  process_memory& m = process_memory::require("roam::gas::allocate");
  if (node >= roam::num_nodes())
    throw usage_error("roam::gas::allocate: node " + std::to_string(node) +
                      " is out of range (the job has " + std::to_string(roam::num_nodes()) +
                      " nodes)");
  if (route_to(m, node) == route::direct)
    return done_here<global_ptr<void>>([&] {
      const node_heap::block b = m.dynamic_heap(node).allocate(bytes);
      return ptr_access::make<void>(node, b.slot, b.generation, b.offset, policy);
    });
  return request_allocate(node, bytes).then([node, policy](std::array<std::uint64_t, 3> b) {
    return ptr_access::make<void>(node, static_cast<std::uint32_t>(b[0]),
                                  static_cast<std::uint16_t>(b[1]), b[2], policy);
  });
}

future<void> deallocate(const allocation_ref& a, std::uint64_t offset) {
  process_memory& m = process_memory::require("roam::gas::deallocate");
  if (a.slot == 0) return failed<void>(std::make_exception_ptr(null_pointer("deallocate")));
  try {
    if (route_to(m, a.node) != route::direct) return request_deallocate(a, offset);
    if (a.slot & node_heap::symmetric_slot)
      throw memory_error(
          "roam::gas::deallocate: the pointer names a symmetric allocation (a gvar's or a "
          "distributed_array's), which is freed by destroying it on every node");
    return release(m, a, offset);
  } catch (...) {
    return failed<void>(std::current_exception());
  }
}

std::byte* local_address(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes,
                         const char* operation) {
  process_memory& m = process_memory::require(operation);
  if (a.slot == 0) throw null_pointer(operation);
  if (!m.hosts(a.node)) return nullptr;
  return m.heap_of(a.node, a.slot).resolve(a.slot, a.generation, offset, bytes, operation);
}

future<std::uint64_t> atomic_bits(const allocation_ref& a, std::uint64_t offset, atomic_kind kind,
                                  unsigned width, bool is_signed, std::uint64_t operand,
                                  std::uint64_t desired) {
  process_memory& m = process_memory::require("roam::gas::atomic");
  if (a.slot == 0) return failed<std::uint64_t>(std::make_exception_ptr(null_pointer("atomic")));
  // Atomics are applied by the owner's process (not by RMA): MPI's atomics are atomic only
  // among themselves, not with the owner's own.
  if (route_to(m, a.node) == route::direct)
    return done_here<std::uint64_t>(
        [&] { return apply_atomic(m, a, offset, kind, width, is_signed, operand, desired); });
  return request_atomic(a, offset, kind, width, is_signed, operand, desired);
}

global_ptr<void> allocate_symmetric(std::uint64_t bytes, const std::byte* pattern,
                                    std::size_t pattern_bytes, std::uint8_t policy,
                                    const char* caller) {
  node_runtime& n = roam::detail::require_node(caller);
  const node_id self = roam::detail::id_of(n);
  process_memory& m = process_memory::require(caller);
  node_heap& heap = m.symmetric_heap(self);
  // A node whose allocation fails still takes part in the check below, so that every node
  // learns of it instead of waiting for it.
  node_heap::block b;
  std::exception_ptr failure;
  try {
    b = heap.allocate(bytes);
    std::byte* mine = heap.resolve(b.slot, b.generation, b.offset, bytes, caller);
    for (std::uint64_t at = 0; pattern_bytes != 0 && at + pattern_bytes <= bytes;
         at += pattern_bytes)
      std::memcpy(mine + at, pattern, pattern_bytes);
  } catch (const memory_error&) {
    failure = std::current_exception();
  }
  // Every node must have made the same symmetric allocations in the same order: the lowest
  // and the highest (slot, generation, offset, bytes) of the nodes agree only then. A node
  // that failed contributes a signature no allocation has.
  const std::uint64_t signature =
      failure ? ~std::uint64_t{0} : (std::uint64_t{b.slot} << 16 | b.generation) ^ (b.offset << 1);
  std::array<std::uint64_t, 5> all{signature, bytes, ~signature, ~bytes, failure ? 1u : 0u};
  all = roam::allreduce(
      all, [](const std::array<std::uint64_t, 5>& x, const std::array<std::uint64_t, 5>& y) {
        std::array<std::uint64_t, 5> r{};
        for (std::size_t i = 0; i < 4; ++i) r[i] = std::min(x[i], y[i]);
        r[4] = std::max(x[4], y[4]);
        return r;
      });
  const bool agreed = all[0] == ~all[2] && all[1] == ~all[3] && all[4] == 0;
  if (agreed) return ptr_access::make<void>(self, b.slot, b.generation, b.offset, policy);
  if (!failure) (void)heap.start_release(b.slot, b.generation);  // no node holds a lease yet
  if (failure) std::rethrow_exception(failure);
  if (all[4] != 0)
    throw memory_error(std::string(caller) +
                       ": another node could not make its part (its symmetric heap is full: "
                       "--roam-gas-symmetric-heap)");
  throw usage_error(std::string(caller) +
                    ": the nodes made different symmetric allocations (another size, or not in "
                    "the same order): gvar and distributed_array are built by every node, in the "
                    "same order, with the same size");
}

void deallocate_symmetric(const global_ptr<void>& p) noexcept {
  process_memory* m = process_memory::current();
  if (!m || !m->hosts(p.where())) return;
  try {
    release(*m, ref_of(p), ptr_access::offset(p)).get();
  } catch (const memory_error&) {
    // Freed with the job's memory already (destroyed after roam::run): nothing to free.
  } catch (const std::exception& e) {
    roam::detail::fatal(std::string("roam::gas: freeing a gvar or distributed_array: ") + e.what());
  }
}

}  // namespace roam::gas::detail
