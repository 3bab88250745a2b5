// Injects one fault, chosen by argv[1], into a 2-node job. Every fault must stop the whole
// job with a non-zero status and a message naming the cause (checked by
// tests/expect_fatal.cmake); none may hang.
#include <roam/core/detail/aggregation.hpp>
#include <roam/core/detail/function_table.hpp>
#include <roam/roam.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

void throwing_handler(int) { throw std::runtime_error("boom from the handler"); }
void takes_string(std::string s) { std::printf("got %zu bytes\n", s.size()); }

std::vector<std::byte> wire_bytes(const roam::detail::message_header& h, const void* payload,
                                  std::size_t size) {
  std::vector<std::byte> bytes(sizeof h + size);
  std::memcpy(bytes.data(), &h, sizeof h);
  if (size) std::memcpy(bytes.data() + sizeof h, payload, size);
  return bytes;
}

roam::detail::message_header header_for(std::uint32_t handler, std::uint64_t payload) {
  roam::detail::message_header h;
  h.handler = handler;
  h.source = 0;
  h.dest = 1;
  h.payload_size = payload;
  h.function = roam::detail::encode_function(reinterpret_cast<const void*>(&takes_string));
  roam::detail::seal(h);
  return h;
}

std::uint32_t id_of_string_handler() {
  using entry = roam::detail::am_handler<void (*)(std::string)>;
  (void)entry::registered;
  return roam::detail::id_of(entry::entry);
}

std::uint32_t id_of_handler_named(std::string_view name) {
  for (std::uint32_t id = 0; id < roam::detail::handler_registry::size(); ++id)
    if (const auto* e = roam::detail::handler_registry::find(id); e && e->name == name) return id;
  std::fprintf(stderr, "no handler named %.*s\n", static_cast<int>(name.size()), name.data());
  std::exit(3);
}

// A bundle (the aggregation of channel messages) holding one group header: `g` and no
// records after it.
std::vector<std::byte> bundle_of(const roam::detail::group_header& g) {
  auto h = header_for(id_of_handler_named("roam.core.bundle.unordered"), sizeof g);
  h.function = 0;
  roam::detail::seal(h);
  return wire_bytes(h, &g, sizeof g);
}

// A channel's handler, registered in every mode.
using ignoring_channel = roam::detail::channel_handler<void (*)(int)>;
std::uint32_t id_of_channel_handler() {
  (void)ignoring_channel::registered;
  return roam::detail::id_of(ignoring_channel::entry);
}
void takes_flag(bool flag) { std::printf("flag %d\n", static_cast<int>(flag)); }
using flag_channel = roam::detail::channel_handler<void (*)(bool)>;
std::uint32_t id_of_flag_channel() {
  (void)flag_channel::registered;
  return roam::detail::id_of(flag_channel::entry);
}

// Recursion that the compiler cannot turn into a loop: each frame holds `pad` until the
// deeper call returns. About 300 bytes a frame.
[[gnu::noinline]] long recurse(long depth) {
  volatile char pad[256];
  pad[0] = static_cast<char>(depth);
  if (depth == 0) return pad[0];
  return recurse(depth - 1) + pad[0];
}

void barrier_in_a_handler() { roam::barrier(); }

void overflowing_handler(long depth) { std::printf("%ld\n", recurse(depth)); }

void overflowing_tasklet(long depth) {
  auto t = roam::spawn([depth] { return recurse(depth); });
  std::printf("%ld\n", t.join());
}

// A load-balancing policy whose pop() recurses without end on node 1 once told to: pop()
// runs in a worker's loop as it looks for work, not in a handler (mode loop-overflow, with
// --roam-lb overflowing_pop).
std::atomic<bool> pops_overflow{false};
struct overflowing_pop_policy : roam::lb::policy {
  bool schedules_handlers() const override { return true; }
  roam::lb::runnable pop(int worker) override {
    if (worker >= 0 && pops_overflow.load() && roam::this_node() == 1)
      std::printf("%ld\n", recurse(1000000L));
    return {};
  }
};
void overflow_the_pops() { pops_overflow = true; }
void do_nothing() {}

}  // namespace

