// Barnes-Hut as PPL runs it on global memory: Plummer bodies, leapfrog steps, an octree per
// node in that node's global heap, and one task per body in the force phase, which walks
// every node's tree and fetches remote cells through the software cache (roam::gas).
//
// Each node owns a block of the bodies in Morton order (a compact region of space), cut
// again before every step so that the blocks cost the same to walk (costzones), and builds
// the octree of its own bodies each step. A body's force walks all the trees: its
// own node's from local memory, the others' one cell per get. Cells near the root of a
// remote tree are wanted by nearly every body, so the cache serves most of them; with
// policy `none` every visit of a remote cell is a fetch. Between steps the trees are freed
// and every cache forgotten (roam::gas::end_phase).
#pragma once

#include <roam/roam.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace barnes_hut {

struct vec3 {
  double x = 0, y = 0, z = 0;
  template <class Archive>
  void serialize(Archive& archive) {
    archive(x, y, z);
  }
};
inline vec3 operator+(vec3 a, vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline vec3 operator-(vec3 a, vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline vec3 operator*(double s, vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
inline double norm(vec3 a) { return std::sqrt(a.x * a.x + a.y * a.y + a.z * a.z); }

struct body {
  vec3 pos, vel, acc;
  double mass = 0;
  double potential = 0;
  std::uint64_t id = 0;
  std::uint64_t cost = 1;  ///< cells its last walk visited (costzones' weight)
  template <class Archive>
  void serialize(Archive& archive) {
    archive(pos, vel, acc, mass, potential, id, cost);
  }
};

/// A cell of a node's octree, as it lies in global memory (128 bytes).
struct cell {
  vec3 com;  ///< centre of mass (a leaf: its body's position)
  double mass = 0;
  vec3 center;      ///< of the cube
  double half = 0;  ///< half its side
  std::int32_t child[8];
  std::int64_t body = -1;  ///< a leaf's body id, -1 otherwise
  std::int64_t pad[3] = {};
};
static_assert(sizeof(cell) == 128);

/// How the walks read remote cells.
enum class remote_reads : std::uint8_t {
  get,    ///< roam::gas::get per visit, through the software cache under options::policy
  array,  ///< a roam::gas::cached_array of each remote tree per node and phase
};

struct options {
  std::uint64_t bodies = 4096;
  int steps = 4;
  double dt = 0.025;
  double theta = 0.5;
  double softening = 0.05;
  roam::gas::cache_policy policy = roam::gas::cache_policy::lru;
  remote_reads reads = remote_reads::get;
  std::uint64_t seed = 1;
  bool check = false;  ///< compare the first accelerations with a direct sum
};

struct result {
  double seconds = 0;            ///< the steps (tree builds, forces, integration)
  double bodies_per_second = 0;  ///< bodies x steps / seconds
  double energy_start = 0, energy_end = 0;
  double max_relative_error = -1, mean_relative_error = -1;  ///< with options::check
  std::uint64_t remote_visits = 0;   ///< remote cells the walks read (all nodes)
  std::uint64_t remote_fetches = 0;  ///< of them, fetched from their owner
  std::uint64_t remote_bytes = 0;
};

/// The Plummer model in N-body units (Aarseth, Henon and Wielen 1974), the same on every
/// node for one seed.
inline std::vector<body> plummer(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto isotropic = [&](double r) {
    const double z = (2 * u(rng) - 1), phi = 2 * M_PI * u(rng), s = std::sqrt(1 - z * z);
    return vec3{r * s * std::cos(phi), r * s * std::sin(phi), r * z};
  };
  const double length = 3 * M_PI / 16, speed = 1 / std::sqrt(length);
  std::vector<body> b(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    double r;
    do r = 1 / std::sqrt(std::pow(u(rng), -2.0 / 3.0) - 1);
    while (r > 20);
    double q, g;
    do {
      q = u(rng);
      g = 0.1 * u(rng);
    } while (g > q * q * std::pow(1 - q * q, 3.5));
    b[i].pos = length * isotropic(r);
    b[i].vel = speed * isotropic(q * std::sqrt(2.0) * std::pow(1 + r * r, -0.25));
    b[i].mass = 1.0 / static_cast<double>(n);
    b[i].id = i;
  }
  return b;
}

/// Interleaved bits of the position in the unit cube [lo, lo + side)^3.
inline std::uint64_t morton(vec3 p, vec3 lo, double side) {
  auto spread = [](std::uint64_t v) {
    v &= 0x1fffff;
    v = (v | v << 32) & 0x1f00000000ffffull;
    v = (v | v << 16) & 0x1f0000ff0000ffull;
    v = (v | v << 8) & 0x100f00f00f00f00full;
    v = (v | v << 4) & 0x10c30c30c30c30c3ull;
    v = (v | v << 2) & 0x1249249249249249ull;
    return v;
  };
  auto grid = [&](double c, double l) {
    return static_cast<std::uint64_t>(std::clamp((c - l) / side, 0.0, 0.999999) * (1 << 21));
  };
  return spread(grid(p.x, lo.x)) | spread(grid(p.y, lo.y)) << 1 | spread(grid(p.z, lo.z)) << 2;
}

/// This node's block of the bodies in Morton order: costzones (Singh et al., SPLASH-2's
/// Barnes), the order cut into num_nodes() runs of about equal cost, each body's cost the
/// cells its last walk visited (1 before any walk: runs of equal size). A block of equal
/// size took up to 1.8 times as long to walk as the other on 2 nodes (the denser half's
/// bodies open more cells). Every node cuts the same gathered bodies the same way.
inline std::vector<body> my_block(const std::vector<body>& all, roam::node_id me, roam::node_id n) {
  vec3 lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (const body& b : all) {
    lo = {std::min(lo.x, b.pos.x), std::min(lo.y, b.pos.y), std::min(lo.z, b.pos.z)};
    hi = {std::max(hi.x, b.pos.x), std::max(hi.y, b.pos.y), std::max(hi.z, b.pos.z)};
  }
  const double side = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z}) * 1.0001;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keys(all.size());
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < all.size(); ++i) {
    keys[i] = {morton(all[i].pos, lo, side), all[i].id};  // ids break ties the same everywhere
    total += all[i].cost;
  }
  std::vector<std::uint64_t> at_id(all.size());
  for (std::uint64_t i = 0; i < all.size(); ++i) at_id[all[i].id] = i;
  std::sort(keys.begin(), keys.end());
  std::vector<body> mine;
  std::uint64_t before = 0;
  for (const auto& key : keys) {
    const body& b = all[at_id[key.second]];
    // The node whose share of the cost holds this body's midpoint.
    const double middle = static_cast<double>(before) + 0.5 * static_cast<double>(b.cost);
    const auto owner = static_cast<roam::node_id>(
        std::min<double>(n - 1, std::floor(middle * n / static_cast<double>(total))));
    if (owner == me) mine.push_back(b);
    before += b.cost;
  }
  return mine;
}

