// The engine's memory: pools, eviction order and making room; see memory_manager.hpp.
#include "memory_manager.hpp"

#include <algorithm>
#include <string>

#include "device_event_state.hpp"

namespace roam::detail {

memory_manager::memory_manager(const std::vector<std::unique_ptr<device>>& devices,
                               hetero_statistics& statistics, serial_executor& executor)
    : devices_(devices), statistics_(statistics), executor_(executor) {
  device* pinned_allocator = nullptr;
  for (const auto& d : devices_) {
    if (d->info().shares_host_memory) {
      spaces_.push_back(0);
    } else {
      pools_.push_back(std::make_unique<device_memory_pool>(*d));
      spaces_.push_back(static_cast<int>(pools_.size()));
    }
    if (d->info().backend == backend::cuda && pinned_allocator == nullptr)
      pinned_allocator = d.get();
  }
  if (space_count() > 64) {  // object_coherence::failed takes one bit per space
    throw device_error("more than 63 devices with memory of their own (" +
                       std::to_string(pools_.size()) + "); limit the backends in use");
  }
  host_pool_ = std::make_unique<host_memory_pool>(pinned_allocator);
  resident_.resize(space_count());
}

device* memory_manager::device_of_space(int space) const {
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (spaces_[i] == space && space != 0) return devices_[i].get();
  return nullptr;
}

bool memory_manager::direct_everywhere(const void* memory, std::size_t bytes) const noexcept {
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    if (spaces_[d] != 0 && !devices_[d]->direct_host_transfers(memory, bytes)) return false;
  }
  return true;
}

std::size_t memory_manager::device_bytes_in_use() const {
  std::size_t bytes = 0;
  for (const auto& pool : pools_) bytes += pool->in_use();
  return bytes;
}

void memory_manager::forget(hetero_object_state& object) {
  for (std::size_t space = 0; space < object.copies.size(); ++space) {
    auto& copy = object.copies[space];
    wait_until_done(copy.ready);
    for (auto& r : copy.readers) wait_until_done(r);
    if (space != 0 && copy.buffer) {
      pools_[space - 1]->release(copy.buffer);
      resident_[space].erase(copy.recency);
      maybe_free_ = true;
    }
  }
  host_pool_->release(object.host, object.bytes);
}

void memory_manager::check_fits(const object_list& objects, int space) const {
  // What can never fit fails the task instead of leaving it waiting for memory forever: an
  // object larger than the device, or objects that together are (each copy takes its size
  // class, and make_room never evicts the task's own).
  const auto& pool = *pools_[space - 1];
  std::size_t together = 0;
  for (auto [object, access] : objects) {
    if (size_class(object->bytes) > pool.limit()) {
      throw out_of_device_memory("an object of " + std::to_string(object->bytes) +
                                 " bytes does not fit in device " +
                                 device_of_space(space)->info().name + " (" +
                                 std::to_string(pool.limit()) + " bytes usable)");
    }
    together += size_class(object->bytes);
  }
  if (together > pool.limit()) {
    throw out_of_device_memory("a task's " + std::to_string(objects.size()) + " objects need " +
                               std::to_string(together) + " bytes of device " +
                               device_of_space(space)->info().name + " at once (" +
                               std::to_string(pool.limit()) + " bytes usable)");
  }
}

bool memory_manager::reserve_and_pin(const object_list& objects, int space) {
  if (space != 0) {
    check_fits(objects, space);
    auto& pool = *pools_[space - 1];
    for (auto [object, access] : objects) {
      auto& copy = object->copies[space];
      if (copy.buffer) continue;
      // Until it fits or nothing more can be evicted: the device may refuse after the limit is
      // met, or still refuse once `bytes` were freed (another process took memory meanwhile).
      auto buffer = pool.allocate(object->bytes);
      std::vector<const hetero_object_state*> unwritable;  // copies whose write-back failed
      while (!buffer && make_room(space, size_class(object->bytes), objects, pool.device_refused(),
                                  unwritable))
        buffer = pool.allocate(object->bytes);
      if (!buffer && pool.device_refused() && !may_come_back(space)) {
        // Nothing of the framework's is left to evict there and no running task will free
        // any: waiting would be forever.
        throw out_of_device_memory(
            "device " + device_of_space(space)->info().name + " refused " +
            std::to_string(size_class(object->bytes)) + " bytes with " +
            std::to_string(pool.in_use()) + " bytes of " + std::to_string(pool.limit()) +
            " in use by the framework and nothing left to evict (another process or rank "
            "holds the rest of its memory?)");
      }
      if (!buffer) return false;
      copy.buffer = *buffer;  // Invalid since its last eviction, or since the object was made
      copy.recency = resident_[space].insert(resident_[space].end(), object);
    }
  }
  for (auto [object, access] : objects) ++object->copies[space].pins;
  return true;
}