// Suspends its fiber for long: many of them exceed --roam-max-suspended.
void long_sleeper(int) { roam::this_task::sleep_for(std::chrono::seconds(60)); }

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  roam::lb::register_policy("overflowing_pop", [](const roam::config&) {
    return std::make_unique<overflowing_pop_policy>();
  });
  return roam::run(argc, argv, [&mode] {
    // Keep takes_string registered in every mode so that the handler tables agree.
    (void)roam::detail::am_handler<void (*)(std::string)>::registered;
    (void)ignoring_channel::registered;
    if (roam::this_node() == 0) {
      if (mode == "send-throws") {
        roam::send(1, throwing_handler, 1);
      } else if (mode == "bad-node") {
        roam::send(99, takes_string, std::string("x"));
      } else if (mode == "unknown-handler") {
        auto h = header_for(999999, 0);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, nullptr, 0));
      } else if (mode == "raw-to-missing-rank") {  // MPI only: the send itself fails
        auto h = header_for(id_of_string_handler(), 0);
        roam::detail::send_raw_for_testing(99, wire_bytes(h, nullptr, 0));
      } else if (mode == "payload-too-long") {  // MPI only: a separate payload frame
        // A header announcing a payload larger than a frame (so it follows on its own), then
        // a payload 8 bytes longer than announced.
        constexpr std::uint64_t announced = 1 << 20;
        auto h = header_for(id_of_string_handler(), announced);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, nullptr, 0));
        roam::detail::send_raw_payload_for_testing(1, std::vector<std::byte>(announced + 8));
      } else if (mode == "too-many-suspended") {
        for (int i = 0; i < 20; ++i) roam::send(roam::this_node(), long_sleeper, i);
      } else if (mode == "truncated") {
        auto h = header_for(id_of_string_handler(), 100);
        char payload[10] = {};
        roam::detail::send_raw_for_testing(1, wire_bytes(h, payload, sizeof payload));
      } else if (mode == "corrupt-header") {
        auto h = header_for(id_of_string_handler(), 0);
        h.handler ^= 0x40;  // one flipped bit after sealing
        roam::detail::send_raw_for_testing(1, wire_bytes(h, nullptr, 0));
      } else if (mode == "relay-to-non-entry") {
        // A broadcast that claims to come from node 1's own process: node 1 is not the entry
        // a relay may arrive at, and relaying it would duplicate the broadcast's copies.
        std::uint64_t payload = 0;  // an empty string
        auto h = header_for(id_of_string_handler(), sizeof payload);
        h.source = 1;
        h.flags = roam::detail::flag_broadcast;
        roam::detail::seal(h);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, &payload, sizeof payload));
      } else if (mode == "corrupt-payload") {
        // A string whose size tag claims far more bytes than the payload holds.
        std::uint64_t size_tag = 1ull << 40;
        auto h = header_for(id_of_string_handler(), sizeof size_tag);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, &size_tag, sizeof size_tag));
      } else if (mode == "trailing-bytes") {
        std::uint64_t payload[2] = {0, 0};  // an empty string plus 8 bytes nobody reads
        auto h = header_for(id_of_string_handler(), sizeof payload);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, payload, sizeof payload));
      } else if (mode == "channel-throws") {
        auto ch = roam::channel([](int) { throw std::runtime_error("boom from a channel"); });
        ch(1, 5);
      } else if (mode == "channel-function-throws") {
        auto ch = roam::channel(throwing_handler);
        ch(1, 5);
      } else if (mode == "bad-object-header") {
        roam::detail::object_message_header oh;  // an object of node 99 in a 2-node job
        oh.target = roam::object_id{99, 0, 1};
        auto h = header_for(id_of_handler_named("roam.mobile.operation"), sizeof oh);
        h.function = 0;
        roam::detail::seal(h);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, &oh, sizeof oh));
      } else if (mode == "corrupt-bundle") {
        roam::detail::group_header g;  // announces more record bytes than follow it
        g.target = 1;
        g.handler = id_of_channel_handler();
        g.count = 10;
        g.bytes = 1000;
        roam::detail::send_raw_for_testing(1, bundle_of(g));
      } else if (mode == "bundle-of-plain-handler") {
        roam::detail::group_header g;  // a group for a handler that is no channel's
        g.target = 1;
        g.handler = id_of_string_handler();
        roam::detail::send_raw_for_testing(1, bundle_of(g));
      } else if (mode == "group-for-another-node") {
        roam::detail::group_header g;  // records for node 0 in a bundle to node 1
        g.target = 0;
        g.handler = id_of_channel_handler();
        roam::detail::send_raw_for_testing(1, bundle_of(g));
      } else if (mode == "carried-not-last") {
        roam::detail::group_header g;  // two carried messages: only one may end a bundle
        g.target = 1;
        g.count = 2;
        g.record = roam::detail::length_prefixed_records;
        g.handler = id_of_handler_named("roam.core.carried");
        roam::detail::send_raw_for_testing(1, bundle_of(g));
      } else if (mode == "routed-record-astray") {
        // A routed record (run with ROAM_ROUTE_MIN_NODES=2) naming node 0, its own sender,
        // in a bundle to node 1: no path from node 0 to node 0 passes node 1.
        struct {
          roam::detail::group_header g;
          std::uint32_t target = 0;
          std::int32_t value = 7;
        } bundle;
        bundle.g.target = roam::detail::per_record_target;
        bundle.g.count = 1;
        bundle.g.bytes = 8;
        bundle.g.record = 4;
        bundle.g.handler = id_of_channel_handler();
        auto h = header_for(id_of_handler_named("roam.core.bundle.unordered"), sizeof bundle);
        h.function = 0;
        roam::detail::seal(h);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, &bundle, sizeof bundle));
      } else if (mode == "channel-bool-byte") {
        // A fixed-size record of a bool parameter holding byte 2: reading it as a bool would
        // be undefined behaviour.
        struct {
          roam::detail::group_header g;
          std::uint8_t flag = 2;
        } bundle;
        bundle.g.target = 1;
        bundle.g.count = 1;
        bundle.g.bytes = 1;
        bundle.g.record = 1;
        bundle.g.handler = id_of_flag_channel();
        bundle.g.function =
            roam::detail::encode_function(reinterpret_cast<const void*>(&takes_flag));
        auto h = header_for(id_of_handler_named("roam.core.bundle.unordered"), sizeof bundle.g + 1);
        h.function = 0;
        roam::detail::seal(h);
        roam::detail::send_raw_for_testing(1, wire_bytes(h, &bundle, sizeof bundle.g + 1));
      } else if (mode == "channel-handler-alone") {
        auto h = header_for(id_of_channel_handler(), 0);  // outside any bundle
        roam::detail::send_raw_for_testing(1, wire_bytes(h, nullptr, 0));
      } else if (mode == "body-throws") {
        throw std::logic_error("the application gave up");
      } else if (mode == "event-fired") {
        // One signal fires the event (on node 1); the second finds it gone.
        auto e =
            roam::call(1, [] { return roam::make_event<int>(1, [](std::vector<int>) {}); }).get();
        roam::signal(e, 1);
        roam::signal(e, 2);
      } else if (mode == "promise-twice") {
        auto [p, f] = roam::make_remote_promise<int>();
        roam::send(
            1,
            [](roam::remote_promise<int> q) {
              q.set_value(1);
              q.set_value(2);
            },
            p);
        f.get();
      } else if (mode == "barrier-in-handler") {
        roam::send(1, barrier_in_a_handler);
      } else if (mode == "allreduce-in-handler") {
        roam::send(1, [] { (void)roam::allreduce(1, [](int a, int b) { return a + b; }); });
      } else if (mode == "handler-overflow") {
        roam::send(1, overflowing_handler, 1000000L);  // ~300 MB of frames
      } else if (mode == "tasklet-overflow") {
        roam::send(1, overflowing_tasklet, 1000000L);
      } else if (mode == "control-throws-int") {
        // A policy's control handler runs as its message is admitted; what it throws must
        // stop the job with roam's message, whatever its type.
        roam::lb::send_control(1, [] { throw 42; });
        std::this_thread::sleep_for(std::chrono::seconds(30));
      } else if (mode == "loop-overflow") {
        // Node 1's worker must look for work after this: it does so after each item, and
        // node 1's application thread, asleep below, runs none of them. The overflow ends
        // the job long before the stream does.
        roam::send(1, overflow_the_pops);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < give_up) {
          roam::send(1, do_nothing);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      } else if (mode == "deep-handler") {
        // ~600 KB of frames: fits the stack of --roam-stack-size 4M, not the default.
        roam::call(
            1, [](long depth) { return recurse(depth); }, 2000L)
            .get();
      } else if (mode == "deep-tasklet") {
        // The same depth in a tasklet that asks for its own 4 MiB stack.
        roam::call(
            1,
            [](long depth) {
              return roam::spawn(roam::stack_size{4u << 20}, [depth] { return recurse(depth); })
                  .join();
            },
            2000L)
            .get();
      } else if (mode == "drop-set-aside") {
        // A layer that forgets a set-aside message's exit: the token stops the job.
        roam::send(1, [] {
          auto& n = roam::detail::require_node("drop-set-aside");
          (void)roam::detail::set_aside_message::set_aside(
              n, roam::detail::build_message<void (*)(std::string)>(1, &takes_string, 0,
                                                                    std::string("lost")));
        });
      } else if (mode == "rank-dies") {
        // Node 0 waits in the barrier below while node 1 dies without any roam involvement.
      } else if (mode != "none") {
        std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
      }
    }
    if (mode == "rank-dies" && roam::this_node() == 1) std::abort();
    if (mode == "loop-overflow" && roam::this_node() == 1)
      std::this_thread::sleep_for(std::chrono::seconds(30));
    roam::barrier();
  });
}
