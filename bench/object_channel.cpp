// Small messages to mobile objects on the other rank: one by one (mobile_ptr::send) and
// through a channel to the objects (roam::channel<&T::method>, aggregated), in one run.
// Each rank sends N messages to random objects among the 1024 of the other rank.
//   ./run bench object_channel [--json] [--messages N] [--rounds R]
// JSON: {"bench":"object_channel","ranks":2,"direct_rate":…,"channel_rate":…,"ratio":…}
// (messages per second per rank; ratio = channel / direct).
#include "bale/driver.hpp"
#include "bench_options.hpp"
#include "bench_report.hpp"

#include "../examples/bale/random_stream.hpp"

#include <roam/roam.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {

struct cell {
  long hits = 0;
  void touch(std::uint32_t weight) { hits += weight; }
};

constexpr std::uint32_t objects_per_rank = 1024;
std::vector<roam::mobile_ptr<cell>> targets;  // the other rank's objects

// Runs on the node's worker, yielding between slices so that arriving messages run.
void send_messages(long messages, bool through_channel) {
  static const auto touch = roam::channel<&cell::touch>();
  bale::random_stream random(7, roam::this_node());
  for (long i = 0; i < messages; ++i) {
    const auto& p = targets[random.next() % objects_per_rank];
    if (through_channel)
      touch(p, std::uint32_t{1});
    else
      p.send<&cell::touch>(std::uint32_t{1});
    if (i % 4096 == 4095) roam::this_task::yield();
  }
}

double timed(long messages, bool through_channel) {
  roam::barrier();
  const auto start = std::chrono::steady_clock::now();
  roam::call(roam::this_node(), send_messages, messages, through_channel).get();
  roam::barrier();
  roam::wait_quiescence();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  long messages = 1'000'000, rounds = 3;
  roam_bench::options_with_json command_line("object_channel");
  command_line.add("--messages", messages, "messages each rank sends per measurement")
      .add("--rounds", rounds, "measurements of each version (the best counts)")
      .parse(argc, argv);
  rounds = std::max(1L, rounds);
  int ranks = 1;
  const int rank = bale_bench::start_mpi(argc, argv, ranks);
  double direct = 1e300, channel = 1e300;
  long hits = 0;
  roam::run(bale_bench::roam_settings(), [&] {
    std::vector<roam::mobile_ptr<cell>> mine;
    for (std::uint32_t k = 0; k < objects_per_rank; ++k) mine.push_back(roam::make_mobile<cell>());
    const auto all = roam::allgather(mine);
    targets = all[(roam::this_node() + 1) % roam::num_nodes()];
    for (long r = 0; r < rounds; ++r) {  // taking turns: noise hits both alike
      direct = std::min(direct, timed(messages, false));
      channel = std::min(channel, timed(messages, true));
    }
    for (auto& p : mine) hits += p.call([](const cell& c) { return c.hits; }).get();
    roam::barrier();
  });
  const bool right = bale_bench::everywhere(hits == 2 * rounds * messages);
  direct = bale_bench::slowest(direct);
  channel = bale_bench::slowest(channel);
  if (rank == 0) {
    const double sent = static_cast<double>(messages);
    const double direct_rate = sent / direct, channel_rate = sent / channel;
    std::printf("%-16s %6s %10s %16s %16s %8s\n", "bench", "ranks", "messages", "direct_per_s",
                "channel_per_s", "ratio");
    std::printf("%-16s %6d %10ld %16.0f %16.0f %8.3f\n", "object_channel", ranks, messages,
                direct_rate, channel_rate, channel_rate / direct_rate);
    if (!right) std::printf("WRONG: some messages ran more or less than once\n");
    if (command_line.json)
      std::printf(
          "{\"bench\":\"object_channel\",\"ranks\":%d,\"direct_rate\":%s,\"channel_rate\":%s,"
          "\"ratio\":%s}\n",
          ranks, roam_bench::number(direct_rate).c_str(), roam_bench::number(channel_rate).c_str(),
          roam_bench::number(channel_rate / direct_rate).c_str());
  }
  MPI_Finalize();
  return right ? 0 : 1;
}
