// Virtual nodes inside one process. A send hands the message's bytes to the destination
// node's queue on the calling thread: the bytes are the same as on the wire, so every
// serialization path is exercised, but nothing is copied twice.
#include <roam/base/error.hpp>
#include <roam/transport/detail/backends.hpp>

#include <chrono>
#include <thread>

namespace roam::detail {
namespace {

class inproc_transport final : public transport {
 public:
  inproc_transport(node_id nodes, delivery_function deliver)
      : nodes_(nodes), deliver_(std::move(deliver)) {}

  node_id size() const noexcept override { return nodes_; }
  node_id first_local() const noexcept override { return 0; }
  node_id local_count() const noexcept override { return nodes_; }
  unsigned processes_on_host() const noexcept override { return 1; }
  unsigned index_on_host() const noexcept override { return 0; }
  const char* name() const noexcept override { return "inproc"; }
  void send(message_ptr m) override { deliver_(std::move(m), true); }
  bool needs_progress() const noexcept override { return false; }
  bool progress() override { return false; }
  void drain() override {}
  void idle_wait(std::chrono::microseconds max) override { std::this_thread::sleep_for(max); }
  void validate_fingerprint(const std::string&) override {}  // one binary by construction
  clock_alignment align_clocks() override {                  // one clock by construction
    return {0, std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count()};
  }
  void send_raw_for_testing(node_id dest, std::vector<std::byte> bytes) override {
    (void)dest;  // the header inside the bytes says where it goes, as on a real wire
    deliver_(message_from_wire(bytes.data(), bytes.size(), 0), false);
  }
  void send_raw_payload_for_testing(node_id, std::vector<std::byte>) override {
    throw usage_error("the inproc transport has no separate payload frames to inject");
  }
  void process_barrier() override {}

 private:
  node_id nodes_;
  delivery_function deliver_;
};

}  // namespace

std::unique_ptr<transport> make_inproc_transport(node_id nodes, delivery_function deliver) {
  return std::make_unique<inproc_transport>(nodes, std::move(deliver));
}

}  // namespace roam::detail
