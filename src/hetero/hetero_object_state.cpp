// A hetero object's copies; see hetero_object_state.hpp.
#include "hetero_object_state.hpp"

#include <algorithm>

#include "hetero_engine.hpp"

namespace roam::detail {

void memory_copy::read_by(device_event e) {
  prune_when_doubled(readers, readers_kept, [](const device_event& r) { return r.ready(); });
  readers.push_back(std::move(e));
}

std::vector<device_event> memory_copy::pending() const {
  std::vector<device_event> pending;
  if (!ready.ready()) pending.push_back(ready);
  for (const auto& r : readers)
    if (!r.ready()) pending.push_back(r);
  return pending;
}

bool memory_copy::in_use() const {
  return !ready.ready() || std::any_of(readers.begin(), readers.end(),
                                       [](const device_event& r) { return !r.ready(); });
}

hetero_object_state::hetero_object_state(std::shared_ptr<hetero_engine> e, std::size_t size)
    : engine(std::move(e)),
      bytes(size),
      copies(engine->space_count()),
      states(engine->space_count()) {
  host = engine->allocate_host(bytes);
}

hetero_object_state::~hetero_object_state() { engine->forget_object(*this); }

bool hetero_object_state::in_use() const {
  return std::any_of(copies.begin(), copies.end(), [](const memory_copy& c) { return c.in_use(); });
}

bool hetero_object_state::settle_failed_copies() {
  std::uint64_t failed = 0;
  for (std::size_t s = 0; s < copies.size(); ++s) {
    if (copies[s].ready.error() == nullptr) continue;
    failed |= std::uint64_t{1} << s;
    copies[s].ready = device_event();  // done: it orders nothing any more
  }
  return failed != 0 && states.failed(failed);
}

}  // namespace roam::detail
