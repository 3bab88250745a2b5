// Monte Carlo neutron transport with energy-band memory servers (EBMS, Felker et al. 2013) as
// PPL runs it on global memory: the cross-section table is cut into energy bands, each band
// lives in the global heap of a server node, and the nodes tracking particles read it
// through the software cache (roam::gas). Beside it, the bulk-synchronous MPI version of the
// same algorithm (rounds of all-to-all band requests), and a serial run to check both.
//
// Physics (synthetic, but shaped like the real thing): particles are born at fission
// energies and slow down by elastic scattering off `nuclides` nuclides of different masses
// until they are absorbed or leak; below 1 eV the medium's thermal motion may scatter them
// back up, so a particle can return to a band it left (real EBMS needs two or three passes
// over the bands for that reason). Each collision looks up one energy point of the table:
// every nuclide's total, absorption, scattering and fission cross sections there.
//
// Every particle draws from its own random stream (seeded by the run's seed and its id), so
// its history is the same whichever node tracks it and in whichever order: the integer
// tallies of every version equal the serial run's exactly, and the floating-point ones up
// to the order of their sums.
#pragma once

#include <roam/roam.hpp>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ebms {

/// One nuclide's cross sections at one energy point (barns).
struct cross_sections {
  double total = 0, absorption = 0, scattering = 0, fission = 0;
};

/// How the roam version tracks.
enum class tracking : std::uint8_t {
  /// EBMS's algorithm: passes over the bands, highest energy first; in each, one task per
  /// particle in the band, tracking it until it is absorbed or leaves the band. Band data is
  /// fetched when a lookup misses the cache.
  bands,
  /// One task per particle for its whole history, whichever bands it crosses, and a task
  /// that fetches the points of the band after the lowest one a particle has entered, ahead
  /// of the lookups (PPL's "prefetch" version).
  prefetch,
};

/// How trackers read the bands of other nodes.
enum class band_reads : std::uint8_t {
  /// A roam::gas::get of the point's entries per lookup, through the node's software cache
  /// (its policy and byte capacity bound what a node holds: PPL's LRU-managed band data).
  cache,
  /// A roam::gas::cached_array per remote band and run: blocks of points fetched on first
  /// use and then read in place. No capacity bound: each node ends up holding a copy of
  /// every band it touched, so this is for tables that fit a node's memory.
  array,
};

struct options {
  std::uint32_t bands = 10;
  std::uint32_t points_per_band = 512;
  std::uint32_t nuclides = 24;
  std::uint64_t particles = 20000;
  /// Nodes 0 .. servers-1 hold the bands (band b on node b mod servers) and the others
  /// track; 0: every node does both (PPL's hybrid memory/tracking servers).
  std::uint32_t servers = 0;
  tracking mode = tracking::bands;
  band_reads reads = band_reads::cache;
  /// Points per block of a cached_array (band_reads::array).
  std::uint32_t points_per_block = 16;
  /// Particles per task. PPL spawns one per particle; here a task that waits for a fetch
  /// holds a stack (128 KiB, and two memory maps), and while the first fetches of a band are
  /// in flight every task that starts waits too: a few dozen particles per task keep the
  /// waiting tasks to a few thousand at 10^5 particles per node.
  std::uint32_t particles_per_task = 32;
  roam::gas::cache_policy policy = roam::gas::cache_policy::lru;
  std::uint64_t seed = 1;

  std::uint32_t points() const { return bands * points_per_band; }
  std::uint64_t band_elements() const { return std::uint64_t{points_per_band} * nuclides; }
  std::uint64_t band_bytes() const { return band_elements() * sizeof(cross_sections); }

  /// Throws std::invalid_argument naming what is out of range.
  void validate(std::uint32_t nodes) const {
    auto refuse = [](const std::string& why) { throw std::invalid_argument("ebms: " + why); };
    if (bands == 0 || points_per_band == 0 || nuclides == 0 || particles_per_task == 0 ||
        points_per_block == 0)
      refuse(
          "bands, points per band and block, nuclides and particles per task must be at least 1");
    if (std::uint64_t{bands} * points_per_band > (std::uint64_t{1} << 31))
      refuse("at most 2^31 energy points");
    if (servers >= nodes && servers != 0)
      refuse(std::to_string(servers) + " servers leave none of the " + std::to_string(nodes) +
             " nodes to track particles (0: every node serves and tracks)");
  }
};

