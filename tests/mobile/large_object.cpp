// A migration that one message cannot carry is refused and loses nothing. An object of
// almost 4 GiB waits behind a handler; a migration and two 8 KiB messages queue behind it.
// Packed with those messages it exceeds what a message block holds, so roam::migrate must
// fail with a clear error, and the object, its bytes and both messages must stay on node 0.
// (Before the size was checked up front, the pack failed halfway, after the waiting
// messages had been taken from the object.)
//
// The same for a load balancer's move (migrate_resident), which is dropped instead.
//
//   large_object   (ROAM_NODES=2 in one process; exit status 0 when nothing was lost)
#include <roam/core/detail/node_api.hpp>
#include <roam/roam.hpp>
#include <roam/transport/message.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

std::atomic<bool> held{false}, release{false};

struct slab {
  std::vector<std::uint8_t> bytes;
  long absorbed = 0;

  template <class Ar>
  void serialize(Ar& ar) {
    ar(bytes, absorbed);
  }
  void fill(std::uint64_t size) {
    bytes.resize(size);
    for (std::uint64_t i = 0; i < size; i += 4096) bytes[i] = static_cast<std::uint8_t>(i >> 12);
  }
  void hold() {
    held = true;
    while (!release.load()) roam::this_task::sleep_for(std::chrono::milliseconds(1));
  }
  void absorb(std::vector<char> extra) { absorbed += static_cast<long>(extra.size()); }
  bool intact() const {
    for (std::uint64_t i = 0; i < bytes.size(); i += 4096)
      if (bytes[i] != static_cast<std::uint8_t>(i >> 12)) return false;
    return true;
  }
  std::uint64_t size() const { return bytes.size(); }
  long total() const { return absorbed; }
  roam::node_id where() const { return roam::this_node(); }
};

int problems = 0;
void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  ++problems;
}

}  // namespace

int main(int argc, char** argv) {
  const int rc = roam::run(roam::config::from_args(argc, argv), [] {
    if (roam::this_node() != 0) return;
    if (roam::num_nodes() < 2) {
      expect(false, "run with ROAM_NODES=2");
      return;
    }
    // Packed alone (with its size tags and the install record) it fits by a few KiB.
    const std::uint64_t size = roam::detail::max_payload_bytes - 4096;
    roam::mobile_ptr<slab> p = roam::make_mobile<slab>();
    p.call<&slab::fill>(size).get();
    p.send<&slab::hold>();
    while (!held.load()) roam::this_task::sleep_for(std::chrono::milliseconds(1));
    roam::future<void> moved = roam::migrate(p, 1);
    for (int i = 0; i < 2; ++i) p.send<&slab::absorb>(std::vector<char>(8192));
    release = true;
    std::string error;
    try {
      moved.get();
    } catch (const std::exception& e) {
      error = e.what();
    }
    expect(error.find("cannot move to node 1") != std::string::npos &&
               error.find("it stays where it is") != std::string::npos,
           "roam::migrate should fail clearly, but said: '" + error + "'");
    expect(p.call<&slab::where>().get() == 0, "the object left node 0");
    expect(p.call<&slab::total>().get() == 2L * 8192, "a waiting message was lost");
    expect(p.call<&slab::size>().get() == size, "the object's size changed");
    expect(p.call<&slab::intact>().get(), "the object's bytes changed");
    // A load balancer's move asked for while a handler runs is refused when that handler
    // ends: the messages behind it run here, and the balancers are not offered the object
    // again (a warning says so).
    held = false;
    release = false;
    p.send<&slab::hold>();
    while (!held.load()) roam::this_task::sleep_for(std::chrono::milliseconds(1));
    roam::detail::node_runtime& n = roam::detail::sending_node("large_object");
    expect(roam::detail::migrate_resident(n, p.id(), 1), "the balancer's move was not taken up");
    for (int i = 0; i < 2; ++i) p.send<&slab::absorb>(std::vector<char>(8192));
    release = true;
    expect(p.call<&slab::total>().get() == 4L * 8192,
           "a message behind the balancer's move was lost");
    expect(p.call<&slab::where>().get() == 0, "the balancer moved the object");
    expect(!roam::detail::migrate_resident(n, p.id(), 1), "the balancers were offered it again");
    roam::destroy(p).get();
    std::printf("large_object: %d problems (%s)\n", problems, error.c_str());
  });
  return rc != 0 || problems != 0 ? 1 : 0;
}