/// Every node's bodies, cut again by their costs (my_block).
inline std::vector<body> rebalance(const std::vector<body>& mine) {
  const roam::node_id n = roam::num_nodes();
  if (n == 1) return mine;
  std::vector<body> all;
  for (std::vector<body>& part : roam::allgather(mine))
    all.insert(all.end(), part.begin(), part.end());
  return my_block(all, roam::this_node(), n);
}

/// The octree of `bodies` (one body per leaf), root first, with centres of mass.
inline std::vector<cell> build_tree(const std::vector<body>& bodies) {
  std::vector<cell> cells;
  auto make = [&](vec3 center, double half) {
    cell c;
    c.center = center;
    c.half = half;
    std::fill(std::begin(c.child), std::end(c.child), -1);
    cells.push_back(c);
    return static_cast<std::int32_t>(cells.size() - 1);
  };
  if (bodies.empty()) return cells;
  vec3 lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (const body& b : bodies) {
    lo = {std::min(lo.x, b.pos.x), std::min(lo.y, b.pos.y), std::min(lo.z, b.pos.z)};
    hi = {std::max(hi.x, b.pos.x), std::max(hi.y, b.pos.y), std::max(hi.z, b.pos.z)};
  }
  const double half = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z}) / 2 * 1.0001 + 1e-12;
  make(0.5 * (lo + hi), half);
  auto octant = [](const cell& c, vec3 p) {
    return (p.x >= c.center.x ? 1 : 0) | (p.y >= c.center.y ? 2 : 0) | (p.z >= c.center.z ? 4 : 0);
  };
  auto child_center = [](const cell& c, int o) {
    const double h = c.half / 2;
    return vec3{c.center.x + (o & 1 ? h : -h), c.center.y + (o & 2 ? h : -h),
                c.center.z + (o & 4 ? h : -h)};
  };
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    std::int32_t at = 0;
    for (int depth = 0;; ++depth) {
      const int o = octant(cells[at], bodies[i].pos);
      const std::int32_t next = cells[at].child[o];
      if (next < 0) {  // an empty octant: a new leaf
        const std::int32_t leaf = make(child_center(cells[at], o), cells[at].half / 2);
        cells[leaf].body = static_cast<std::int64_t>(i);
        cells[at].child[o] = leaf;
        break;
      }
      if (cells[next].body >= 0 && depth < 60) {  // a leaf: split it
        const std::int64_t other = cells[next].body;
        cells[next].body = -1;
        const int oo = octant(cells[next], bodies[other].pos);
        const std::int32_t moved = make(child_center(cells[next], oo), cells[next].half / 2);
        cells[moved].body = other;
        cells[next].child[oo] = moved;
      }
      at = next;
    }
  }
  // Centres of mass, children before parents (children always come later in the array).
  for (std::size_t k = cells.size(); k-- > 0;) {
    cell& c = cells[k];
    if (c.body >= 0) {
      c.com = bodies[c.body].pos;
      c.mass = bodies[c.body].mass;
      c.body = static_cast<std::int64_t>(bodies[c.body].id);
      continue;
    }
    vec3 weighted;
    double mass = 0;
    for (std::int32_t ch : c.child)
      if (ch >= 0) {
        weighted = weighted + cells[ch].mass * cells[ch].com;
        mass += cells[ch].mass;
      }
    c.mass = mass;
    c.com = mass > 0 ? (1 / mass) * weighted : c.center;
  }
  return cells;
}

