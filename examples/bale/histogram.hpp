// bale histogram: every node adds 1 to `updates` random slots of a table distributed over
// all nodes. With roam each update is one channel message; the channel aggregates them
// per destination and the owner applies a whole group in one loop.
//
// Run it with bale::one_worker_per_node settings: that worker owns the node's table, so
// the updates need no atomics, as in bale's own versions.
#pragma once

#include "one_worker_per_node.hpp"
#include "random_stream.hpp"

#include <roam/roam.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace bale {

struct histogram_setup {
  std::uint64_t updates = 1'000'000;   ///< per node
  std::uint64_t table_size = 1 << 20;  ///< slots per node, a power of two
  std::uint64_t seed = 1;
};

/// Each node's share of the table.
inline roam::node_local<std::vector<std::int64_t>> histogram_table;

/// Sends this node's updates: runs on a worker of the node, in slices, yielding between
/// them so that the updates arriving from other nodes are applied meanwhile (one thread
/// per node does both, like a bale PE; no thread spins beside it).
inline void histogram_send_updates(histogram_setup s) {
  // The look-ahead prefetches (for writing) the slot of an update further on in the group,
  // so the table's cache misses overlap. The receiver finds its table once per group.
  static const auto add = histogram_table.channel(
      [](std::vector<std::int64_t>& table, std::uint32_t slot) { ++table[slot]; },
      roam::look_ahead([](std::vector<std::int64_t>& table, std::uint32_t slot) {
        __builtin_prefetch(&table[slot], 1);
      }));
  const std::uint32_t nodes = roam::num_nodes();
  random_stream random(s.seed, roam::this_node());
  constexpr std::uint64_t slice = 1 << 15;
  for (std::uint64_t i = 0; i < s.updates; ++i) {
    const position p = position_of(random.next(), nodes, s.table_size);
    add(p.owner, p.slot);
    if (i % slice == slice - 1) roam::this_task::yield();
  }
}

/// The kernel, on every node (SPMD, inside roam::run). Returns the seconds from the first
/// update sent to the last one applied, anywhere. The node's table is
/// histogram_table.local() afterwards.
inline double histogram_roam(const histogram_setup& s) {
  check_table_size(s.table_size);
  histogram_table.local().assign(s.table_size, 0);
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  roam::call(roam::this_node(), histogram_send_updates, s).get();
  roam::barrier_all_handled();  // every update sent anywhere is applied
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The serial reference: node `node`'s table after every node of `nodes` ran the kernel.
inline std::vector<std::int64_t> histogram_serial(const histogram_setup& s, std::uint32_t nodes,
                                                  std::uint32_t node) {
  std::vector<std::int64_t> table(s.table_size, 0);
  for (std::uint32_t from = 0; from < nodes; ++from) {
    random_stream random(s.seed, from);
    for (std::uint64_t i = 0; i < s.updates; ++i) {
      const position p = position_of(random.next(), nodes, s.table_size);
      if (p.owner == node) ++table[p.slot];
    }
  }
  return table;
}

}  // namespace bale
