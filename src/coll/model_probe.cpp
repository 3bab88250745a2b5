// The probe behind the default rules of each binding: α, β and o from ping-pongs of rank 0
// with rank P/2 over the binding's own links (so that they include what a transfer costs
// there), γ from rank 0 combining doubles through the reductions' code, rank 0's values to
// all.
#include "kernels.hpp"

#include <roam/base/error.hpp>
#include <roam/coll/detail/algorithms.hpp>
#include <roam/coll/detail/model_probe.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace roam::coll::detail {

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::optional<cost_model> model_from_environment() {
  const char* given = std::getenv("ROAM_COLL_MODEL");
  if (!given || !*given) return std::nullopt;
  return parse_cost_model(given, "ROAM_COLL_MODEL");
}

cost_model parse_cost_model(const std::string& text, const std::string& what) {
  cost_model model;
  double* const fields[] = {&model.alpha_us, &model.beta_us_per_byte, &model.gamma_us_per_byte,
                            &model.overhead_us};
  std::istringstream in(text);
  std::size_t read = 0;
  bool good = true;
  for (double* field : fields) {
    double value = -1;
    if (read > 0) {
      char comma = 0;
      if (!(in >> comma)) break;  // the end: three numbers, or four
      if (comma != ',') {
        good = false;
        break;
      }
    }
    if (!(in >> value) || !(value >= 0)) {
      good = false;
      break;
    }
    *field = value;
    ++read;
  }
  if (!good || read < 3 || !(in >> std::ws).eof())
    throw config_error(what + "='" + text +
                       "': expected three or four non-negative numbers "
                       "alpha,beta,gamma[,overhead] (µs, µs per byte, µs per byte, µs)");
  return model;
}

cost_model probe_model(links& l, int tag) {
  // Every rank takes part in every transfer below whatever its own ROAM_COLL_MODEL says,
  // so that a rank whose setting differs (or is malformed) cannot leave the others
  // waiting: rank 0's setting decides, and a malformed one is thrown after the transfers.
  std::optional<cost_model> given;
  std::string problem;
  try {
    given = model_from_environment();
  } catch (const config_error& e) {
    problem = e.message();
  }
  enum : std::uint8_t { measure, use_given, malformed };
  std::uint8_t mode = !problem.empty() ? malformed : given ? use_given : measure;
  bcast(l, reinterpret_cast<std::byte*>(&mode), sizeof mode, 0, {algorithm::knomial, 2});
  const cost_model start = given.value_or(cost_model{});
  double v[4] = {start.alpha_us, start.beta_us_per_byte, start.gamma_us_per_byte,
                 start.overhead_us};
  // Rank 0 and the rank halfway, which under block placement sits in another process
  // (another host) when there is more than one: the link most transfers cross.
  const int rank = l.rank(), partner = l.size() / 2;
  if (mode == measure && l.size() >= 2 && (rank == 0 || rank == partner)) {
    constexpr std::size_t large = std::size_t{256} << 10;
    std::vector<std::byte> buffer(large);
    const int peer = rank == 0 ? partner : 0;
    // Rank 0 posts `burst` messages of `bytes` at once (distinct 8-byte pieces of the
    // buffer and tags tag ... tag + burst - 1 when there are several: one transfer per
    // tag and direction in a round, as links require), the partner posts as many
    // receives, then answers with one: the round trip of a round in which one rank posts
    // `burst` messages. The fastest of `reps`: ranks oversubscribing their cores (or
    // sharing them with other jobs) are descheduled now and then, which a mean would
    // count as link latency.
    constexpr std::size_t burst = 16;
    auto round_trip_us = [&](std::size_t bytes, std::size_t messages, int reps) {
      double fastest = std::numeric_limits<double>::infinity();
      for (int i = 0; i < reps; ++i) {
        const double start = now_us();
        if (rank == 0) {
          for (std::size_t m = 0; m < messages; ++m)
            l.send(peer, tag + static_cast<int>(m), buffer.data() + m * 8, bytes);
          l.complete();
          l.recv(peer, tag, buffer.data(), bytes);
          l.complete();
        } else {
          for (std::size_t m = 0; m < messages; ++m)
            l.recv(peer, tag + static_cast<int>(m), buffer.data() + m * 8, bytes);
          l.complete();
          l.send(peer, tag, buffer.data(), bytes);
          l.complete();
        }
        fastest = std::min(fastest, now_us() - start);
      }
      return fastest;
    };
    (void)round_trip_us(8, 1, 5);  // warm-up
    const double small = round_trip_us(8, 1, 50), big = round_trip_us(large, 1, 10);
    const double bursts = round_trip_us(8, burst, 20);
    v[0] = small / 2;
    v[1] = std::max(0.0, (big - small) / 2 / static_cast<double>(large));
    // The model charges o for each send beyond a round's first and each receive beyond
    // its first; here one rank posts burst - 1 more sends and the other as many receives,
    // which overlap each other: the difference is (burst - 1) o.
    v[3] = std::max(0.0, (bursts - small) / static_cast<double>(burst - 1));
    if (rank == 0) {
      const std::plus<> plus;
      const auto sum = reduction_of<double>(plus);
      std::vector<double> acc(large / sizeof(double), 1.0), next(acc.size(), 2.0);
      double fastest = std::numeric_limits<double>::infinity();
      for (int rep = 0; rep < 10; ++rep) {
        const double start = now_us();
        sum.combine(sum.op, reinterpret_cast<std::byte*>(acc.data()),
                    reinterpret_cast<const std::byte*>(next.data()), acc.size());
        fastest = std::min(fastest, now_us() - start);
      }
      v[2] = fastest / static_cast<double>(large);
    }
  }
  // Explicit choices: the rules are not there yet.
  bcast(l, reinterpret_cast<std::byte*>(v), sizeof v, 0, {algorithm::knomial, 2});
  if (!problem.empty()) throw config_error(problem);
  if (mode == malformed)
    throw config_error("ROAM_COLL_MODEL is malformed on rank 0 (every rank must see the same)");
  return cost_model{v[0], v[1], v[2], v[3]};
}

}  // namespace roam::coll::detail
