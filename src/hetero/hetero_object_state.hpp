#pragma once
// A hetero object as the engine sees it: its copies (one per memory space: a buffer, the events
// of the operations using it, its place in the eviction order), their MSI states, and what
// orders the tasks that use it. Guarded by the engine's lock.
#include <cstddef>
#include <deque>
#include <list>
#include <memory>
#include <vector>

#include "object_coherence.hpp"
#include "roam/hetero/device.hpp"

namespace roam::detail {

class hetero_engine;
struct hetero_object_state;
struct hetero_task_state;

/// Drops the entries of `list` that `finished` accepts, but only once the list has doubled since
/// the last time (`kept` holds the size left then): pruning at every append would make each
/// submission cost the number of unfinished tasks on an object, so a program that queues
/// thousands of tasks on one object would spend quadratic time. This way each entry is looked
/// at an amortized constant number of times, and a list holds at most about twice its
/// unfinished entries.
template <class List, class Finished>
void prune_when_doubled(List& list, std::size_t& kept, Finished finished) {
  if (list.size() < 2 * kept + 8) return;
  std::erase_if(list, finished);
  kept = list.size();
}

/// One object's copy in one memory space (its MSI state is the object's `states`).
struct memory_copy {
  device_buffer buffer;               ///< unused in the host space
  device_event ready;                 ///< the last operation that wrote this copy
  std::vector<device_event> readers;  ///< operations that read this copy, maybe in flight
  std::size_t readers_kept = 0;       ///< readers' size after its last pruning (or clearing)
  /// While the copy holds a device buffer: its place in the space's eviction order.
  std::list<hetero_object_state*>::iterator recency;
  int pins = 0;  ///< tasks placed on this space that use the copy

  /// A new write: it waited for every operation using the copy before it.
  void written_by(device_event e) {
    ready = std::move(e);
    readers.clear();
    readers_kept = 0;
  }
  /// A new read; the finished reads are forgotten once their list has doubled (a list of events
  /// that finished is harmless: every use skips ready events).
  void read_by(device_event e);
  /// The operations still reading or writing the copy's memory.
  [[nodiscard]] std::vector<device_event> pending() const;
  /// Whether operations still read or write its memory: pending() without building the list.
  [[nodiscard]] bool in_use() const;
};

struct hetero_object_state {
  hetero_object_state(std::shared_ptr<hetero_engine> e, std::size_t size);
  hetero_object_state(const hetero_object_state&) = delete;
  hetero_object_state& operator=(const hetero_object_state&) = delete;
  ~hetero_object_state();

  [[nodiscard]] bool in_use() const;
  /// A copy whose last write failed (a transfer, a range write, a kernel) holds undefined
  /// contents: the states' failed() transition decides what becomes of it. The failed events
  /// are dropped (each is read once: backend threads may complete one while this runs, and the
  /// decision must rest on one picture). Whether a copy was made Invalid (a transfer failed:
  /// the task that waited for it fails with it).
  bool settle_failed_copies();

  std::shared_ptr<hetero_engine> engine;
  std::size_t bytes;
  void* host = nullptr;
  std::vector<memory_copy> copies;  ///< per memory space
  object_coherence states;          ///< the copies' MSI states
  // Implicit dependencies: the last writer and the readers since it, in submission order.
  std::shared_ptr<hetero_task_state> last_writer;
  std::vector<std::shared_ptr<hetero_task_state>> readers_since_writer;
  std::size_t readers_since_writer_kept = 0;  ///< its size after its last pruning (or clearing)
  /// Host requests not yet released, oldest first.
  std::deque<std::shared_ptr<hetero_task_state>> host_requests;
  /// Every task and host request naming the object that may not have finished (pruned when
  /// it has doubled, see prune_when_doubled): what tasks_done() waits for, whatever their
  /// dependency settings.
  std::vector<std::weak_ptr<hetero_task_state>> users;
  std::size_t users_kept = 0;  ///< users' size after its last pruning
};

}  // namespace roam::detail
