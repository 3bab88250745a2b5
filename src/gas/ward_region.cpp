// WARD regions: each node's copy of the range, its written (and, when checking, read) bytes,
// and the collective close that merges them at the owner (ward_merges).
#include "owner_side.hpp"
#include "process_memory.hpp"

#include <roam/am/collectives.hpp>
#include <roam/am/send.hpp>
#include <roam/base/detail/fatal.hpp>
#include <roam/gas/ward_region.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace roam::gas::detail {

namespace {

/// The maximal runs of bytes whose mask entry is set.
std::vector<byte_run> runs_of(const std::vector<std::uint8_t>& mask) {
  std::vector<byte_run> runs;
  for (std::uint64_t b = 0; b < mask.size();) {
    if (!mask[b]) {
      ++b;
      continue;
    }
    const std::uint64_t start = b;
    while (b < mask.size() && mask[b]) ++b;
    runs.push_back({start, b - start});
  }
  return runs;
}

/// The bytes of `runs` of `copy`, one after the other.
buffer<std::byte> gather(const std::byte* copy, const std::vector<byte_run>& runs) {
  buffer<std::byte> data(total_bytes(runs));
  std::byte* packed = data.data();
  for (const byte_run& r : runs) {
    if (r.bytes != 0) std::memcpy(packed, copy + r.offset, r.bytes);
    packed += r.bytes;
  }
  return data;
}

/// Merges node `writer`'s bytes into a region over memory of a node of this process.
void merge_here(process_memory& m, const allocation_ref& a, std::uint64_t offset,
                std::uint64_t bytes, std::uint64_t sequence, bool check, node_id writer,
                const std::vector<byte_run>& runs, const std::byte* data,
                const std::vector<byte_run>& read_runs) {
  std::byte* memory =
      m.heap_of(a.node, a.slot).resolve(a.slot, a.generation, offset, bytes, "ward_region");
  for (const auto* list : {&runs, &read_runs})
    for (const byte_run& r : *list)
      if (r.offset > bytes || r.bytes > bytes - r.offset)
        throw deserialization_error("roam::gas::ward_region: a merge's runs leave the region");
  m.merges_of(a.node).merge(sequence, bytes, check, writer, memory, runs, data, read_runs);
}

struct ward_merge_request {
  void operator()(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset,
                  std::uint64_t bytes, std::uint64_t sequence, bool check, node_id writer,
                  const std::vector<byte_run>& runs, const std::vector<byte_run>& read_runs,
                  const buffer<std::byte>& data) const {
    if (total_bytes(runs) != data.size())
      throw deserialization_error("roam::gas::ward_region: a merge's runs do not match its data");
    merge_here(process_memory::require("roam::gas::ward_region"),
               {roam::this_node(), slot, generation, 0}, offset, bytes, sequence, check, writer,
               runs, data.data(), read_runs);
  }
};

}  // namespace

struct ward_copy::state {
  allocation_ref target;
  std::uint64_t offset = 0, bytes = 0;
  bool check = false;
  bool open = true;
  std::uint64_t sequence = 0;
  node_id self = 0;
  std::vector<std::byte> copy;
  std::vector<std::uint8_t> written;
  std::vector<std::uint8_t> read_first;  // checking: read before this node wrote it

  void check_range(std::uint64_t at, std::uint64_t n, const char* what) const {
    if (!open)
      throw usage_error(std::string("roam::gas::ward_region::") + what +
                        " after close(): the region's copy is gone");
    if (at > bytes || n > bytes - at)
      throw usage_error(std::string("roam::gas::ward_region::") + what + ": bytes [" +
                        std::to_string(at) + ", " + std::to_string(at + n) +
                        ") leave the region's " + std::to_string(bytes));
  }
};

ward_copy::ward_copy(const allocation_ref& a, std::uint64_t offset, std::uint64_t bytes,
                     ward_check check, const char* caller)
    : state_(std::make_unique<state>()) {
  roam::detail::node_runtime& n = roam::detail::require_node(caller);
  process_memory& m = process_memory::require(caller);
  state& s = *state_;
  s.target = a;
  s.offset = offset;
  s.bytes = bytes;
  s.check =
      check == ward_check::on || (check == ward_check::from_settings && m.settings().ward_check);
  s.self = roam::detail::id_of(n);
  s.sequence = roam::detail::next_collective_sequence(n);
  s.copy.resize(bytes);
  s.written.assign(bytes, 0);
  if (s.check) s.read_first.assign(bytes, 0);
  const byte_run run{offset, bytes};
  // A node whose copy cannot be fetched still takes part in the check below, so that every
  // node learns of it instead of waiting for it.
  std::exception_ptr failure;
  try {
    get_runs(a, {&run, 1}, s.copy.data(), "ward_region").get();
  } catch (const memory_error&) {
    failure = std::current_exception();
  }
  // Every node must open the same region in the same order (it is collective), and no node
  // may merge before every node has fetched its copy.
  const std::uint64_t signature =
      (std::uint64_t{a.node} << 40 ^ std::uint64_t{a.slot} << 16 ^ a.generation) *
          0x9e3779b97f4a7c15ull ^
      offset ^ bytes << 1 ^ (s.check ? 1 : 0);
  std::array<std::uint64_t, 3> seen{signature, ~signature, failure ? 1u : 0u};
  seen = roam::allreduce(
      seen, [](const std::array<std::uint64_t, 3>& x, const std::array<std::uint64_t, 3>& y) {
        return std::array<std::uint64_t, 3>{std::min(x[0], y[0]), std::min(x[1], y[1]),
                                            std::max(x[2], y[2])};
      });
  if (failure) std::rethrow_exception(failure);
  if (seen[2] != 0)
    throw memory_error(std::string(caller) +
                       ": another node could not fetch its copy of the region");
  if (seen[0] != ~seen[1])
    throw usage_error(std::string(caller) +
                      ": the nodes opened different regions (another range or checking, or not "
                      "in the same order): a WARD region is opened by every node alike");
}

