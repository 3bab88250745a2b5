// The per-object load statistics the load-balancing layer keeps: the rules by which an
// object's counters (detail::object_load_counters, stored by the mobile layer) change as its
// messages arrive and finish, installed as the object protocol's hooks.
#pragma once

#include <roam/mobile/detail/object_runtime.hpp>

namespace roam::lb {

/// Sets `hooks`' arrived, finished and recount to the layer's rules: a message's cost counts
/// from its arrival until its handler finishes; run times are averaged with weight 0.2 for
/// the newest (a moving average that follows a change in a few handlers, as PREMA's).
void install_load_statistics(roam::detail::object_hooks& hooks) noexcept;

}  // namespace roam::lb
