// Uncounted messages still going from node to node when the job ends: from its stop hook
// node 0 starts one that every node that handles it passes on to the next node. The nodes
// stop one after another, so the last one passed on always waits in the queue of a node
// whose workers have stopped. Such messages exist (location updates after forwarded
// deliveries, balancer reports); the queue's message must be freed with the node: under
// AddressSanitizer's leak check (the asan stage of ./run test) the job fails otherwise, as
// lb.inproc.nodes4 once did in CI.
//
//   uncounted_at_end   (2 or more nodes; exit status 0 when the job ends cleanly)
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/roam.hpp>

#include <atomic>
#include <cstdio>

namespace {

using namespace roam::detail;

std::atomic<long> passes{0};

handler_entry pass_on{"test.uncounted_at_end", [](node_runtime& n, message_ptr& m) {
                        passes.fetch_add(1, std::memory_order_relaxed);
                        m->header.dest = (id_of(n) + 1) % size_of(n);
                        post(n, std::move(m));
                      }};
const bool registered = handler_registry::add(&pass_on);

void start_passing(void* state) noexcept {
  auto& n = *static_cast<node_runtime*>(state);
  if (id_of(n) != 0) return;
  message_ptr m = message::allocate(0);
  m->header.handler = id_of(pass_on);
  m->header.flags = flag_system;
  m->header.dest = 1 % size_of(n);
  m->header.payload_size = 0;
  post(n, std::move(m));
}

const extension_key passer =
    register_node_extension({.name = "uncounted passer (test)",
                             .order = 90,
                             .make = [](node_runtime& n) -> void* { return &n; },
                             .destroy = [](void*) noexcept {},
                             .stop = start_passing});

}  // namespace

int main(int argc, char** argv) {
  (void)registered;
  (void)passer;
  const int status = roam::run(argc, argv, [] {});
  // How far it went before the nodes stopped varies from run to run (it may not have run).
  std::printf("the message was passed on %ld times\n", passes.load());
  return status;
}
