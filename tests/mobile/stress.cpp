// Mobile-object stress: every node sends a stream of numbered messages to random objects
// while random migrations move the objects around, then checks that
// - no message was lost or duplicated and each sender's messages ran in sending order
//   (each object counts and hashes every sender's stream; the hashes must equal a serial
//   replay of the same random streams),
// - exclusive handlers never overlapped each other or a shared one,
// - shared handlers did overlap.
//
//   mobile_stress [--messages N] [--migrations M] [--objects K]   (totals over all nodes)
//
// Exit status 0 when every check passes; a report on stderr otherwise.
#include <roam/roam.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::size_t max_objects = 1024;
constexpr long window = 4096;  // messages a node sends before it waits for the objects
// Per process: what handlers observed while running (not part of the objects' state).
std::array<std::atomic<int>, max_objects> exclusive_inside{};
std::array<std::atomic<int>, max_objects> shared_inside{};
std::array<std::atomic<int>, max_objects> most_shared_inside{};
std::atomic<long> overlaps{0};

std::uint64_t mix(std::uint64_t chain, std::uint64_t value) {
  return (chain ^ value) * 0x100000001b3ull + 0x9E3779B97F4A7C15ull;
}

struct cell {
  std::uint64_t slot = 0;
  std::vector<std::uint64_t> received;  // per origin node: messages run so far
  std::vector<std::uint64_t> chain;     // per origin node: hash of their values, in order
  std::uint64_t out_of_order = 0;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(slot, received, chain, out_of_order);
  }

  void apply(roam::node_id origin, std::uint64_t number, std::uint64_t value) {
    if (exclusive_inside[slot].fetch_add(1) != 0 || shared_inside[slot].load() != 0)
      overlaps.fetch_add(1);
    if (origin >= received.size()) {
      received.resize(origin + 1);
      chain.resize(origin + 1);
    }
    if (number != received[origin]) ++out_of_order;
    received[origin] = number + 1;
    chain[origin] = mix(chain[origin], value);
    exclusive_inside[slot].fetch_sub(1);
  }

  std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (auto r : received) sum += r;
    return sum;
  }

  // Shared: stays (suspended) until another shared handler has joined it, or `patience_ms`
  // has passed.
  void linger(int patience_ms) const {
    const int inside = shared_inside[slot].fetch_add(1) + 1;
    if (exclusive_inside[slot].load() != 0) overlaps.fetch_add(1);
    int seen = most_shared_inside[slot].load();
    while (seen < inside && !most_shared_inside[slot].compare_exchange_weak(seen, inside)) {
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(patience_ms);
    while (most_shared_inside[slot].load() < 2 && std::chrono::steady_clock::now() < deadline)
      roam::this_task::sleep_for(100us);
    shared_inside[slot].fetch_sub(1);
  }
};

struct plan {
  long messages_per_node;
  long migrate_every;  // one migration per this many messages
  std::size_t objects;
};

/// The random stream of one node: which object, which value, and when to move what where.
struct stream {
  explicit stream(roam::node_id node) : rng(1234567u + node * 7919u) {}
  std::mt19937_64 rng;
};

