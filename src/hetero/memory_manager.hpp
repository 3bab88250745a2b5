#pragma once
// The engine's memory: the host pool that holds objects' host copies, a pool per device memory
// space, and per space the copies holding a buffer in least-recently-used order, from which it
// evicts to make room (thesis §5.1.3, Fig. 54). Called under the engine's lock.
//
// Memory spaces: 0 is the host; each device with memory of its own is one more space. A device
// that computes on host memory (the host backend) works in space 0.
#include <cstddef>
#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "hetero_object_state.hpp"
#include "memory_pools.hpp"
#include "roam/hetero/hetero_runtime.hpp"
#include "serial_executor.hpp"

namespace roam::detail {

class memory_manager {
 public:
  using object_list = std::vector<std::pair<hetero_object_state*, data_access>>;

  /// Throws device_error beyond 63 devices with memory of their own (a failure mask is a word).
  memory_manager(const std::vector<std::unique_ptr<device>>& devices, hetero_statistics& statistics,
                 serial_executor& executor);

  [[nodiscard]] std::size_t space_count() const { return pools_.size() + 1; }
  [[nodiscard]] int space_of(int device_index) const { return spaces_[device_index]; }
  /// The device whose memory `space` is (null for the host's).
  [[nodiscard]] device* device_of_space(int space) const;
  /// Whether every device with memory of its own copies to and from [memory, memory + bytes)
  /// directly.
  [[nodiscard]] bool direct_everywhere(const void* memory, std::size_t bytes) const noexcept;
  [[nodiscard]] std::size_t device_bytes_in_use() const;

  [[nodiscard]] void* allocate_host(std::size_t bytes) { return host_pool_->allocate(bytes); }
  void release_host(void* block, std::size_t bytes) { host_pool_->release(block, bytes); }
  /// A dying object's memory goes back (waiting for the operations still using it).
  void forget(hetero_object_state& object);

  /// Gives each of `objects` a buffer in `space` (evicting least recently used copies not in
  /// `objects` as needed), then pins them there. False when the task must wait for memory
  /// (retried once some may be free). Throws out_of_device_memory when it never fits: an object
  /// or the set larger than the device, or the device refusing with nothing left to evict.
  bool reserve_and_pin(const object_list& objects, int space);
  /// Unpins `objects` in `space`; a copy no task pins any more may be evicted.
  void unpin(const object_list& objects, int space);
  /// Marks `object`'s copy in `space` as the most recently used.
  void touch(hetero_object_state& object, int space);
  /// Frees the copy in `space`, writing a Modified one back to the host first (waiting for it).
  /// Throws device_error when the write-back fails (the copy stays, still the valid one).
  void evict(hetero_object_state& object, int space);
  /// Whether remove_from_devices() (a request evicting when granted) frees `copy`: a device copy
  /// no task pins (tasks that opted out of implicit ordering may still use one).
  [[nodiscard]] static bool evicted_when_granted(const memory_copy& copy) {
    return copy.buffer && copy.pins == 0;
  }
  /// Whether evict() would block (a write-back, or operations still using the copy).
  [[nodiscard]] static bool eviction_would_wait(const hetero_object_state& object, int space);

  /// Whether memory was freed since the last call (a copy freed or unpinned, or the engine
  /// thread took over an eviction): the tasks waiting for memory are retried only then.
  [[nodiscard]] bool take_maybe_free() { return std::exchange(maybe_free_, false); }
  /// On the engine thread's drain: the evictions a backend thread left are its to do now.
  void engine_thread_takes_evictions();

 private:
  /// Evicts least recently used copies in `space` (not those of `keep`, not pinned ones) until
  /// `bytes` fit under the pool's limit or, when the device itself refused, until `bytes` of
  /// copies were freed. Whether it freed anything (the caller allocates again, and calls again
  /// while it does). A copy whose write-back fails stays and joins `unwritable` (skipped from
  /// then on); that failure is thrown only when nothing else could be freed and no running
  /// task will free memory.
  bool make_room(int space, std::size_t bytes, const object_list& keep, bool device_refused,
                 std::vector<const hetero_object_state*>& unwritable);
  /// Whether device memory in `space` may still be freed without evicting more: a task pins a
  /// copy there, or an eviction was left to the engine thread.
  [[nodiscard]] bool may_come_back(int space) const;
  /// Throws out_of_device_memory when `objects` can never fit in `space`'s pool.
  void check_fits(const object_list& objects, int space) const;

  const std::vector<std::unique_ptr<device>>& devices_;
  hetero_statistics& statistics_;
  serial_executor& executor_;
  std::vector<int> spaces_;                                 ///< memory space of each device
  std::vector<std::unique_ptr<device_memory_pool>> pools_;  ///< space s >= 1 is pools_[s - 1]
  std::unique_ptr<host_memory_pool> host_pool_;
  /// Per space, the objects with a buffer there, least recently used first: make_room evicts
  /// from the front. A list, not a scan and sort of every resident copy per allocation miss,
  /// which cost O(n log n) each once thousands of copies are resident (bench hetero_eviction).
  std::vector<std::list<hetero_object_state*>> resident_;
  bool maybe_free_ = false;
  bool eviction_left_to_engine_thread_ = false;
};

}  // namespace roam::detail
