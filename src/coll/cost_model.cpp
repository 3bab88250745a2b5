// The cost models of thesis 4.2, one per algorithm, and the rules made from them.
#include <roam/coll/cost_model.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace roam::coll {

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

/// Rounds of a k-nomial tree over p ranks: ceil(log_k p) (k >= 2).
double levels(std::uint64_t p, std::uint64_t k) {
  double l = 0;
  for (std::uint64_t reach = 1; reach < p; ++l) {
    if (reach > p / k) return l + 1;  // the next step reaches p (and would overflow)
    reach *= k;
  }
  return l;
}

/// Recursive multiplying's main rounds among q = k^main participants, and the members
/// beside its leader of the largest range that folds around them (0: P is a power of k).
struct multiplying_rounds {
  double main = 0;
  double members = 0;
  bool ranges = false;
  multiplying_rounds(std::uint64_t p, std::uint64_t k) {
    std::uint64_t q = 1;
    while (q <= p / k) {
      q *= k;
      ++main;
    }
    ranges = q != p;
    const std::uint64_t largest_range = (p + q - 1) / q;  // ranges of ceil(P/q) ranks at most
    members = static_cast<double>(largest_range - 1);
  }
};

}  // namespace

double cost_model::time_us(collective what, const choice& how, std::uint64_t ranks,
                           std::uint64_t bytes) const noexcept {
  if (ranks <= 1) return 0;
  const double b = beta_us_per_byte, g = gamma_us_per_byte, o = overhead_us;
  const double p = static_cast<double>(ranks), n = static_cast<double>(bytes);
  // Radix 0 is 2; 1 is a radix of k_ring only, which the model does not look at.
  const std::uint64_t k = std::min<std::uint64_t>(std::max(how.k, 2u), ranks);
  const double km1 = static_cast<double>(k - 1), l = levels(ranks, k);
  const multiplying_rounds rm(ranks, k);
  // The latency of a round in which the busiest rank posts `sends` and `receives`.
  auto round = [&](double sends, double receives) {
    return alpha_us + (std::max(sends, 1.0) - 1 + std::max(receives, 1.0) - 1) * o;
  };
  const double a = round(1, 1);
  const double tree = round(km1, 1);        // a parent's k-1 sends (or receives)
  const double exchange = round(km1, km1);  // k-1 sends and k-1 receives
  // Ranges around recursive multiplying: a leader takes its members' data in one round and
  // hands them the result in another.
  const double m = rm.members;
  const double ranges_latency = rm.ranges ? round(1, m) + round(m, 1) : 0;
  const double fold = ranges_latency + m * n * (2 * b + g);  // whole vectors, combined
  switch (how.alg) {
    case algorithm::linear:
      switch (what) {
        case collective::bcast:
        case collective::gather:
          return round(p - 1, 1) + (p - 1) * n * b;
        case collective::reduce:
          return round(p - 1, 1) + (p - 1) * n * (b + g);
        case collective::allgather:  // every rank sends to and receives from every other
          return round(p - 1, p - 1) + (p - 1) * n * b;
        case collective::allreduce:
          return round(p - 1, p - 1) + (p - 1) * n * (b + g);
      }
      return never;
    case algorithm::knomial: {
      const double bcast = l * tree + km1 * n * l * b;
      const double reduce = l * tree + km1 * n * l * (b + g);
      const double gather = l * tree + (p - 1) * n * b;
      switch (what) {
        case collective::bcast:
          return bcast;
        case collective::reduce:
          return reduce;
        case collective::gather:
          return gather;
        case collective::allgather:
          return gather + l * tree + km1 * p * n * l * b;
        case collective::allreduce:
          return reduce + bcast;
      }
      return never;
    }
    case algorithm::recursive_multiplying:
      switch (what) {
        case collective::allgather:
          // Members' blocks in, everyone's out.
          return rm.main * exchange + (p - 1) * n * b + ranges_latency + m * (n + p * n) * b;
        case collective::bcast:  // a k-nomial scatter, then the allgather of n / p each
          return l * tree + n * (p - 1) / p * b + rm.main * exchange + n * (p - 1) / p * b +
                 ranges_latency + m * (n / p + n) * b;
        case collective::allreduce:
          return rm.main * (exchange + km1 * n * (b + g)) + fold;
        default:
          return never;
      }
    case algorithm::reduce_scatter_allgather:
      if (what != collective::allreduce) return never;
      return 2 * rm.main * exchange + 2 * n * (p - 1) / p * b + n * (p - 1) / p * g + fold;
    case algorithm::k_ring: {
      // P-1 rounds of one block each; the model has one kind of link, so the groups' size
      // (which pays where links within a group are faster) does not show in it.
      const double block = n / p;
      switch (what) {
        case collective::allgather:
          return (p - 1) * (a + n * b);
        case collective::bcast:  // a binomial scatter, then the ring allgather of n / p each
          return levels(ranks, 2) * a + n * (p - 1) / p * b + (p - 1) * (a + block * b);
        case collective::allreduce:
          return (p - 1) * (a + block * (b + g)) + (p - 1) * (a + block * b);
        default:
          return never;
      }
    }
    case algorithm::automatic:
      return never;  // not an algorithm: what the rules choose
  }
  return never;
}