long option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atol(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const long messages = option(argc, argv, "--messages", 1000000);
  const long migrations = option(argc, argv, "--migrations", 10000);
  const auto objects = static_cast<std::size_t>(option(argc, argv, "--objects", 64));
  if (objects == 0 || objects > max_objects || messages <= 0 || migrations <= 0) {
    std::fprintf(stderr, "mobile_stress: need 0 < objects <= %zu, messages > 0, migrations > 0\n",
                 max_objects);
    return 2;
  }
  bool ok = true;
  const int status = roam::run(argc, argv, [&] {
    const roam::node_id nodes = roam::num_nodes();
    const roam::node_id me = roam::this_node();
    const plan p{messages / static_cast<long>(nodes),
                 std::max(1L, messages / std::max(1L, migrations)), objects};

    std::vector<roam::mobile_ptr<cell>> cells;
    if (me == 0)
      for (std::size_t k = 0; k < p.objects; ++k) {
        cell c;
        c.slot = k;
        cells.push_back(
            roam::make_mobile<cell>(roam::node(static_cast<roam::node_id>(k % nodes)), c));
      }
    cells = roam::broadcast_value(cells);
    roam::barrier();

    const auto start = std::chrono::steady_clock::now();
    stream s(me);
    std::vector<std::uint64_t> numbers(p.objects, 0);
    long moves = 0;
    for (long i = 0; i < p.messages_per_node; ++i) {
      if (i % window == window - 1) {
        // Flow control: a sender that runs far ahead piles up queues that every migration
        // then has to carry. A call runs after this node's earlier messages to the object.
        std::vector<roam::future<std::uint64_t>> drained;
        drained.reserve(cells.size());
        for (auto& c : cells) drained.push_back(c.call<&cell::total>());
        for (auto& f : drained) (void)f.get();
      }
      const std::size_t k = s.rng() % p.objects;
      const std::uint64_t value = s.rng();
      cells[k].send<&cell::apply>(me, numbers[k]++, value);
      if (i % p.migrate_every == p.migrate_every - 1) {
        const std::size_t target = s.rng() % p.objects;
        const auto dest = static_cast<roam::node_id>(s.rng() % nodes);
        (void)roam::migrate(cells[target], dest);
        ++moves;
      }
    }
    roam::barrier();
    if (me == 0) roam::wait_quiescence();
    roam::barrier();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long total_moves = roam::allreduce(moves, std::plus<>());

    if (me == 0) {
      // Serial replay of every node's stream.
      std::vector<std::vector<std::uint64_t>> count(p.objects, std::vector<std::uint64_t>(nodes));
      std::vector<std::vector<std::uint64_t>> chain(p.objects, std::vector<std::uint64_t>(nodes));
      for (roam::node_id origin = 0; origin < nodes; ++origin) {
        stream replay(origin);
        for (long i = 0; i < p.messages_per_node; ++i) {
          const std::size_t k = replay.rng() % p.objects;
          const std::uint64_t value = replay.rng();
          ++count[k][origin];
          chain[k][origin] = mix(chain[k][origin], value);
          if (i % p.migrate_every == p.migrate_every - 1) {
            (void)replay.rng();
            (void)replay.rng();
          }
        }
      }
      long wrong = 0;
      for (std::size_t k = 0; k < p.objects; ++k) {
        cell got = cells[k].call([](const cell& c) { return c; }).get();
        got.received.resize(nodes);
        got.chain.resize(nodes);
        if (got.out_of_order) ++wrong;
        for (roam::node_id o = 0; o < nodes; ++o)
          if (got.received[o] != count[k][o] || got.chain[o] != chain[k][o]) {
            if (wrong++ < 5)
              std::fprintf(stderr,
                           "object %zu from node %u: ran %llu messages (expected %llu), "
                           "hash %s, %llu out of order\n",
                           k, o, static_cast<unsigned long long>(got.received[o]),
                           static_cast<unsigned long long>(count[k][o]),
                           got.chain[o] == chain[k][o] ? "equal" : "differs",
                           static_cast<unsigned long long>(got.out_of_order));
          }
      }
      // Shared handlers overlap: several lingering readers on each object at once.
      long lonely = 0;
      for (std::size_t k = 0; k < p.objects; ++k) {
        std::vector<roam::future<void>> readers;
        readers.reserve(3);
        for (int r = 0; r < 3; ++r) readers.push_back(cells[k].call<&cell::linger>(5000));
        for (auto& f : readers) f.get();
        const int most =
            cells[k].call([](const cell& c) { return most_shared_inside[c.slot].load(); }).get();
        if (most < 2) ++lonely;
      }
      std::printf(
          "mobile_stress: %u nodes, %zu objects, %ld messages, %ld migrations in %.2f s: "
          "%ld objects with wrong streams, %ld objects whose shared handlers never overlapped\n",
          nodes, p.objects, p.messages_per_node * static_cast<long>(nodes), total_moves, seconds,
          wrong, lonely);
      if (wrong || lonely) ok = false;
    }
    roam::barrier();
  });
  if (overlaps.load() != 0) {
    std::fprintf(stderr, "mobile_stress: %ld overlaps of an exclusive handler with another\n",
                 overlaps.load());
    ok = false;
  }
  return status != 0 ? status : (ok ? 0 : 1);
}
