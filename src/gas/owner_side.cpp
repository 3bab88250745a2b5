// The owner's side of global memory, and the active messages that ask for it.
#include "owner_side.hpp"

#include <roam/am/send.hpp>
#include <roam/core/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

namespace roam::gas::detail {

namespace {

using roam::detail::node_runtime;

/// Room a request takes besides its data: the header, the allocation, the run list's length.
constexpr std::uint64_t request_overhead = 512;

/// Checks every run against the allocation (nothing is copied when one is out of bounds)
/// and returns the allocation's extent.
node_heap::extent checked_extent(process_memory& m, const allocation_ref& a,
                                 std::span<const byte_run> runs, const char* operation) {
  if (a.slot == 0)
    throw memory_error(std::string("roam::gas::") + operation + ": the pointer is null");
  node_heap& heap = m.heap_of(a.node, a.slot);
  const node_heap::extent e = heap.extent_of(a.slot, a.generation, operation);
  for (const byte_run& r : runs)
    if (!e.holds(r.offset, r.bytes))
      heap.refuse(a.slot, a.generation, r.offset, r.bytes, operation);
  return e;
}

allocation_ref owned(std::uint32_t slot, std::uint16_t generation) {
  return {roam::this_node(), slot, generation};
}

struct put_request {
  void operator()(std::uint32_t slot, std::uint16_t generation, const std::vector<byte_run>& runs,
                  const buffer<std::byte>& data) const {
    if (total_bytes(runs) != data.size())
      throw deserialization_error("roam::gas::put: a request's runs do not match its data");
    copy_in(process_memory::require("roam::gas::put"), owned(slot, generation), runs, data.data(),
            "put");
  }
};

/// The message a put_then runs on the owner, rebuilt from what its request carried.
roam::detail::message_ptr handler_message(std::uint32_t handler, std::uint64_t function,
                                          const std::vector<std::byte>& payload) {
  roam::detail::message_ptr m = roam::detail::message::allocate(payload.size());
  m->header.handler = handler;
  m->header.function = function;
  m->header.dest = roam::this_node();
  m->header.payload_size = payload.size();
  if (!payload.empty()) std::memcpy(m->payload(), payload.data(), payload.size());
  return m;
}

struct put_then_request {
  void operator()(std::uint32_t slot, std::uint16_t generation, const std::vector<byte_run>& runs,
                  std::uint32_t handler, std::uint64_t function,
                  const std::vector<std::byte>& handler_payload,
                  const buffer<std::byte>& data) const {
    put_request{}(slot, generation, runs, data);
    roam::detail::post(roam::detail::require_node("roam::gas::put_then"),
                       handler_message(handler, function, handler_payload));
  }
};

struct get_request {
  buffer<std::byte> operator()(std::uint32_t slot, std::uint16_t generation,
                               const std::vector<byte_run>& runs) const {
    buffer<std::byte> data(total_bytes(runs));
    copy_out(process_memory::require("roam::gas::get"), owned(slot, generation), runs, data.data(),
             "get");
    return data;
  }
};

struct allocate_request {
  std::array<std::uint64_t, 3> operator()(std::uint64_t bytes) const {
    const node_heap::block b = process_memory::require("roam::gas::allocate")
                                   .dynamic_heap(roam::this_node())
                                   .allocate(bytes);
    return {b.slot, b.generation, b.offset};
  }
};

struct deallocate_request {
  void operator()(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset) const {
    const allocation_ref a = owned(slot, generation);
    if (a.slot & node_heap::symmetric_slot)
      throw memory_error(
          "roam::gas::deallocate: the pointer names a symmetric allocation (a gvar's or a "
          "distributed_array's), which is freed by destroying it on every node");
    release(process_memory::require("roam::gas::deallocate"), a, offset).get();
  }
};

struct lease_request {
  std::array<std::uint64_t, 2> operator()(std::uint32_t slot, std::uint16_t generation,
                                          std::uint32_t holder) const {
    process_memory& m = process_memory::require("roam::gas (a lease)");
    const node_heap::extent e =
        m.heap_of(roam::this_node(), slot).lease(slot, generation, holder, "get");
    return {e.begin, e.end};
  }
};

struct recall_request {
  void operator()(node_id owner, std::uint32_t slot, std::uint16_t generation) const {
    process_memory::require("roam::gas (a recall)").leases().recall(owner, slot, generation);
  }
};

struct atomic_request {
  std::uint64_t operator()(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset,
                           std::uint8_t kind, std::uint8_t width, bool is_signed,
                           std::uint64_t operand, std::uint64_t desired) const {
    if (kind > static_cast<std::uint8_t>(atomic_kind::compare_exchange) ||
        (width != 4 && width != 8))
      throw deserialization_error("roam::gas: an atomic request names no operation");
    return apply_atomic(process_memory::require("roam::gas::atomic"), owned(slot, generation),
                        offset, static_cast<atomic_kind>(kind), width, is_signed, operand, desired);
  }
};

template <class I>
I apply_typed(I& target, atomic_kind kind, I operand, I desired) {
  std::atomic_ref<I> cell(target);
  switch (kind) {
    case atomic_kind::load:
      return cell.load();
    case atomic_kind::store:
      cell.store(operand);
      return operand;
    case atomic_kind::exchange:
      return cell.exchange(operand);
    case atomic_kind::fetch_add:
      return cell.fetch_add(operand);
    case atomic_kind::fetch_min: {
      I seen = cell.load();
      while (operand < seen && !cell.compare_exchange_weak(seen, operand)) {
      }
      return seen;
    }
    case atomic_kind::fetch_max: {
      I seen = cell.load();
      while (operand > seen && !cell.compare_exchange_weak(seen, operand)) {
      }
      return seen;
    }
    case atomic_kind::compare_exchange:
      cell.compare_exchange_strong(operand, desired);
      return operand;  // the value seen: the expected one when it succeeded
  }
  return I{};
}

future<void> joined(std::vector<future<void>> pieces) {
  if (pieces.size() == 1) return std::move(pieces.front());
  return when_all(std::move(pieces));
}

}  // namespace

std::uint64_t request_limit(node_id dest) {
  node_runtime& n = roam::detail::sending_node("roam::gas");
  const std::uint64_t largest = roam::detail::largest_message_to(n, dest);
  return largest > 2 * request_overhead ? largest - request_overhead : request_overhead;
}

void copy_in(process_memory& m, const allocation_ref& a, std::span<const byte_run> runs,
             const std::byte* packed, const char* operation) {
  const node_heap::extent e = checked_extent(m, a, runs, operation);
  for (const byte_run& r : runs) {
    if (r.bytes != 0) std::memcpy(e.base + r.offset, packed, r.bytes);
    packed += r.bytes;
  }
}

void copy_out(process_memory& m, const allocation_ref& a, std::span<const byte_run> runs,
              std::byte* packed, const char* operation) {
  const node_heap::extent e = checked_extent(m, a, runs, operation);
  for (const byte_run& r : runs) {
    if (r.bytes != 0) std::memcpy(packed, e.base + r.offset, r.bytes);
    packed += r.bytes;
  }
}

std::uint64_t total_bytes(std::span<const byte_run> runs) {
  std::uint64_t sum = 0;
  for (const byte_run& r : runs) sum += r.bytes;
  return sum;
}

std::uint64_t apply_atomic(process_memory& m, const allocation_ref& a, std::uint64_t offset,
                           atomic_kind kind, unsigned width, bool is_signed, std::uint64_t operand,
                           std::uint64_t desired) {
  const byte_run run{offset, width};
  const node_heap::extent e = checked_extent(m, a, {&run, 1}, "atomic");
  if (offset % width != 0)
    throw memory_error("roam::gas::atomic: the " + std::to_string(width) +
                       "-byte value at heap offset " + std::to_string(offset) + " of node " +
                       std::to_string(a.node) + " is not aligned to its size");
  std::byte* at = e.base + offset;
  if (width == 4) {
    if (is_signed) {
      const auto r =
          apply_typed(*reinterpret_cast<std::int32_t*>(at), kind,
                      static_cast<std::int32_t>(operand), static_cast<std::int32_t>(desired));
      return static_cast<std::uint32_t>(r);
    }
    return apply_typed(*reinterpret_cast<std::uint32_t*>(at), kind,
                       static_cast<std::uint32_t>(operand), static_cast<std::uint32_t>(desired));
  }
  if (is_signed)
    return static_cast<std::uint64_t>(apply_typed(*reinterpret_cast<std::int64_t*>(at), kind,
                                                  static_cast<std::int64_t>(operand),
                                                  static_cast<std::int64_t>(desired)));
  return apply_typed(*reinterpret_cast<std::uint64_t*>(at), kind, operand, desired);
}

future<void> release(process_memory& m, const allocation_ref& a, std::uint64_t offset) {
  node_heap& heap = m.heap_of(a.node, a.slot);
  if (const node_heap::extent e = heap.extent_of(a.slot, a.generation, "deallocate");
      offset != e.begin)
    throw memory_error("roam::gas::deallocate: the pointer is " + std::to_string(offset - e.begin) +
                       " bytes into its allocation on node " + std::to_string(a.node) +
                       ": free an allocation through the pointer allocate() returned");
  const std::vector<std::uint32_t> holders = heap.start_release(a.slot, a.generation);
  if (holders.empty()) return make_ready_future();
  // Each holder process drops its lease (waiting for its copies under it) before the
  // memory can be reused. A recall that fails means its process is gone (the job ends):
  // the memory is freed all the same, and the error reported.
  std::vector<future<void>> recalls;
  recalls.reserve(holders.size());
  const node_id per_process = m.nodes_per_process();
  for (std::uint32_t h : holders)
    recalls.push_back(roam::call(h * per_process, recall_request{}, a.node, a.slot, a.generation));
  auto all = roam::detail::release_state(joined(std::move(recalls)));
  promise<void> freed;
  future<void> result = freed.get_future();
  all->on_ready([all, a, done = std::make_shared<promise<void>>(std::move(freed))] {
    if (process_memory* now = process_memory::current())
      now->heap_of(a.node, a.slot).finish_release(a.slot, a.generation);
    if (all->has_error())
      done->set_exception(all->error());
    else
      done->set_value();
  });
  return result;
}

future<void> request_put(const allocation_ref& a, std::span<const byte_run> runs,
                         const std::byte* packed) {
  std::vector<future<void>> pieces;
  split_requests(runs, request_limit(a.node),
                 [&](const std::vector<byte_run>& piece, std::uint64_t at, std::uint64_t bytes) {
                   buffer<std::byte> data(bytes);
                   if (bytes != 0) std::memcpy(data.data(), packed + at, bytes);
                   pieces.push_back(roam::call(a.node, put_request{}, a.slot, a.generation, piece,
                                               std::move(data)));
                 });
  return joined(std::move(pieces));
}

future<void> request_get(const allocation_ref& a, std::span<const byte_run> runs,
                         std::byte* packed) {
  std::vector<future<void>> pieces;
  split_requests(runs, request_limit(a.node),
                 [&](const std::vector<byte_run>& piece, std::uint64_t at, std::uint64_t bytes) {
                   std::byte* into = packed + at;
                   pieces.push_back(roam::call(a.node, get_request{}, a.slot, a.generation, piece)
                                        .then([into, bytes](buffer<std::byte> data) {
                                          if (data.size() != bytes)
                                            throw deserialization_error(
                                                "roam::gas::get: a reply holds " +
                                                std::to_string(data.size()) +
                                                " bytes for a request of " + std::to_string(bytes));
                                          if (bytes != 0) std::memcpy(into, data.data(), bytes);
                                        }));
                 });
  return joined(std::move(pieces));
}

future<void> request_put_then(const allocation_ref& a, std::span<const byte_run> runs,
                              const std::byte* packed, roam::detail::message_ptr handler) {
  const std::uint64_t data = total_bytes(runs);
  const std::uint64_t request = data + run_bytes * runs.size() + handler->header.payload_size;
  if (request <= request_limit(a.node)) {
    buffer<std::byte> copy(data);
    if (data != 0) std::memcpy(copy.data(), packed, data);
    const std::vector<byte_run> run_list(runs.begin(), runs.end());
    std::vector<std::byte> payload(handler->payload(),
                                   handler->payload() + handler->header.payload_size);
    return roam::call(a.node, put_then_request{}, a.slot, a.generation, run_list,
                      handler->header.handler, handler->header.function, payload, std::move(copy));
  }
  // Too large for one request: the handler follows once every piece is in place.
  auto held = std::make_shared<roam::detail::message_ptr>(std::move(handler));
  return request_put(a, runs, packed).then([held] {
    roam::detail::post(roam::detail::sending_node("roam::gas::put_then"), std::move(*held));
  });
}

future<std::array<std::uint64_t, 3>> request_allocate(node_id node, std::uint64_t bytes) {
  return roam::call(node, allocate_request{}, bytes);
}

future<void> request_deallocate(const allocation_ref& a, std::uint64_t offset) {
  return roam::call(a.node, deallocate_request{}, a.slot, a.generation, offset);
}

future<std::uint64_t> request_atomic(const allocation_ref& a, std::uint64_t offset,
                                     atomic_kind kind, unsigned width, bool is_signed,
                                     std::uint64_t operand, std::uint64_t desired) {
  return roam::call(a.node, atomic_request{}, a.slot, a.generation, offset,
                    static_cast<std::uint8_t>(kind), static_cast<std::uint8_t>(width), is_signed,
                    operand, desired);
}

void request_lease(process_memory& m, const allocation_ref& a) {
  if (!m.leases().begin_request(a.node, a.slot, a.generation)) return;
  future<std::array<std::uint64_t, 2>> asked;
  try {
    asked = roam::call(a.node, lease_request{}, a.slot, a.generation, m.this_process());
  } catch (...) {
    m.leases().refused(a.node, a.slot, a.generation);  // or no later access would ask again
    throw;
  }
  auto answer = roam::detail::release_state(std::move(asked));
  // The answer may come while the job ends: the memory's lease table is looked up then.
  answer->on_ready([a, answer] {
    process_memory* now = process_memory::current();
    if (!now) return;
    if (answer->has_error()) {
      now->leases().refused(a.node, a.slot, a.generation);
      return;
    }
    const std::array<std::uint64_t, 2> extent = answer->take();
    now->leases().granted(a.node, a.slot, {a.generation, extent[0], extent[1]});
  });
}

}  // namespace roam::gas::detail
