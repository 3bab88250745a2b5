#include <roam/base/error.hpp>
#include <roam/core/config.hpp>
#include <roam/core/runtime.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct argv_builder {
  explicit argv_builder(std::vector<std::string> w) : words(std::move(w)) {}
  std::vector<std::string> words;
  std::vector<char*> pointers;
  int argc = 0;
  char** build() {
    pointers.clear();
    for (auto& w : words) pointers.push_back(w.data());
    pointers.push_back(nullptr);
    argc = static_cast<int>(words.size());
    return pointers.data();
  }
};

}  // namespace

TEST(Config, FlagsOverrideEnvironmentAndAreRemovedFromArgv) {
  setenv("ROAM_THREADS", "3", 1);
  setenv("ROAM_NODES", "2", 1);
  argv_builder a(
      {"prog", "--roam-threads", "5", "input.txt", "--roam-pin", "-v", "--roam-comm-thread=off"});
  char** argv = a.build();
  roam::config c = roam::config::from_args(a.argc, argv);
  EXPECT_EQ(c.threads, 5u);
  EXPECT_EQ(c.nodes, 2u);
  EXPECT_TRUE(c.pin);
  EXPECT_FALSE(c.comm_thread);
  ASSERT_EQ(a.argc, 3);
  EXPECT_STREQ(argv[1], "input.txt");
  EXPECT_STREQ(argv[2], "-v");
  EXPECT_EQ(argv[3], nullptr);
  unsetenv("ROAM_THREADS");
  unsetenv("ROAM_NODES");
}

TEST(Config, InvalidValuesAreRejectedWithTheirName) {
  auto expect_error = [](std::vector<std::string> words, const std::string& fragment) {
    argv_builder a(std::move(words));
    char** argv = a.build();
    try {
      roam::config::from_args(a.argc, argv);
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const roam::config_error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error({"p", "--roam-nodes", "0"}, "--roam-nodes");
  expect_error({"p", "--roam-nodes=70000"}, "[1, 4096]");
  expect_error({"p", "--roam-threads", "-1"}, "--roam-threads");
  expect_error({"p", "--roam-transport", "tcp"}, "expected auto, inproc or mpi");
  expect_error({"p", "--roam-comm-thread=maybe"}, "expected on|off");
  expect_error({"p", "--roam-inline-bytes"}, "needs a value");
  expect_error({"p", "--roam-nope"}, "unknown flag");
  expect_error({"p", "--roam-aggregate-growth", "3"}, "power of two");
  expect_error({"p", "--roam-aggregate-growth", "128"}, "[1, 64]");
  expect_error({"p", "--roam-stack-size", "8K"}, "--roam-stack-size");
  expect_error({"p", "--roam-stack-size", "2G"}, "[16K, 1024M]");
  expect_error({"p", "--roam-stack-size", "12X"}, "K, M or G suffix");
  expect_error({"p", "--roam-stack-size", "M"}, "--roam-stack-size");
  setenv("ROAM_SPIN_US", "soon", 1);
  expect_error({"p"}, "environment variable ROAM_SPIN_US");
  unsetenv("ROAM_SPIN_US");
}

TEST(Config, StackSizesTakeBinarySuffixes) {
  auto stack_of = [](std::string value) {
    argv_builder a({"p", "--roam-stack-size", std::move(value)});
    char** argv = a.build();
    return roam::config::from_args(a.argc, argv).stack_bytes;
  };
  EXPECT_EQ(roam::config{}.stack_bytes, 128u * 1024);
  EXPECT_EQ(stack_of("262144"), 262144u);
  EXPECT_EQ(stack_of("256K"), 256u * 1024);
  EXPECT_EQ(stack_of("64KiB"), 64u * 1024);
  EXPECT_EQ(stack_of("2M"), 2u << 20);
  EXPECT_EQ(stack_of("1G"), 1u << 30);
  setenv("ROAM_STACK_SIZE", "512K", 1);
  EXPECT_EQ(roam::config::from_environment().stack_bytes, 512u * 1024);
  unsetenv("ROAM_STACK_SIZE");
}

// The mpi transport's frame holds a full aggregation bundle (up to 64 KiB) or the inline
// threshold, whichever is larger.
TEST(Config, TheFrameHoldsTheLargestBundle) {
  roam::config c;
  EXPECT_EQ(c.frame_payload_bytes(), 8192u * 4);  // defaults: 8 KiB buffers, growth 4
  c.aggregate_growth = 1;
  EXPECT_EQ(c.frame_payload_bytes(), 8192u);
  c.inline_bytes = 20000;
  EXPECT_EQ(c.frame_payload_bytes(), 20000u);
  c.inline_bytes = 512;
  c.aggregate_bytes = 1u << 20;
  EXPECT_EQ(c.frame_payload_bytes(), 65536u);  // large buffers go split-phase
  c.aggregate_bytes = 0;
  EXPECT_EQ(c.frame_payload_bytes(), 512u);
}

TEST(Config, HelpListsEveryFlagAndVariable) {
  std::string help = roam::config::help_text();
  for (const char* name : {"--roam-transport",
                           "ROAM_TRANSPORT",
                           "--roam-nodes",
                           "ROAM_NODES",
                           "--roam-threads",
                           "ROAM_THREADS",
                           "--roam-comm-thread",
                           "ROAM_COMM_THREAD",
                           "--roam-inline-bytes",
                           "--roam-pin",
                           "--roam-spin-us",
                           "--roam-poll-us",
                           "--roam-lend-app-thread",
                           "--roam-aggregate-bytes",
                           "--roam-aggregate-growth",
                           "ROAM_AGGREGATE_GROWTH",
                           "--roam-stack-size",
                           "ROAM_STACK_SIZE",
                           "--roam-nodes-per-rank",
                           "ROAM_NODES_PER_RANK"})
    EXPECT_NE(help.find(name), std::string::npos) << name;
}

// One process is one rank: nodes per rank sets the nodes of an inproc run, and a --roam-nodes
// that says otherwise is an error naming both rather than a silent choice.
TEST(Config, NodesPerRankSetsTheNodesOfOneProcess) {
  roam::config cfg;
  cfg.transport = roam::transport_kind::inproc;
  cfg.threads = 1;
  cfg.nodes_per_rank = 3;
  std::atomic<int> bodies{0};
  ASSERT_EQ(roam::run(cfg,
                      [&] {
                        EXPECT_EQ(roam::num_nodes(), 3u);
                        ++bodies;
                      }),
            0);
  EXPECT_EQ(bodies.load(), 3);
  cfg.nodes = 2;
  try {
    roam::run(cfg, [] {});
    ADD_FAILURE() << "--roam-nodes 2 with --roam-nodes-per-rank 3 ran";
  } catch (const roam::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("--roam-nodes 2 and --roam-nodes-per-rank 3 disagree"),
              std::string::npos)
        << e.what();
  }
  cfg.nodes = 3;
  EXPECT_EQ(roam::run(cfg, [] {}), 0);
}