inline constexpr double max_energy = 2.0e7, min_energy = 1.0e-5, thermal_energy = 1.0;  // eV
inline constexpr double leak_probability = 0.01, upscatter_probability = 0.2;

/// The log-uniform energy grid: point 0 is the highest energy, band 0 the highest band.
inline double log_step(const options& o) {
  return (std::log(max_energy) - std::log(min_energy)) / o.points();
}
inline std::uint32_t point_of(double energy, const options& o) {
  const double g = std::floor((std::log(max_energy) - std::log(energy)) / log_step(o));
  return static_cast<std::uint32_t>(std::clamp(g, 0.0, static_cast<double>(o.points() - 1)));
}
inline std::uint32_t band_of(double energy, const options& o) {
  return point_of(energy, o) / o.points_per_band;
}

/// splitmix64's output function, as a double in [0, 1): the table's "measured" irregularity
/// and every particle's random stream both draw from it.
inline double mixed_unit(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/// A value in [0, 1) from two integers.
inline double hash_unit(std::uint64_t a, std::uint64_t b) {
  return mixed_unit(a * 0x9e3779b97f4a7c15ull + b * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull);
}

/// Nuclide k's cross sections at grid point g: a 1/v rise toward low energies, and rare
/// strong resonances.
inline cross_sections table_entry(std::uint32_t g, std::uint32_t k, const options& o) {
  const double energy = std::exp(std::log(max_energy) - g * log_step(o));
  const double resonance = std::pow(hash_unit(g, k), 16.0);
  cross_sections x;
  x.total = (1.0 + k % 5) * (1.0 + 3.0 / std::sqrt(1.0 + energy)) * (1.0 + 50.0 * resonance);
  x.absorption = x.total * (0.02 + 0.08 * hash_unit(k, g + 7));
  x.fission = k % 4 == 0 ? 0.3 * x.absorption : 0.0;
  x.scattering = x.total - x.absorption;
  return x;
}

/// Band b's data: its points' entries, nuclide by nuclide.
inline std::vector<cross_sections> band_data(std::uint32_t b, const options& o) {
  std::vector<cross_sections> data(o.band_elements());
  for (std::uint32_t p = 0; p < o.points_per_band; ++p)
    for (std::uint32_t k = 0; k < o.nuclides; ++k)
      data[std::uint64_t{p} * o.nuclides + k] = table_entry(b * o.points_per_band + p, k, o);
  return data;
}

/// A particle and its own random stream (splitmix64).
struct particle {
  double energy = 0;
  std::uint64_t state = 0;
  bool alive = true;

  double uniform() { return mixed_unit(state += 0x9e3779b97f4a7c15ull); }
};

/// Particle `id` at birth: a fission energy (an exponential of mean 2 MeV, within the grid).
inline particle born(std::uint64_t id, const options& o) {
  particle p;
  p.state = o.seed * 0xd1b54a32d192ed03ull + id * 0x9e3779b97f4a7c15ull;
  p.energy = std::clamp(-2.0e6 * std::log(1.0 - p.uniform()), 1.0e3, max_energy * 0.999);
  return p;
}

/// What the particles did, per band of the energy where it happened.
struct tallies {
  std::vector<std::uint64_t> collisions, absorptions, leaks;
  std::vector<double> deposited;  ///< energy left in the medium (eV)
  std::vector<double> fission;    ///< expected fission neutrons (collision estimator)

  explicit tallies(std::uint32_t bands = 0)
      : collisions(bands), absorptions(bands), leaks(bands), deposited(bands), fission(bands) {}

  void add(const tallies& t) {
    for (std::size_t b = 0; b < collisions.size(); ++b) {
      collisions[b] += t.collisions[b];
      absorptions[b] += t.absorptions[b];
      leaks[b] += t.leaks[b];
      deposited[b] += t.deposited[b];
      fission[b] += t.fission[b];
    }
  }
  std::uint64_t total_collisions() const {
    std::uint64_t n = 0;
    for (std::uint64_t c : collisions) n += c;
    return n;
  }
  template <class Ar>
  void serialize(Ar& ar) {
    ar(collisions, absorptions, leaks, deposited, fission);
  }
};

/// How far `t` is from `reference`: 0 when every count is equal and the sums agree; the
/// largest relative difference of a sum otherwise, and infinite when a count differs or a
/// sum is not a number.
inline double difference(const tallies& t, const tallies& reference) {
  if (t.collisions != reference.collisions || t.absorptions != reference.absorptions ||
      t.leaks != reference.leaks)
    return HUGE_VAL;
  double worst = 0;
  auto compare = [&](const std::vector<double>& a, const std::vector<double>& r) {
    for (std::size_t b = 0; b < r.size(); ++b) {
      if (std::isnan(a[b]) || std::isinf(a[b])) worst = HUGE_VAL;
      const double scale = std::max(std::abs(r[b]), 1e-300);
      worst = std::max(worst, std::abs(a[b] - r[b]) / scale);
    }
  };
  compare(t.deposited, reference.deposited);
  compare(t.fission, reference.fission);
  return worst;
}

/// One collision of `p` at a point of band `b` (its energy's: the caller looked the point up)
/// whose entries (one per nuclide) are `point`.
inline void collide(particle& p, std::uint32_t b, const cross_sections* point, const options& o,
                    tallies& t) {
  double total = 0, absorption = 0, scattering = 0, fission = 0;
  for (std::uint32_t k = 0; k < o.nuclides; ++k) {
    const double density = 1.0 / (1.0 + k);
    total += density * point[k].total;
    absorption += density * point[k].absorption;
    scattering += density * point[k].scattering;
    fission += density * point[k].fission;
  }
  ++t.collisions[b];
  t.fission[b] += 2.5 * fission / total;
  if (p.uniform() < leak_probability) {
    ++t.leaks[b];
    p.alive = false;
    return;
  }
  if (p.uniform() * total < absorption) {
    ++t.absorptions[b];
    t.deposited[b] += p.energy;
    p.alive = false;
    return;
  }
  // The nuclide it scatters off, in proportion to its scattering cross section.
  double pick = p.uniform() * scattering;
  std::uint32_t k = 0;
  for (; k + 1 < o.nuclides; ++k) {
    pick -= point[k].scattering / (1.0 + k);
    if (pick < 0) break;
  }
  const double mass = 1.0 + 2.0 * k, alpha = std::pow((mass - 1) / (mass + 1), 2);
  double after = p.energy < thermal_energy && p.uniform() < upscatter_probability
                     ? p.energy * (1.0 + p.uniform())
                     : p.energy * (alpha + (1 - alpha) * p.uniform());
  after = std::max(after, min_energy);
  t.deposited[b] += p.energy - after;
  p.energy = after;
}

/// Every particle tracked from birth to death against the whole table in one process.
inline tallies track_serial(const options& o) {
  std::vector<cross_sections> table;
  for (std::uint32_t b = 0; b < o.bands; ++b) {
    const std::vector<cross_sections> band = band_data(b, o);
    table.insert(table.end(), band.begin(), band.end());
  }
  tallies t(o.bands);
  for (std::uint64_t id = 0; id < o.particles; ++id) {
    particle p = born(id, o);
    while (p.alive) {
      const std::uint32_t g = point_of(p.energy, o);
      collide(p, g / o.points_per_band, &table[std::uint64_t{g} * o.nuclides], o, t);
    }
  }
  return t;
}

/// The particles [first, last) of tracker `t` of `trackers`.
inline std::uint64_t first_particle(std::uint64_t particles, std::uint64_t t,
                                    std::uint64_t trackers) {
  return particles * t / trackers;
}

/// The band servers and trackers of a run on `nodes` nodes.
struct layout {
  std::uint32_t servers = 0, trackers = 0, first_tracker = 0;

  layout(const options& o, std::uint32_t nodes)
      : servers(o.servers == 0 ? nodes : o.servers),
        trackers(o.servers == 0 ? nodes : nodes - o.servers),
        first_tracker(o.servers == 0 ? 0 : o.servers) {}

  std::uint32_t server_of(std::uint32_t band) const { return band % servers; }
  bool tracks(std::uint32_t node) const { return node >= first_tracker; }
};

// ---- roam: bands in global memory, read through the cache ----------------------------------

/// What a roam run measured, summed over the nodes.
struct result {
  double seconds = 0;         ///< the tracking, on the slowest node
  std::uint32_t passes = 0;   ///< passes over the bands (tracking::bands), the most of any node
  std::uint64_t lookups = 0;  ///< of points of other nodes' bands
  /// Fetches from other nodes: cache misses (band_reads::cache) or cached_array blocks, the
  /// prefetcher's included. Reads that memory of this process serves directly fetch nothing.
  std::uint64_t fetches = 0, fetched_bytes = 0;
  std::uint64_t evictions = 0;  ///< cache entries dropped to make room (band_reads::cache)

  /// 1 - fetches / lookups (as barnes_hut counts it): the share of lookups that fetched
  /// nothing in band passes with cache reads; with a prefetcher its fetches count too, and
  /// with cached_arrays a fetch is a block of points, so it is a lower bound there.
  double hit_rate() const {
    return lookups == 0 || fetches >= lookups ? 0.0 : 1.0 - double(fetches) / double(lookups);
  }
  tallies totals;
};

/// One node's tracking state, shared by its tasks.
struct tracker {
  const options& o;
  std::vector<roam::global_ptr<cross_sections>> bands;  // by band, wherever they live
  roam::node_id me;
  // band_reads::array: this node's copy of each other node's band (null for its own).
  std::vector<std::unique_ptr<roam::gas::cached_array<cross_sections>>> copies;
  std::mutex lock;
  tallies totals;  // under lock
  std::atomic<std::uint64_t> remote_lookups{0};
  std::atomic<std::uint32_t> frontier{0};  // the lowest band a particle has entered
  std::atomic<bool> tracking_done{false};  // tells the prefetcher to stop
  std::atomic<std::size_t> tasks_left{0};  // of the track_all under way

  tracker(const options& opt, std::vector<roam::global_ptr<cross_sections>> b)
      : o(opt), bands(std::move(b)), me(roam::this_node()), totals(opt.bands) {
    if (o.reads == band_reads::array)
      for (const auto& band : bands)
        copies.push_back(
            band.where() == me
                ? nullptr
                : std::make_unique<roam::gas::cached_array<cross_sections>>(
                      band, o.band_elements(), std::uint64_t{o.points_per_block} * o.nuclides));
  }

  /// Blocks the copies fetched, and their bytes (band_reads::array).
  std::pair<std::uint64_t, std::uint64_t> copied() const {
    std::pair<std::uint64_t, std::uint64_t> sum{0, 0};
    for (const auto& c : copies)
      if (c) {
        sum.first += c->fetches();
        sum.second += c->fetched_bytes();
      }
    return sum;
  }

  /// What one task tracks with: its tallies and counts, added to the node's once at its end
  /// (per collision they would make the workers fight over shared cache lines).
  struct task_state {
    tallies sums;
    std::uint64_t remote_lookups = 0;
    std::uint32_t lowest = 0;  // the lowest band this task's particles entered
    std::vector<cross_sections> buffer;
  };

  /// Point g's entries: in place when this node holds its band, else from its copy (a point
  /// never straddles two blocks) or through the cache into the task's buffer (a task waiting
  /// for a fetch yields its worker).
  const cross_sections* lookup(std::uint32_t g, task_state& ts) {
    const std::uint32_t b = g / o.points_per_band;
    const std::uint64_t first = std::uint64_t{g % o.points_per_band} * o.nuclides;
    const roam::global_ptr<cross_sections> at = bands[b] + static_cast<std::ptrdiff_t>(first);
    if (at.where() == me) return roam::gas::local(at, o.nuclides);
    ++ts.remote_lookups;
    if (!copies.empty()) return &(*copies[b])[first];
    ts.buffer.resize(o.nuclides);
    roam::gas::get(at, ts.buffer.data(), o.nuclides).get();
    return ts.buffer.data();
  }

  /// Tracks `particles[index[i]]` for i in [begin, end) (index: the identity when null), each
  /// while `keep_going(band of its energy)`, in one task.
  template <class While>
  void track(std::vector<particle>& particles, const std::vector<std::size_t>* index,
             std::size_t begin, std::size_t end, While keep_going) {
    // The last task to end tells the prefetcher, whatever happens: it may run under the
    // track_all waiting for these tasks, on the same stack, and only stops when told.
    struct last_one_tells {
      tracker& t;
      ~last_one_tells() {
        if (t.tasks_left.fetch_sub(1) == 1) t.tracking_done.store(true);
      }
    } tell{*this};
    task_state ts{tallies(o.bands), 0, 0, {}};
    for (std::size_t i = begin; i < end; ++i) {
      particle& p = particles[index ? (*index)[i] : i];
      while (p.alive) {
        const std::uint32_t g = point_of(p.energy, o), b = g / o.points_per_band;
        if (!keep_going(b)) break;
        if (b > ts.lowest) {
          ts.lowest = b;
          std::uint32_t seen = frontier.load(std::memory_order_relaxed);
          while (seen < ts.lowest && !frontier.compare_exchange_weak(seen, ts.lowest)) {
          }
        }
        collide(p, b, lookup(g, ts), o, ts.sums);
      }
    }
    remote_lookups.fetch_add(ts.remote_lookups, std::memory_order_relaxed);
    std::lock_guard guard(lock);
    totals.add(ts.sums);
  }

  /// Tracks the particles in tasks of o.particles_per_task (PPL's task per particle, grouped).
  template <class While>
  void track_all(std::vector<particle>& particles, const std::vector<std::size_t>* index,
                 While keep_going) {
    const std::size_t n = index ? index->size() : particles.size(), k = o.particles_per_task;
    tasks_left.store((n + k - 1) / k);
    roam::parallel_for(
        std::size_t{0}, (n + k - 1) / k,
        [&](std::size_t c) {
          track(particles, index, c * k, std::min(n, (c + 1) * k), keep_going);
        },
        1);
  }

  /// Fetches every point of each remote band into the cache, one band ahead of the frontier
  /// (so that a limited cache is not flooded), until the bands or the tracking end.
  void prefetch() {
    std::vector<cross_sections> buffer(o.nuclides * std::uint64_t{16});
    std::vector<roam::future<void>> pending;
    for (std::uint32_t b = 0; b < o.bands && !tracking_done.load(); ++b) {
      // Sleeping, not yielding: a task that yields in a loop stays runnable and takes the
      // CPU from the trackers (and, with more threads than cores, from other processes).
      while (b > frontier.load() + 1 && !tracking_done.load())
        roam::this_task::sleep_for(std::chrono::microseconds(200));
      if (tracking_done.load() || bands[b].where() == me) continue;
      if (!copies.empty()) {  // one element of each block fetches the block
        for (std::uint64_t e = 0; e < o.band_elements();
             e += std::uint64_t{o.points_per_block} * o.nuclides)
          (void)(*copies[b])[e];
        continue;
      }
      for (std::uint32_t p = 0; p < o.points_per_band; p += 16) {
        const std::uint32_t count = std::min<std::uint32_t>(16, o.points_per_band - p);
        pending.clear();
        for (std::uint32_t q = 0; q < count; ++q)
          pending.push_back(roam::gas::get(
              bands[b] + static_cast<std::ptrdiff_t>(std::uint64_t{p + q} * o.nuclides),
              buffer.data() + std::uint64_t{q} * o.nuclides, o.nuclides));
        for (auto& f : pending) f.get();
      }
    }
  }
};

/// Runs the transport on every node (call from the body of roam::run on each); every node
/// returns the same result.
inline result transport(const options& o) {
  const roam::node_id me = roam::this_node(), nodes = roam::num_nodes();
  o.validate(nodes);
  const layout lay(o, nodes);
  // Each server fills its bands in its own heap; every node learns where all of them are.
  std::vector<roam::global_ptr<cross_sections>> own;
  for (std::uint32_t b = 0; b < o.bands; ++b)
    if (lay.server_of(b) == me) {
      own.push_back(roam::gas::allocate<cross_sections>(me, o.band_elements(), o.policy).get());
      const std::vector<cross_sections> data = band_data(b, o);
      std::copy(data.begin(), data.end(), roam::gas::local(own.back(), data.size()));
    }
  const auto everyone = roam::allgather(own);
  std::vector<roam::global_ptr<cross_sections>> bands(o.bands);
  std::vector<std::size_t> next(nodes, 0);
  for (std::uint32_t b = 0; b < o.bands; ++b) {
    const std::uint32_t s = lay.server_of(b);
    bands[b] = everyone[s][next[s]++];
  }
  tracker t(o, bands);
  std::vector<particle> mine;
  if (lay.tracks(me)) {
    const std::uint64_t k = me - lay.first_tracker;
    for (std::uint64_t id = first_particle(o.particles, k, lay.trackers);
         id < first_particle(o.particles, k + 1, lay.trackers); ++id)
      mine.push_back(born(id, o));
  }
  const auto cache_before = roam::gas::node_cache_statistics();
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t passes = 0;
  if (o.mode == tracking::bands) {
    std::vector<std::size_t> in_band;
    for (bool alive = !mine.empty(); alive;) {
      ++passes;
      for (std::uint32_t b = 0; b < o.bands; ++b) {
        in_band.clear();
        for (std::size_t i = 0; i < mine.size(); ++i)
          if (mine[i].alive && band_of(mine[i].energy, o) == b) in_band.push_back(i);
        t.track_all(mine, &in_band, [b](std::uint32_t band) { return band == b; });
      }
      alive = std::any_of(mine.begin(), mine.end(), [](const particle& p) { return p.alive; });
    }
  } else if (!mine.empty()) {
    auto prefetcher = roam::spawn([&] { t.prefetch(); });
    t.track_all(mine, nullptr, [](std::uint32_t) { return true; });  // sets tracking_done
    prefetcher.join();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto cache = roam::gas::node_cache_statistics();
  const auto [copied_blocks, copied_bytes] = t.copied();
  t.copies.clear();
  // Every node is done reading the bands before their servers free them.
  const auto parts = roam::allgather(t.totals);
  for (const auto& p : own) roam::gas::deallocate(p).get();
  result r;
  r.totals = tallies(o.bands);
  for (const tallies& p : parts) r.totals.add(p);
  r.seconds = roam::allreduce(seconds, [](double a, double b) { return std::max(a, b); });
  r.passes =
      roam::allreduce(passes, [](std::uint32_t a, std::uint32_t b) { return std::max(a, b); });
  r.lookups = roam::allreduce(t.remote_lookups.load(), std::plus<>{});
  const bool copying = o.reads == band_reads::array;
  r.fetches =
      roam::allreduce(copying ? copied_blocks : cache.misses - cache_before.misses, std::plus<>{});
  r.evictions = roam::allreduce(cache.evictions - cache_before.evictions, std::plus<>{});
  r.fetched_bytes = roam::allreduce(
      copying ? copied_bytes : cache.fetched_bytes - cache_before.fetched_bytes, std::plus<>{});
  roam::gas::invalidate();  // the freed bands' copies
  return r;
}

// ---- MPI: rounds of all-to-all band requests ------------------------------------------------

/// What the MPI version measured.
struct mpi_result {
  double seconds = 0;
  std::uint32_t passes = 0;
  std::uint64_t band_transfers = 0;  ///< bands sent from a server to a tracker (all ranks)
  tallies totals;
};

/// EBMS's bulk-synchronous algorithm on `comm` (one rank per node, the same layout as the
/// roam version): passes over the bands until every particle is gone; per band, a round in
/// which every rank tells every server whether it needs the band (MPI_Alltoall), the band's
/// server sends it to those that do, and each tracks its particles in the band. A rank
/// holds one remote band at a time (its own bands it reads in place).
inline mpi_result transport_mpi(const options& o, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  o.validate(static_cast<std::uint32_t>(ranks));
  const layout lay(o, static_cast<std::uint32_t>(ranks));
  std::vector<std::vector<cross_sections>> own(o.bands);
  for (std::uint32_t b = 0; b < o.bands; ++b)
    if (lay.server_of(b) == static_cast<std::uint32_t>(rank)) own[b] = band_data(b, o);
  std::vector<particle> mine;
  if (lay.tracks(static_cast<std::uint32_t>(rank))) {
    const std::uint64_t k = static_cast<std::uint64_t>(rank) - lay.first_tracker;
    for (std::uint64_t id = first_particle(o.particles, k, lay.trackers);
         id < first_particle(o.particles, k + 1, lay.trackers); ++id)
      mine.push_back(born(id, o));
  }
  // Bands travel as bytes: MPI counts are ints, so a band goes in pieces of at most 1 GiB.
  const std::uint64_t band_bytes = o.band_bytes();
  auto pieces = [&](auto&& each) {
    for (std::uint64_t at = 0; at < band_bytes; at += std::uint64_t{1} << 30)
      each(at, static_cast<int>(std::min<std::uint64_t>(band_bytes - at, std::uint64_t{1} << 30)));
  };
  // One tag for every band: each round's MPI_Alltoall separates the rounds, and messages
  // between two ranks arrive in order (tags as large as the band count are not guaranteed).
  constexpr int band_tag = 7;
  std::vector<cross_sections> current(o.band_elements());
  std::vector<int> need(ranks), asked(ranks);
  std::vector<MPI_Request> sends;
  tallies t(o.bands);
  std::uint64_t transfers = 0;
  MPI_Barrier(comm);
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t passes = 0;
  for (int alive = 1; alive != 0;) {
    ++passes;
    for (std::uint32_t b = 0; b < o.bands; ++b) {
      const int server = static_cast<int>(lay.server_of(b));
      bool here = false;
      for (const particle& p : mine) here = here || (p.alive && band_of(p.energy, o) == b);
      std::fill(need.begin(), need.end(), 0);
      need[server] = here && server != rank ? 1 : 0;
      MPI_Alltoall(need.data(), 1, MPI_INT, asked.data(), 1, MPI_INT, comm);
      sends.clear();
      for (int r = 0; r < ranks; ++r)
        if (asked[r] != 0) {
          ++transfers;
          pieces([&](std::uint64_t at, int bytes) {
            sends.emplace_back();
            MPI_Isend(reinterpret_cast<const char*>(own[b].data()) + at, bytes, MPI_BYTE, r,
                      band_tag, comm, &sends.back());
          });
        }
      if (need[server] != 0)
        pieces([&](std::uint64_t at, int bytes) {
          MPI_Recv(reinterpret_cast<char*>(current.data()) + at, bytes, MPI_BYTE, server, band_tag,
                   comm, MPI_STATUS_IGNORE);
        });
      MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
      if (!here) continue;
      const cross_sections* band = server == rank ? own[b].data() : current.data();
      for (particle& p : mine)
        for (std::uint32_t g; p.alive && (g = point_of(p.energy, o)) / o.points_per_band == b;)
          collide(p, b, band + std::uint64_t{g % o.points_per_band} * o.nuclides, o, t);
    }
    int mine_alive =
        std::any_of(mine.begin(), mine.end(), [](const particle& p) { return p.alive; });
    MPI_Allreduce(&mine_alive, &alive, 1, MPI_INT, MPI_MAX, comm);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  mpi_result r;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, &transfers, 1, MPI_UINT64_T, MPI_SUM, comm);
  r.seconds = seconds;
  r.passes = passes;
  r.band_transfers = transfers;
  r.totals = tallies(o.bands);
  MPI_Allreduce(t.collisions.data(), r.totals.collisions.data(), static_cast<int>(o.bands),
                MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(t.absorptions.data(), r.totals.absorptions.data(), static_cast<int>(o.bands),
                MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(t.leaks.data(), r.totals.leaks.data(), static_cast<int>(o.bands), MPI_UINT64_T,
                MPI_SUM, comm);
  MPI_Allreduce(t.deposited.data(), r.totals.deposited.data(), static_cast<int>(o.bands),
                MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(t.fission.data(), r.totals.fission.data(), static_cast<int>(o.bands), MPI_DOUBLE,
                MPI_SUM, comm);
  return r;
}

}  // namespace ebms