ward_copy::~ward_copy() {
  if (state_ && state_->open && std::uncaught_exceptions() == 0)
    roam::detail::fatal(
        "roam::gas::ward_region destroyed while open: close() it on every node, or its writes "
        "are lost");
}

bool ward_copy::open() const noexcept { return state_->open; }

void ward_copy::read(std::uint64_t at, std::uint64_t n, std::byte* into) {
  state& s = *state_;
  s.check_range(at, n, "read");
  if (n != 0) std::memcpy(into, s.copy.data() + at, n);
  if (s.check)
    for (std::uint64_t b = at; b < at + n; ++b)
      if (!s.written[b]) s.read_first[b] = 1;
}

void ward_copy::write(std::uint64_t at, std::uint64_t n, const std::byte* from) {
  state& s = *state_;
  s.check_range(at, n, "write");
  if (n == 0) return;
  std::memcpy(s.copy.data() + at, from, n);
  std::memset(s.written.data() + at, 1, n);
}

void ward_copy::close() {
  state& s = *state_;
  if (!s.open) throw usage_error("roam::gas::ward_region::close: the region is closed already");
  process_memory& m = process_memory::require("roam::gas::ward_region::close");
  s.open = false;
  const allocation_ref& a = s.target;
  // Whatever fails here, this node still reaches the collective steps below, so that every
  // node learns of it instead of waiting for it.
  std::exception_ptr failure;
  try {
    const std::vector<byte_run> runs = runs_of(s.written);
    const std::vector<byte_run> read_runs =
        s.check ? runs_of(s.read_first) : std::vector<byte_run>{};
    if (m.reads_directly(a.node)) {
      merge_here(m, a, s.offset, s.bytes, s.sequence, s.check, s.self, runs,
                 gather(s.copy.data(), runs).data(), read_runs);
    } else {
      // In pieces of at most a message: the written runs with their bytes, then the read
      // ones (checking) without.
      std::vector<future<void>> pieces;
      split_requests(
          runs, request_limit(a.node),
          [&](const std::vector<byte_run>& piece, std::uint64_t, std::uint64_t) {
            pieces.push_back(roam::call(a.node, ward_merge_request{}, a.slot, a.generation,
                                        s.offset, s.bytes, s.sequence, s.check, s.self, piece,
                                        std::vector<byte_run>{}, gather(s.copy.data(), piece)));
          });
      const std::size_t per_piece = request_limit(a.node) / run_bytes;
      for (std::size_t first = 0; first < read_runs.size(); first += per_piece) {
        const std::size_t last = std::min(read_runs.size(), first + per_piece);
        pieces.push_back(
            roam::call(a.node, ward_merge_request{}, a.slot, a.generation, s.offset, s.bytes,
                       s.sequence, s.check, s.self, std::vector<byte_run>{},
                       std::vector<byte_run>(read_runs.begin() + static_cast<std::ptrdiff_t>(first),
                                             read_runs.begin() + static_cast<std::ptrdiff_t>(last)),
                       buffer<std::byte>()));
      }
      for (auto& p : pieces) p.get();
    }
  } catch (...) {
    failure = std::current_exception();
  }
  s.copy = {};
  s.written = {};
  s.read_first = {};
  roam::barrier();  // every node's bytes are merged (or it failed)
  ward_violation broken;
  if (s.self == a.node) broken = m.merges_of(a.node).finish(s.sequence);
  broken = roam::broadcast_value(broken, a.node);
  const int failed_somewhere =
      roam::allreduce(failure ? 1 : 0, [](int x, int y) { return x > y ? x : y; });
  if (failure) std::rethrow_exception(failure);
  if (failed_somewhere)
    throw memory_error(
        "roam::gas::ward_region::close: another node's writes could not be merged (the memory "
        "holds the writes of the nodes that could)");
  if (broken.found)
    throw usage_error("roam::gas::ward_region: node " + std::to_string(broken.reader) +
                      " read byte " + std::to_string(broken.byte) + " of the region, which node " +
                      std::to_string(broken.writer) +
                      " wrote in it: a read-after-write across nodes, which a WARD region "
                      "rules out (the memory holds the merged writes)");
}

}  // namespace roam::gas::detail