/// Adds the pull of the cell (or body) of `mass` at `at` on `b`.
inline void pull(body& b, vec3 at, double mass, double eps2) {
  const vec3 d = at - b.pos;
  const double r2 = d.x * d.x + d.y * d.y + d.z * d.z + eps2;
  const double inv = 1 / std::sqrt(r2);
  b.acc = b.acc + (mass * inv * inv * inv) * d;
  b.potential -= mass * inv;
}

using tree_copies = std::vector<std::unique_ptr<roam::gas::cached_array<cell>>>;

/// Walks the trees of every node for body `b`: this node's from `local`, the others' one
/// cell per get through the calling node's cache, or from `copies` when there are.
inline void walk(body& b, const std::vector<cell>& local, roam::node_id me,
                 const std::vector<roam::global_ptr<cell>>& roots, tree_copies& copies,
                 const options& o, std::uint64_t& remote_visits) {
  b.acc = {};
  b.potential = 0;
  const double eps2 = o.softening * o.softening;
  std::vector<std::pair<roam::node_id, std::int32_t>> stack;
  for (roam::node_id k = 0; k < roots.size(); ++k)
    if (roots[k]) stack.push_back({k, 0});
  std::uint64_t visited = 0;
  while (!stack.empty()) {
    const auto [k, index] = stack.back();
    stack.pop_back();
    ++visited;
    cell c;
    if (k == me) {
      c = local[index];
    } else {
      c = copies.empty() ? roam::gas::get(roots[k] + index).get() : (*copies[k])[index];
      ++remote_visits;
    }
    if (c.body >= 0) {
      if (static_cast<std::uint64_t>(c.body) != b.id) pull(b, c.com, c.mass, eps2);
      continue;
    }
    const double d = norm(c.com - b.pos);
    if (2 * c.half < o.theta * d) {
      pull(b, c.com, c.mass, eps2);
      continue;
    }
    for (std::int32_t ch : c.child)
      if (ch >= 0) stack.push_back({k, ch});
  }
  b.cost = visited;
}

/// One force phase: this node's tree into global memory, every body's walk (one task per
/// body), the tree freed and every cache forgotten once all nodes are done.
inline void forces(std::vector<body>& mine, const options& o, std::uint64_t& remote_visits,
                   std::uint64_t& copied_fetches, std::uint64_t& copied_bytes) {
  const roam::node_id me = roam::this_node();
  const std::vector<cell> local = build_tree(mine);
  roam::global_ptr<cell> tree;
  if (!local.empty()) {
    tree = roam::gas::allocate<cell>(me, local.size(), o.policy).get();
    std::copy(local.begin(), local.end(), roam::gas::local(tree, local.size()));
  }
  const std::vector<roam::global_ptr<cell>> roots = roam::allgather(tree);
  tree_copies copies;
  if (o.reads == remote_reads::array) {
    const std::vector<std::uint64_t> sizes = roam::allgather(std::uint64_t{local.size()});
    for (roam::node_id k = 0; k < roots.size(); ++k)
      copies.push_back(
          k == me ? nullptr : std::make_unique<roam::gas::cached_array<cell>>(roots[k], sizes[k]));
  }
  // Every walk starts at the roots: read them before the walks, or every task would start,
  // find the root's block on its way and suspend until it came (a fiber each, thousands,
  // and the first 5-40 ms of every phase on 2 ranks).
  // (Without a cache there is nothing to warm.)
  for (roam::node_id k = 0; k < roots.size(); ++k) {
    if (k == me || !roots[k]) continue;
    if (!copies.empty())
      (void)(*copies[k])[0];
    else if (o.policy != roam::gas::cache_policy::none)
      (void)roam::gas::get(roots[k]).get();
  }
  std::atomic<std::uint64_t> visits{0};
  roam::parallel_for(
      std::size_t{0}, mine.size(),
      [&](std::size_t i) {
        std::uint64_t v = 0;
        walk(mine[i], local, me, roots, copies, o, v);
        visits.fetch_add(v, std::memory_order_relaxed);
      },
      1);
  remote_visits += visits.load();
  for (const auto& c : copies)
    if (c) {
      copied_fetches += c->fetches();
      copied_bytes += c->fetched_bytes();
    }
  copies.clear();
  roam::gas::end_phase();  // every node is done with every tree; caches forgotten
  if (tree) roam::gas::deallocate(tree).get();
}

