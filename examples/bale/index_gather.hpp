// bale index-gather: every node reads `requests` random entries of a table distributed
// over all nodes. With roam each read is a request message through one channel and its
// answer a message through another; both are aggregated and combined, and the owner
// answers a whole group of requests in one loop.
//
// Run it with bale::one_worker_per_node settings.
#pragma once

#include "one_worker_per_node.hpp"
#include "random_stream.hpp"

#include <roam/roam.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace bale {

struct index_gather_setup {
  std::uint64_t requests = 1'000'000;  ///< per node (at most 2^32)
  std::uint64_t table_size = 1 << 20;  ///< entries per node, a power of two
  std::uint64_t seed = 2;
};

/// The value stored at a position: easy to check, different everywhere.
inline std::int64_t table_value(position p, std::uint32_t nodes) noexcept {
  return static_cast<std::int64_t>((std::uint64_t{p.slot} * nodes + p.owner) * 3 + 1);
}

/// Node `node`'s share of the table.
inline std::vector<std::int64_t> index_gather_table(std::uint32_t node, std::uint32_t nodes,
                                                    std::uint64_t table_size) {
  std::vector<std::int64_t> table(table_size);
  for (std::uint32_t slot = 0; slot < table_size; ++slot)
    table[slot] = table_value({node, slot}, nodes);
  return table;
}

struct index_gather_node {
  std::vector<std::int64_t> table;     ///< this node's entries
  std::vector<std::int64_t> gathered;  ///< the answer to request i
};

/// Each node's share of the table and its answers.
inline roam::node_local<index_gather_node> index_gather_state;

inline const auto& index_gather_answer() {
  static const auto answer =
      index_gather_state.channel([](index_gather_node& mine, std::uint32_t request,
                                    std::int64_t value) { mine.gathered[request] = value; });
  return answer;
}

/// The owner answers a group of requests in one loop; the look-ahead prefetches the table
/// entry of a request further on in the group, so the table's cache misses overlap. A
/// request is 8 bytes: the slot and the request's number; the asker is the node the
/// message came from (roam::source_node), which the record does not carry.
inline const auto& index_gather_request() {
  static const auto ask = index_gather_state.channel(
      [](index_gather_node& mine, roam::source_node from, std::uint32_t slot,
         std::uint32_t request) { index_gather_answer()(from, request, mine.table[slot]); },
      roam::look_ahead([](index_gather_node& mine, roam::source_node, std::uint32_t slot,
                          std::uint32_t) { __builtin_prefetch(&mine.table[slot]); }));
  return ask;
}

/// Sends this node's requests from a worker of the node, in slices, yielding between them
/// so that requests and answers arriving meanwhile are handled.
inline void index_gather_send_requests(index_gather_setup s) {
  const auto& ask = index_gather_request();
  const std::uint32_t nodes = roam::num_nodes();
  const roam::node_id me = roam::this_node();
  random_stream random(s.seed, me);
  // Short slices keep the pipeline in cache: the requests a slice fills bundles with, and
  // the requests and answers that arrive meanwhile, are handled while still cached. With
  // 2^15 requests a slice they had left the cache first (2 ranks: 38-40 M reads/s per rank
  // against 46-50 M with 2^12; docs/performance.md).
  constexpr std::uint64_t slice = 1 << 12;
  for (std::uint64_t i = 0; i < s.requests; ++i) {
    const position p = position_of(random.next(), nodes, s.table_size);
    ask(p.owner, p.slot, static_cast<std::uint32_t>(i));
    if (i % slice == slice - 1) roam::this_task::yield();
  }
}

/// The kernel, on every node (SPMD, inside roam::run). Returns the seconds from the first
/// request sent to the last answer stored, anywhere. The answers are
/// index_gather_state.local().gathered afterwards.
inline double index_gather_roam(const index_gather_setup& s) {
  check_table_size(s.table_size);
  index_gather_node& mine = index_gather_state.local();
  mine.table = index_gather_table(roam::this_node(), roam::num_nodes(), s.table_size);
  mine.gathered.assign(s.requests, 0);
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  roam::call(roam::this_node(), index_gather_send_requests, s).get();
  roam::barrier_all_handled();  // every request is answered, every answer stored
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The serial reference: the answers node `node` must have gathered.
inline std::vector<std::int64_t> index_gather_serial(const index_gather_setup& s,
                                                     std::uint32_t nodes, std::uint32_t node) {
  std::vector<std::int64_t> answers(s.requests);
  random_stream random(s.seed, node);
  for (auto& a : answers) a = table_value(position_of(random.next(), nodes, s.table_size), nodes);
  return answers;
}

}  // namespace bale
