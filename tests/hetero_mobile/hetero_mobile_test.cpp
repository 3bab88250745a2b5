// Heterogeneous data inside roam (thesis §5.2): hetero objects as message arguments, mobile
// objects that own device data and migrate with it, global pointers with put/get, and waits for
// device work that suspend a handler instead of blocking its worker. The suite runs with 2
// virtual nodes in one process and under mpiexec -n 2, on the backends ROAM_TEST_BACKENDS names
// (host alone copies like a discrete device, so transfers happen on every set).
#include <roam/hetero_mobile.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../hetero/test_kernels.hpp"

namespace {

roam::hetero_options test_options() {
  roam::hetero_options options;
  const char* backends = std::getenv("ROAM_TEST_BACKENDS");
  options.backends = backends != nullptr ? backends : "host";
  options.host_separate_memory = options.backends == "host";
  options.host_threads = 2;
  return options;
}

template <class Body>
void run_everywhere(Body body) {
  roam::hetero_runtime devices(test_options());
  ASSERT_EQ(roam::run(roam::config::from_environment(), body), 0);
}

roam::node_id next_node() { return (roam::this_node() + 1) % roam::num_nodes(); }

std::uint64_t sum_of(const std::vector<unsigned>& v) {
  return std::accumulate(v.begin(), v.end(), std::uint64_t{0});
}

void submit_fill(roam::hetero_object<unsigned>& x, unsigned value) {
  const int n = static_cast<int>(x.size());
  roam::hetero_task(fill, roam::launch_dims::linear(x.size()), roam::out(x), value, n).submit();
}

roam::hetero_task submit_increment(roam::hetero_object<unsigned>& x) {
  const int n = static_cast<int>(x.size());
  roam::hetero_task t(increment, roam::launch_dims::linear(x.size()), roam::inout(x), n);
  t.submit();
  return t;
}

// Runs on the receiving node: increments its copy on a device and reports the sum.
std::uint64_t increment_and_sum(roam::hetero_object<unsigned> x) {
  if (!x) return 0;
  EXPECT_EQ(x.state_on_host(), roam::coherence::modified);  // new, valid on the host only
  submit_increment(x).wait();
  return sum_of(x.to_vector());
}

}  // namespace