inline double energy(const std::vector<body>& mine) {
  double e = 0;
  for (const body& b : mine)
    e += 0.5 * b.mass * (b.vel.x * b.vel.x + b.vel.y * b.vel.y + b.vel.z * b.vel.z) +
         0.5 * b.mass * b.potential;
  return roam::allreduce(e, std::plus<>{});
}

/// Runs the simulation on every node (call from the body of roam::run on each).
inline result simulate(const options& o) {
  const roam::node_id me = roam::this_node(), n = roam::num_nodes();
  const std::vector<body> all = plummer(o.bodies, o.seed);
  std::vector<body> mine = my_block(all, me, n);
  result r;
  std::uint64_t visits = 0, copied_fetches = 0, copied_bytes = 0;
  const auto cache_before = roam::gas::node_cache_statistics();
  const auto paths_before = roam::gas::node_path_statistics();
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  forces(mine, o, visits, copied_fetches, copied_bytes);
  if (o.check) {
    // The first accelerations against a direct sum over every body.
    double worst = 0, sum = 0;
    const double eps2 = o.softening * o.softening;
    for (const body& b : mine) {
      body direct = b;
      direct.acc = {};
      for (const body& other : all)
        if (other.id != b.id) pull(direct, other.pos, other.mass, eps2);
      const double err = norm(b.acc - direct.acc) / norm(direct.acc);
      worst = std::max(worst, err);
      sum += err;
    }
    r.max_relative_error =
        roam::allreduce(worst, [](double a, double c) { return std::max(a, c); });
    r.mean_relative_error = roam::allreduce(sum, std::plus<>{}) / static_cast<double>(o.bodies);
  }
  r.energy_start = energy(mine);
  for (int step = 0; step < o.steps; ++step) {  // kick, drift, forces, kick
    for (body& b : mine) {
      b.vel = b.vel + (o.dt / 2) * b.acc;
      b.pos = b.pos + o.dt * b.vel;
    }
    mine = rebalance(mine);
    forces(mine, o, visits, copied_fetches, copied_bytes);
    for (body& b : mine) b.vel = b.vel + (o.dt / 2) * b.acc;
  }
  r.energy_end = energy(mine);
  if (o.check) {  // the cuts between steps kept every body exactly once
    std::uint64_t ids = 0;
    for (const body& b : mine) ids += b.id;
    const std::uint64_t count = roam::allreduce(std::uint64_t{mine.size()}, std::plus<>{});
    ids = roam::allreduce(ids, std::plus<>{});
    if (count != o.bodies || ids != o.bodies * (o.bodies - 1) / 2)
      throw std::logic_error("barnes_hut: the nodes hold " + std::to_string(count) +
                             " bodies after the steps, not each of the " +
                             std::to_string(o.bodies) + " once");
  }
  r.seconds = roam::allreduce(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      [](double a, double c) { return std::max(a, c); });
  r.bodies_per_second = static_cast<double>(o.bodies) * (o.steps + 1) / r.seconds;
  const auto cache = roam::gas::node_cache_statistics();
  const auto paths = roam::gas::node_path_statistics();
  // Fetched: the copies' blocks, the cache's misses, or every remote get when nothing is
  // cached.
  const bool cached = o.policy != roam::gas::cache_policy::none;
  std::uint64_t fetches =
      cached ? cache.misses - cache_before.misses
             : (paths.rma + paths.messages) - (paths_before.rma + paths_before.messages);
  std::uint64_t bytes =
      cached ? cache.fetched_bytes - cache_before.fetched_bytes : fetches * sizeof(cell);
  if (o.reads == remote_reads::array) {
    fetches = copied_fetches;
    bytes = copied_bytes;
  }
  r.remote_visits = roam::allreduce(visits, std::plus<>{});
  r.remote_fetches = roam::allreduce(fetches, std::plus<>{});
  r.remote_bytes = roam::allreduce(bytes, std::plus<>{});
  return r;
}

}  // namespace barnes_hut