void memory_manager::unpin(const object_list& objects, int space) {
  for (auto [object, access] : objects) {
    // A device copy no task pins any more may be evicted for a task waiting for memory.
    if (--object->copies[space].pins == 0 && space != 0) maybe_free_ = true;
  }
}

bool memory_manager::make_room(int space, std::size_t bytes, const object_list& keep,
                               bool device_refused,
                               std::vector<const hetero_object_state*>& unwritable) {
  auto& pool = *pools_[space - 1];
  // Under the limit, room is what the pool counts; when the device itself refused, at least
  // `bytes` of copies go back to it (the pool frees its cache before it asks the device again).
  std::size_t freed = 0;
  std::exception_ptr write_back_failure;
  auto fits = [&] {
    return device_refused ? freed >= bytes : pool.in_use() + bytes <= pool.limit();
  };
  // Least recently used first. Pinned copies (tasks in flight) were mostly used recently and
  // sit near the back, so the walk passes few of them before it finds what it can evict.
  auto& order = resident_[space];
  for (auto next = order.begin(); next != order.end() && !fits();) {
    auto* object = *next++;  // before evict erases the entry
    if (object->copies[space].pins > 0) continue;
    if (std::any_of(keep.begin(), keep.end(), [&](const auto& o) { return o.first == object; }))
      continue;
    if (serial_executor::must_not_block() && eviction_would_wait(*object, space)) {
      eviction_left_to_engine_thread_ = true;
      executor_.want_engine_thread();  // it evicts this one, blocking as it may
      continue;
    }
    if (std::find(unwritable.begin(), unwritable.end(), object) != unwritable.end()) continue;
    try {
      evict(*object, space);
      freed += size_class(object->bytes);
    } catch (const device_error&) {
      // Its write-back failed: the copy stays, still the valid one, and is not tried again for
      // this allocation. Another may do; if none does, the task waits while running tasks may
      // free memory, and fails with this error otherwise.
      unwritable.push_back(object);
      if (!write_back_failure) write_back_failure = std::current_exception();
    }
  }
  if (freed == 0 && write_back_failure && !fits() && !may_come_back(space))
    std::rethrow_exception(write_back_failure);
  return freed > 0;
}

bool memory_manager::may_come_back(int space) const {
  return eviction_left_to_engine_thread_ ||
         std::any_of(resident_[space].begin(), resident_[space].end(),
                     [&](const hetero_object_state* o) { return o->copies[space].pins > 0; });
}

void memory_manager::engine_thread_takes_evictions() {
  if (!eviction_left_to_engine_thread_) return;
  eviction_left_to_engine_thread_ = false;
  maybe_free_ = true;  // the tasks waiting for it try again here
}

void memory_manager::touch(hetero_object_state& object, int space) {
  auto& copy = object.copies[static_cast<std::size_t>(space)];
  if (space == 0 || !copy.buffer) return;
  auto& order = resident_[static_cast<std::size_t>(space)];
  order.splice(order.end(), order, copy.recency);
}

bool memory_manager::eviction_would_wait(const hetero_object_state& object, int space) {
  return object.states.state(space) == coherence::modified || object.copies[space].in_use();
}

void memory_manager::evict(hetero_object_state& object, int space) {
  (void)object.settle_failed_copies();  // a copy whose transfer failed needs no write-back
  auto& copy = object.copies[space];
  if (object.states.state(space) == coherence::modified) {
    // The only valid copy: write it back to the host first. Rare (the device is full), so the
    // engine simply waits for the copy rather than tracking a half-evicted state (and for what
    // still uses the host's stale contents, which the copy overwrites).
    for (const auto& e : object.copies[0].pending()) wait_until_done(e);
    auto back = device_of_space(space)->copy_to_host(device_queue::device_to_host(), object.host,
                                                     copy.buffer, 0, object.bytes,
                                                     std::span(&copy.ready, 1));
    ++statistics_.copies_to_host;
    statistics_.bytes_to_host += object.bytes;
    // Not back.wait(): inside a roam handler that would suspend the fiber with the lock held.
    wait_until_done(back);
    if (auto failure = back.error()) std::rethrow_exception(failure);
    object.copies[0].ready = device_event();
  }
  wait_until_done(copy.ready);
  for (auto& r : copy.readers) wait_until_done(r);
  copy.written_by(device_event());
  pools_[space - 1]->release(copy.buffer);
  copy.buffer = {};
  object.states.evicted(static_cast<std::size_t>(space));
  resident_[space].erase(copy.recency);
  maybe_free_ = true;
  ++statistics_.evictions;
}

}  // namespace roam::detail
