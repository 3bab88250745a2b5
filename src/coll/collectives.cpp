// The collectives' entry points: each checks its call and runs the chosen algorithm.
#include "kernels.hpp"

#include <roam/base/error.hpp>
#include <roam/coll/coll_settings.hpp>
#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/algorithms.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace roam::coll::detail {

void check_root(const links& l, int root, const char* what) {
  if (root < 0 || root >= l.size())
    throw usage_error(std::string("roam::coll::") + what + ": root " + std::to_string(root) +
                      " is not one of the " + std::to_string(l.size()) + " ranks");
}

unsigned radix(const links& l, const choice& c) {
  const unsigned k = c.k == 0 ? default_radix(c.alg) : c.k;
  return std::max(smallest_radix(c.alg), std::min(k, static_cast<unsigned>(l.size())));
}

choice resolved(const links& l, collective what, std::size_t bytes, const choice& c) {
  if (c.k != 0 && c.k < smallest_radix(c.alg))
    throw usage_error(std::string("roam::coll::") + std::string(to_string(what)) + ": " +
                      std::string(to_string(c.alg)) + " needs a radix k of at least " +
                      std::to_string(smallest_radix(c.alg)) + ", not " + std::to_string(c.k));
  if (c.alg != algorithm::automatic) return c;
  if (const choice f = l.forced(); f.alg != algorithm::automatic && serves(f.alg, what)) return f;
  return l.rules().select(what, static_cast<std::uint64_t>(l.size()), l.processes_per_node(),
                          bytes);
}

std::size_t bytes_of(std::size_t a, std::size_t b, const char* what) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b)
    throw usage_error(std::string("roam::coll::") + what + ": " + std::to_string(a) + " x " +
                      std::to_string(b) + " bytes overflow the address space");
  return a * b;
}

void not_offered(const choice& c, const char* what) {
  throw usage_error(std::string("roam::coll::") + what + ": the " + std::string(to_string(c.alg)) +
                    " algorithm has no " + what +
                    " (docs/guide/collectives.md lists which algorithm serves which)");
}

void bcast(links& l, std::byte* data, std::size_t bytes, int root, const choice& asked) {
  check_root(l, root, "bcast");
  const choice c = resolved(l, collective::bcast, bytes, asked);
  switch (c.alg) {
    case algorithm::linear:
      return linear_bcast(l, data, bytes, root);
    case algorithm::knomial:
      return knomial_bcast(l, data, bytes, root, radix(l, c));
    case algorithm::recursive_multiplying: {
      const unsigned k = radix(l, c);
      const blocks chunks{bytes, static_cast<std::uint64_t>(l.size()), 0};
      knomial_scatter(l, data, chunks, root, k);
      return recursive_multiplying_allgather(l, data, chunks, root, k);
    }
    case algorithm::k_ring: {
      // Scatter by a binomial tree: the radix is the ring groups' size, not the tree's.
      const blocks chunks{bytes, static_cast<std::uint64_t>(l.size()), 0};
      knomial_scatter(l, data, chunks, root, 2);
      return k_ring_allgather(l, data, chunks, root, radix(l, c));
    }
    default:
      not_offered(c, "bcast");
  }
}

void reduce(links& l, const std::byte* in, std::byte* out, std::size_t count, const reduction& r,
            int root, const choice& asked) {
  check_root(l, root, "reduce");
  const choice c =
      resolved(l, collective::reduce, bytes_of(count, r.element_size, "reduce"), asked);
  switch (c.alg) {
    case algorithm::linear:
      return linear_reduce(l, in, out, count, r, root);
    case algorithm::knomial:
      return knomial_reduce(l, in, out, count, r, root, radix(l, c));
    default:
      not_offered(c, "reduce");
  }
}

void allreduce(links& l, const std::byte* in, std::byte* out, std::size_t count, const reduction& r,
               const choice& asked) {
  choice c =
      resolved(l, collective::allreduce, bytes_of(count, r.element_size, "allreduce"), asked);
  // k-ring combines in ring order. Chosen by the rules or the setting rather than by the
  // caller, it gives way to the reduce-scatter + allgather, which keeps rank order.
  if (c.alg == algorithm::k_ring && !r.commutative && asked.alg == algorithm::automatic)
    c = {algorithm::reduce_scatter_allgather, std::max(c.k, 2u)};
  switch (c.alg) {
    case algorithm::linear:
      return linear_allreduce(l, in, out, count, r);
    case algorithm::knomial: {
      const unsigned k = radix(l, c);
      knomial_reduce(l, in, out, count, r, 0, k);
      return knomial_bcast(l, out, count * r.element_size, 0, k);
    }
    case algorithm::recursive_multiplying:
      return recursive_multiplying_allreduce(l, in, out, count, r, radix(l, c));
    case algorithm::reduce_scatter_allgather:
      return reduce_scatter_allgather_allreduce(l, in, out, count, r, radix(l, c));
    case algorithm::k_ring:
      return k_ring_allreduce(l, in, out, count, r, radix(l, c));
    case algorithm::automatic:
      break;  // resolved above: rules name concrete algorithms
  }
  not_offered(c, "allreduce");
}