TEST(HeteroMessages, ObjectsTravelAsArgumentsInlineOrSplitAndStayIndependent) {
  run_everywhere([] {
    for (std::size_t n : {std::size_t{16}, std::size_t{100'000}}) {  // 64 B inline; 400 KB split
      roam::hetero_object<unsigned> x(n);
      submit_fill(x, 7);  // the newest data is on a device when the message is packed
      const std::uint64_t remote = roam::call(next_node(), &increment_and_sum, x).get();
      EXPECT_EQ(remote, n * 8u) << n << " elements";
      EXPECT_EQ(sum_of(x.to_vector()), n * 7u) << "the sender's object is its own";
    }
    EXPECT_EQ(roam::call(next_node(), &increment_and_sum, roam::hetero_object<unsigned>()).get(),
              0u)
        << "an empty handle arrives empty";
    roam::barrier();
  });
}

namespace {

// A mobile object that owns device data. Its handlers submit tasks without waiting for them;
// migrating it must still carry the results of every task submitted before.
struct device_block {
  roam::hetero_object<unsigned> cells;
  unsigned steps = 0;
  unsigned checks = 0;

  device_block() = default;
  explicit device_block(std::size_t n) : cells(n) {}
  template <class Ar>
  void serialize(Ar& ar) {
    ar(cells, steps, checks);
  }

  void step() {
    submit_increment(cells);
    ++steps;
  }
  // The sum of the cells before this call's own increment, which it waits for inside the
  // handler (suspending, then going on).
  std::uint64_t total() {
    submit_increment(cells).wait();
    ++checks;
    return sum_of(cells.to_vector()) - std::uint64_t{checks} * cells.size();
  }
  unsigned step_count() const { return steps; }
  roam::node_id where() const { return roam::this_node(); }
};

}  // namespace

TEST(HeteroMobileObjects, MigrationWaitsForTheObjectsTasksAndCarriesTheirResults) {
  run_everywhere([] {
    constexpr std::size_t n = 1 << 18;
    auto block = roam::make_mobile<device_block>(n);
    for (int i = 0; i < 12; ++i) block.send<&device_block::step>();
    roam::migrate(block, next_node()).get();  // packed while steps may still run on a device
    EXPECT_EQ(roam::locate(block).get(), next_node());
    EXPECT_EQ(block.call<&device_block::where>().get(), next_node());
    for (int i = 0; i < 3; ++i) block.send<&device_block::step>();
    EXPECT_EQ(block.call<&device_block::step_count>().get(), 15u);
    EXPECT_EQ(block.call<&device_block::total>().get(), 15u * n);
    roam::migrate(block, roam::this_node()).get();
    EXPECT_EQ(block.call<&device_block::total>().get(), 15u * n);
    roam::destroy(block).get();
    roam::barrier();
  });
}

namespace {

// The migration test's gate: a host request held on it keeps the tasks behind it waiting.
std::optional<roam::hetero_object<unsigned>> migration_gate;  // per process

// A mobile object whose handler leaves behind a task that opted out of implicit ordering: a
// read request for packing would not wait for it, so migration must wait for every task on
// the object (tasks_done), or it would carry the data without that task's write.
struct gated_block {
  roam::hetero_object<unsigned> cells;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(cells);
  }
  gated_block() = default;
  explicit gated_block(std::size_t n) : cells(n, 1u) {}

  void arm() {
    migration_gate.emplace(16, 0u);
    (void)migration_gate->request(roam::data_access::read_write).get();  // held
    roam::hetero_task opener(increment, roam::launch_dims::linear(16), roam::inout(*migration_gate),
                             16);
    opener.submit();
    const int n = static_cast<int>(cells.size());
    roam::hetero_task late(increment, roam::launch_dims::linear(cells.size()), roam::inout(cells),
                           n);
    late.implicit_dependencies(false).add_dependency(opener).submit();
  }
  std::uint64_t total() { return sum_of(cells.to_vector()); }
};

void open_migration_gate() { migration_gate->release(); }

}  // namespace

TEST(HeteroMobileObjects, MigrationWaitsForTasksThatOptedOutOfOrdering) {
  run_everywhere([] {
    if (roam::this_node() == 0) {
      constexpr std::size_t n = 1024;
      auto block = roam::make_mobile<gated_block>(n);
      block.call<&gated_block::arm>().get();
      auto moved = roam::migrate(block, next_node());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_FALSE(moved.ready()) << "packed while a task on the object was still waiting";
      roam::call(roam::this_node(), &open_migration_gate).get();
      moved.get();
      EXPECT_EQ(roam::locate(block).get(), next_node());
      EXPECT_EQ(block.call<&gated_block::total>().get(), 2u * n);
      roam::destroy(block).get();
      migration_gate.reset();
    }
    roam::barrier();
  });
}

namespace {

std::atomic<int> readers_waiting{0};  // per process: read where the gate lives
std::atomic<bool> gate_test_over{false};

// Shared handlers (const) may run together; with one worker per node, a reader that blocked its
// worker in a wait would keep let_go() from ever running.
struct gate {
  mutable roam::hetero_object<unsigned> data{256, 3u};
  template <class Ar>
  void serialize(Ar& ar) {
    ar(data);
  }
  void hold() const { (void)data.request(roam::data_access::write).get(); }
  std::uint64_t read_after_writer() const {
    readers_waiting.fetch_add(1);
    auto view = data.request(roam::data_access::read).get();  // waits for let_go()
    const std::uint64_t sum = std::accumulate(view.begin(), view.end(), std::uint64_t{0});
    data.release();
    return sum;
  }
  /// Returns how many readers were waiting when it ran (the node's only worker runs it).
  int let_go() const {
    const int waiting = readers_waiting.load();
    data.release();  // ends hold()'s write request: the reader's is granted
    return waiting;
  }
};

}  // namespace

TEST(HeteroMobileObjects, WaitingForDeviceWorkSuspendsTheHandlerNotItsWorker) {
  readers_waiting = 0;
  gate_test_over = false;
  run_everywhere([] {
    if (roam::this_node() == 0) {
      auto g = roam::make_mobile<gate>(roam::node(1));
      g.call<&gate::hold>().get();
      auto sum = g.call<&gate::read_after_writer>();
      EXPECT_EQ(g.call<&gate::let_go>().get(), 1) << "the reader was suspended, waiting";
      EXPECT_EQ(sum.get(), 256u * 3u);
      roam::destroy(g).get();
      roam::send(1, [] { gate_test_over = true; });
    } else if (roam::this_node() == 1) {
      // Node 1's application thread stays out of its node's work (a plain sleep, not a roam
      // wait): the node's single worker is the only thread that runs the gate's handlers.
      while (!gate_test_over.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    roam::barrier();
  });
}

namespace {

std::atomic<std::size_t> arrived_elements{0};

}  // namespace

TEST(HeteroGlobalPointers, PutAndGetReachDeviceDataOnTheOwner) {
  arrived_elements = 0;
  run_everywhere([] {
    constexpr std::size_t n = 4096;
    roam::hetero_object<unsigned> mine(n, 1u);
    submit_increment(mine);  // 2 everywhere, on a device
    auto pointers = roam::allgather(roam::publish(mine));
    const auto& target = pointers[next_node()];
    EXPECT_EQ(target.where(), next_node());
    EXPECT_EQ(target.size(), n);
    roam::barrier();

    std::vector<unsigned> values(100);
    std::iota(values.begin(), values.end(), 1000u);
    roam::put(target, std::span<const unsigned>(values), 200).get();
    roam::buffer<unsigned> got = roam::get(target, 190, 120).get();
    ASSERT_EQ(got.size(), 120u);
    EXPECT_EQ(got[0], 2u);
    EXPECT_EQ(got[10], 1000u);
    EXPECT_EQ(got[109], 1099u);
    EXPECT_EQ(got[110], 2u);
    roam::barrier();

    // A completion handler runs on the owner once the data landed; here it submits a task.
    roam::put(target, std::span<const unsigned>(values), 0,
              [](roam::hetero_object<unsigned>& object, std::size_t offset, std::size_t count) {
                EXPECT_EQ(offset, 0u);
                arrived_elements.fetch_add(count);
                submit_increment(object);
              })
        .get();
    roam::barrier();
    // This node's own object got the neighbour's put, the increment, and its tasks ran in order.
    auto local = roam::local_object(pointers[roam::this_node()]).to_vector();
    EXPECT_EQ(local[0], 1001u);
    EXPECT_EQ(local[150], 3u);
    EXPECT_EQ(local[250], 1051u);
    roam::barrier();  // every node has read its object before the next puts overwrite it

    // Puts and gets move only their elements: the object stays where it is, and no whole copy
    // travels. Node 0 checks on an object of its own while the others wait.
    if (roam::this_node() == 0) {
      roam::hetero_object<unsigned> own(n, 1u);
      submit_increment(own).wait();  // the newest copy is on the device
      const auto here = roam::publish(own);
      auto& runtime = roam::hetero_runtime::current();
      const auto before = runtime.statistics();
      roam::put(here, std::span<const unsigned>(std::vector<unsigned>(n, 5u))).get();
      submit_increment(own).wait();
      roam::put(here, std::span<const unsigned>(values), 10).get();
      roam::buffer<unsigned> part = roam::get(here, 8, 4).get();
      EXPECT_EQ(part, (roam::buffer<unsigned>{6u, 6u, 1000u, 1001u}));
      const auto after = runtime.statistics();
      EXPECT_EQ(after.copies_to_host, before.copies_to_host);
      EXPECT_EQ(after.copies_to_device, before.copies_to_device);
      EXPECT_EQ(own.to_vector()[9], 6u);
      roam::unpublish(here).get();

      // The owner hands the arrived block to write_range: the values go to the device without a
      // staging copy (with CUDA because a block this large is page-locked).
      roam::hetero_object<unsigned> large(std::size_t{1} << 16, 1u);
      submit_increment(large).wait();
      const auto big = roam::publish(large);
      const auto staged = runtime.statistics().staged_range_copies;
      roam::put(big, std::span<const unsigned>(std::vector<unsigned>(large.size(), 7u))).get();
      EXPECT_EQ(runtime.statistics().staged_range_copies, staged) << "the put copied its values";
      EXPECT_EQ(large.to_vector()[12345], 7u);
      roam::unpublish(big).get();
    }
    roam::barrier();
    std::vector<unsigned> all(n, 9u);
    roam::put(target, std::span<const unsigned>(all)).get();
    roam::buffer<unsigned> whole = roam::get(target).get();
    ASSERT_EQ(whole.size(), n);
    EXPECT_EQ(std::accumulate(whole.span().begin(), whole.span().end(), std::uint64_t{0}), 9u * n);

    // Errors name their cause and reach the caller.
    try {
      roam::put(target, std::span<const unsigned>(values), n - 50).get();
      ADD_FAILURE() << "a put past the end succeeded";
    } catch (const roam::remote_error& e) {
      EXPECT_NE(std::string(e.what()).find("outside the object's 4096"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW((void)roam::local_object(target), roam::usage_error);
    roam::barrier();
    roam::unpublish(target).get();
    roam::barrier();
    try {
      (void)roam::get(target, 0, 1).get();
      ADD_FAILURE() << "a get through an unpublished pointer succeeded";
    } catch (const roam::remote_error& e) {
      EXPECT_NE(std::string(e.what()).find("no hetero object is published"), std::string::npos)
          << e.what();
    }
    roam::barrier();
  });
  EXPECT_EQ(arrived_elements.load() % 100, 0u);
  EXPECT_GT(arrived_elements.load(), 0u);
}

namespace {

// The framework's settings are in roam's registry: flags given to roam::run reach a
// hetero_options made inside the run, and roam::config rejects a bad value like any setting.
TEST(HeteroSettings, TheRunsFlagsReachTheFrameworkInsideTheRun) {
  std::string program = "prog", queues = "--roam-hetero-queues=3",
              memory = "--roam-hetero-host-memory", separate = "separate";
  char* argv[] = {program.data(), queues.data(), memory.data(), separate.data(), nullptr};
  int argc = 4;
  roam::config cfg = roam::config::from_args(argc, argv);
  EXPECT_EQ(argc, 1);
  EXPECT_EQ(cfg.of<roam::hetero_options>().compute_queues, 3u);
  ASSERT_EQ(roam::run(cfg,
                      [] {
                        const roam::hetero_options seen = roam::hetero_options::from_environment();
                        EXPECT_EQ(seen.compute_queues, 3u);
                        EXPECT_TRUE(seen.host_separate_memory);
                      }),
            0);
  EXPECT_THROW(cfg.set("hetero-queues", "0"), roam::config_error);
  EXPECT_THROW(cfg.set("hetero-dispatch", "workers"), roam::config_error);
}

}  // namespace