choice cost_model::best(collective what, std::uint64_t ranks, std::uint64_t bytes) const noexcept {
  choice best{algorithm::linear, 0};
  double best_time = time_us(what, best, ranks, bytes);
  // Radices 2 ... 8, a few larger powers of two, and the rank count (one level, the most
  // messages at once).
  std::vector<std::uint64_t> radices;
  for (std::uint64_t k = 2; k <= 8 && k < ranks; ++k) radices.push_back(k);
  for (std::uint64_t k = 16; k <= 64 && k < ranks; k *= 2) radices.push_back(k);
  radices.push_back(ranks);
  for (const algorithm a :
       {algorithm::knomial, algorithm::recursive_multiplying, algorithm::reduce_scatter_allgather})
    for (const std::uint64_t k : radices) {
      const choice c{a, static_cast<unsigned>(k)};
      const double t = time_us(what, c, ranks, bytes);
      if (t < best_time * (1 - 1e-9)) {  // ties keep the simpler algorithm, the smaller radix
        best = c;
        best_time = t;
      }
    }
  // The ring's groups (k_ring's radix) make no difference to the model: the ring, k = 1.
  if (const double t = time_us(what, {algorithm::k_ring, 1}, ranks, bytes);
      t < best_time * (1 - 1e-9))
    best = {algorithm::k_ring, 1};
  return best;
}

tuning_rules rules_from(const cost_model& model) {
  tuning_rules rules;
  constexpr int max_rank_power = 24, max_byte_power = 30;
  constexpr std::uint64_t any = std::numeric_limits<std::uint64_t>::max();
  for (const collective what : {collective::bcast, collective::reduce, collective::gather,
                                collective::allgather, collective::allreduce}) {
    detail::rules_by_ranks& by_ranks = rules.rules_[static_cast<std::size_t>(what)];
    for (int i = 0; i <= max_rank_power; ++i) {
      const std::uint64_t ranks = std::uint64_t{1} << i;
      detail::rules_by_bytes by_bytes;
      for (int j = 0; j <= max_byte_power; ++j) {
        const std::uint64_t bytes = std::uint64_t{1} << j;
        const choice c = model.best(what, ranks, bytes);
        const std::uint64_t bound = j == max_byte_power ? any : bytes;
        if (!by_bytes.empty() && by_bytes.back().next.alg == c.alg && by_bytes.back().next.k == c.k)
          by_bytes.back().up_to = bound;
        else
          by_bytes.push_back({bound, c});
      }
      const std::uint64_t bound = i == max_rank_power ? any : ranks;
      detail::rules_by_ppn by_ppn{{any, std::move(by_bytes)}};
      by_ranks.push_back({bound, std::move(by_ppn)});
    }
  }
  return rules;
}

}  // namespace roam::coll
