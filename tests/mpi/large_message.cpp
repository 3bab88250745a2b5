// A message larger than an MPI count can say (2 GiB) crosses ranks whole and in order: its
// payload travels in chunks. Rank 0 sends node 1 a 2.5 GiB message and then a small one;
// node 1 checks every word of the large one and that the small one arrived after it (their
// handlers may start in either order on two threads: arrival is seen by admission
// functions, which run on the delivering thread as each message arrives).
//
//   large_message   (under mpiexec -n 2; exit status 0 when everything arrived intact)
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/roam.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

using namespace roam::detail;

constexpr std::uint64_t large_bytes = (std::uint64_t{5} << 29) + 8;  // 2.5 GiB and a word
constexpr std::uint64_t word_count = large_bytes / sizeof(std::uint64_t);

std::uint64_t word_at(std::uint64_t i) noexcept { return i * 0x9e3779b97f4a7c15ULL + 1; }

std::atomic<int> arrivals{0};
std::atomic<int> large_arrival{0}, small_arrival{0};  // 1 + arrivals before it
std::atomic<int> large_seen{0};
std::atomic<int> problems{0};

void complain(const char* what) {
  std::fprintf(stderr, "FAIL: %s\n", what);
  problems.fetch_add(1);
}

handler_entry large_handler{"test.large_message", [](node_runtime&, message_ptr& m) {
                              if (m->header.payload_size != large_bytes) {
                                complain("the large message arrived with another size");
                                return;
                              }
                              const std::byte* p = m->payload();
                              for (std::uint64_t i = 0; i < word_count; ++i) {
                                std::uint64_t w = 0;
                                std::memcpy(&w, p + i * sizeof w, sizeof w);
                                if (w != word_at(i)) {
                                  std::fprintf(stderr, "FAIL: word %llu differs\n",
                                               static_cast<unsigned long long>(i));
                                  problems.fetch_add(1);
                                  return;
                                }
                              }
                              large_seen.fetch_add(1);
                            }};
handler_entry small_handler{"test.small_after_large", [](node_runtime&, message_ptr&) {}};

bool note_large_arrival(node_runtime&, message_ptr&) {
  large_arrival = arrivals.fetch_add(1) + 1;
  return false;  // queued and run as usual
}
bool note_small_arrival(node_runtime&, message_ptr&) {
  small_arrival = arrivals.fetch_add(1) + 1;
  return false;
}
const bool registered =
    handler_registry::add(&large_handler) && handler_registry::add(&small_handler);

void post_to_node_1(const handler_entry& h, std::uint64_t bytes, bool fill) {
  node_runtime& n = sending_node("large_message");
  message_ptr m = message::allocate(bytes);
  if (fill)
    for (std::uint64_t i = 0; i < word_count; ++i) {
      const std::uint64_t w = word_at(i);
      std::memcpy(m->payload() + i * sizeof w, &w, sizeof w);
    }
  m->header.handler = id_of(h);
  m->header.dest = 1;
  m->header.payload_size = bytes;
  post(n, std::move(m));
}

}  // namespace

int main(int argc, char** argv) {
  (void)registered;
  large_handler.admit = note_large_arrival;
  small_handler.admit = note_small_arrival;
  const int rc = roam::run(roam::config::from_args(argc, argv), [] {
    if (roam::num_nodes() != 2) {
      complain("run under mpiexec -n 2");
      return;
    }
    if (roam::this_node() == 0) {
      post_to_node_1(large_handler, large_bytes, true);
      post_to_node_1(small_handler, 8, false);
    }
    roam::barrier();
    if (roam::this_node() == 0) roam::wait_quiescence();
    roam::barrier();
    if (roam::this_node() == 1) {
      if (large_seen.load() != 1) complain("the large message is missing or damaged");
      if (large_arrival.load() != 1 || small_arrival.load() != 2)
        complain("the small message overtook the large one");
    }
    const int total = roam::allreduce(problems.load(), [](int a, int b) { return a + b; });
    if (roam::this_node() == 0) std::printf("large_message: %d problems\n", total);
    problems.store(total);
  });
  return rc != 0 || problems.load() != 0 ? 1 : 0;
}
