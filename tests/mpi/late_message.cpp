// A message still on its way when the job ends: rank 1 sends a large uncounted message to
// rank 0 from a node extension's stop hook, after the job's last quiescence detection and
// after rank 0 may already have reached the transport's final barrier. Such messages do
// exist (a balancer's report sent just before it stopped, a location update). Rank 1 can
// only finish its drain once rank 0 receives the payload, so the final barrier must keep
// receiving: blocked in MPI_Barrier, rank 0 never did, and the job hung.
//
// With LATE_MESSAGE_COUNTED=1 the message is an application (counted) one: it too is
// discarded, but with a warning, since nothing counted may be sent after the job ended.
//
//   late_message   (under mpiexec -n 2; exit status 0 when the job ends)
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/roam.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

using namespace roam::detail;

constexpr std::size_t late_bytes = std::size_t{4} << 20;  // far above any eager limit

// The nodes have stopped when it arrives: it is discarded, never run.
handler_entry late_handler{"test.late_message", [](node_runtime&, message_ptr&) {
                             std::fprintf(stderr, "FAIL: a message handled after the end\n");
                             std::abort();
                           }};
const bool registered = handler_registry::add(&late_handler);

void send_late(void* state) noexcept {
  auto& n = *static_cast<node_runtime*>(state);
  if (id_of(n) != 1) return;
  // Rank 0 sends nothing at the end: by now it has drained and reached the final barrier.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  message_ptr m = message::allocate(late_bytes);
  m->header.handler = id_of(late_handler);
  m->header.flags = std::getenv("LATE_MESSAGE_COUNTED") ? 0u : flag_system;
  m->header.dest = 0;
  m->header.payload_size = late_bytes;
  post(n, std::move(m));
}

const extension_key late_sender =
    register_node_extension({"late sender (test)", 90, [](node_runtime& n) -> void* { return &n; },
                             [](void*) noexcept {}, nullptr, send_late});

}  // namespace

int main(int argc, char** argv) {
  (void)registered;
  (void)late_sender;
  return roam::run(argc, argv, [] {});
}
