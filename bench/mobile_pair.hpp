// The two endpoints of the ping-pong benchmarks between mobile objects on two ranks.
#pragma once

#include <roam/roam.hpp>

#include <vector>

namespace roam_bench {

/// Collective on the two nodes: each creates its endpoint (a mobile object type with a
/// `mobile_ptr<Endpoint> peer` member) and points it at the other's. Returns both
/// endpoints, indexed by node; they are ready to message each other when it returns.
template <class Endpoint>
std::vector<roam::mobile_ptr<Endpoint>> paired_endpoints() {
  auto mine = roam::make_mobile<Endpoint>();
  auto both = roam::allgather(mine);
  mine.call([](Endpoint& e, roam::mobile_ptr<Endpoint> other) { e.peer = other; },
            both[1 - roam::this_node()])
      .get();
  roam::barrier();
  return both;
}

}  // namespace roam_bench
