// The cost of a stale directory: round-trip time of a call to a mobile object right after
// it moved (the message goes to the old node, which forwards it; the reply and a location
// update come back) versus the calls after it (sent straight to the new node).
// Three virtual nodes of the inproc transport: node 0 calls; the object moves between
// nodes 1 and 2, at node 1's request, so node 0 learns of each move only by forwarding.
//   ./run bench forwarding [--json] [--rounds N]
#include "bench_options.hpp"
#include "bench_report.hpp"

#include <roam/roam.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct item {
  long value = 0;
  long get() const { return value; }
};

void move_to(roam::mobile_ptr<item> p, roam::node_id dest) { roam::migrate(p, dest).get(); }

double micros(clock_type::time_point since) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  long rounds = 3000;
  roam_bench::options_with_json command_line("forwarding");
  command_line.add("--rounds", rounds, "migrations, each followed by the timed calls")
      .parse(argc, argv);
  constexpr int later_calls = 10;
  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::inproc;
  cfg.nodes = 3;
  cfg.threads = 1;
  std::vector<double> first, later;
  roam::run(cfg, [&] {
    if (roam::this_node() != 0) return;
    // Created by node 1, so node 0 knows nothing of it but its home.
    auto p = roam::call(1, [] { return roam::make_mobile<item>(); }).get();
    for (int i = 0; i < 100; ++i) (void)p.call<&item::get>().get();  // warm up
    for (long r = 0; r < rounds; ++r) {
      roam::call(1, move_to, p, static_cast<roam::node_id>(r % 2 == 0 ? 2 : 1)).get();
      auto start = clock_type::now();
      (void)p.call<&item::get>().get();  // forwarded by the old node
      first.push_back(micros(start));
      start = clock_type::now();
      for (int i = 0; i < later_calls; ++i) (void)p.call<&item::get>().get();
      later.push_back(micros(start) / later_calls);
    }
  });
  const double first_us = roam_bench::median(first), later_us = roam_bench::median(later);
  std::printf("%28s %12s\n", "call round trip (median)", "us");
  std::printf("%28s %12.3f\n", "first after a migration", first_us);
  std::printf("%28s %12.3f\n", "later calls", later_us);
  std::printf("%28s %12.3f\n", "forwarding cost", first_us - later_us);
  if (command_line.json)
    std::printf("{\"bench\":\"forwarding\",\"first_us\":%s,\"later_us\":%s}\n",
                roam_bench::number(first_us).c_str(), roam_bench::number(later_us).c_str());
  return 0;
}