void gather_blocks(links& l, const std::byte* in, std::byte* out, const blocks& b, int root,
                   const choice& c) {
  switch (c.alg) {
    case algorithm::linear:
      return linear_gather(l, in, out, b, root);
    case algorithm::knomial: {
      // The tree cuts ranks relative to the root: blocks of any size are renumbered.
      std::vector<std::size_t> edges;
      blocks relative = b;
      if (b.edges != nullptr && root != 0) {
        edges.resize(b.parts + 1);
        for (std::uint64_t i = 0; i < b.parts; ++i) {
          const std::uint64_t a = (i + static_cast<std::uint64_t>(root)) % b.parts;
          edges[i + 1] = edges[i] + (b.edge(a + 1) - b.edge(a));
        }
        relative.edges = edges.data();
      }
      return knomial_gather(l, in, out, relative, root, radix(l, c));
    }
    default:
      not_offered(c, "gather");
  }
}

void allgather_blocks(links& l, const std::byte* in, std::byte* out, const blocks& b,
                      const choice& c) {
  switch (c.alg) {
    case algorithm::linear:
      return linear_gather(l, in, out, b, -1);
    case algorithm::knomial: {
      const unsigned k = radix(l, c);
      knomial_gather(l, in, out, b, 0, k);
      return knomial_bcast(l, out, b.total, 0, k);
    }
    case algorithm::recursive_multiplying:
    case algorithm::k_ring: {
      if (b.total == 0) return;
      const auto me = static_cast<std::uint64_t>(l.rank());
      if (const std::size_t mine = b.edge(me + 1) - b.edge(me); mine != 0)
        std::memmove(out + b.edge(me), in, mine);
      if (c.alg == algorithm::k_ring) return k_ring_allgather(l, out, b, 0, radix(l, c));
      return recursive_multiplying_allgather(l, out, b, 0, radix(l, c));
    }
    default:
      not_offered(c, "allgather");
  }
}

void gather(links& l, const std::byte* in, std::byte* out, std::size_t bytes, int root,
            const choice& asked) {
  check_root(l, root, "gather");
  const std::size_t all = bytes_of(bytes, static_cast<std::size_t>(l.size()), "gather");
  gather_blocks(l, in, out, {all, static_cast<std::uint64_t>(l.size()), bytes}, root,
                resolved(l, collective::gather, bytes, asked));
}

void allgather(links& l, const std::byte* in, std::byte* out, std::size_t bytes,
               const choice& asked) {
  const choice c = resolved(l, collective::allgather, bytes, asked);
  const std::size_t all = bytes_of(bytes, static_cast<std::size_t>(l.size()), "allgather");
  allgather_blocks(l, in, out, {all, static_cast<std::uint64_t>(l.size()), bytes}, c);
}

const tuning_rules& links::rules() const { return default_rules(); }

choice links::forced() const { return forced_choice(); }

choice forced_choice() {
  // Read once, like the rules; a malformed value fails every call that would use it.
  struct read_once {
    choice forced;
    std::string problem;
  };
  static const read_once read = [] {
    const char* text = std::getenv("ROAM_COLL_ALGORITHM");
    if (!text || !*text) return read_once{};
    try {
      return read_once{choice_named(text, "ROAM_COLL_ALGORITHM"), {}};
    } catch (const config_error& e) {
      return read_once{{}, e.message()};
    }
  }();
  if (!read.problem.empty()) throw config_error(read.problem);
  return read.forced;
}

const tuning_rules& default_model_rules() {
  static const tuning_rules rules = rules_from(cost_model{});
  return rules;
}

const tuning_rules& default_rules() {
  // Read once; a file that fails to load is reported again at the next call.
  static std::atomic<const tuning_rules*> ready{nullptr};
  if (const tuning_rules* r = ready.load(std::memory_order_acquire)) return *r;
  static std::mutex lock;
  static std::optional<tuning_rules> rules;
  std::lock_guard guard(lock);
  if (!rules) {
    const char* path = std::getenv("ROAM_COLL_TUNING");
    if (!path || !*path) {
      ready.store(&default_model_rules(), std::memory_order_release);
      return default_model_rules();
    }
    rules = tuning_rules::load(path);
    ready.store(&*rules, std::memory_order_release);
  }
  return *rules;
}

}  // namespace roam::coll::detail
