// The distributed directory, one node's part: what this node knows of every mobile object
// it has created, hosted, sent to or forwarded for.
//
// Written here rather than taken from a library because the mobile-object protocol needs
// lookups without any lock and entries whose address stays valid while a message, a running
// handler or a sender uses them, which general concurrent maps do not promise together.
// Lookups read the current bucket table without locking; insertions and removals take a
// mutex. A removed entry, like a bucket table replaced when the table doubles, is freed only
// after a grace period (core/detail/grace_period.hpp), so a reader still walking it stays
// valid. Entries of destroyed objects are removed (ADR 46): the holder's at once, the home
// node's when it hears of the destruction, and the others' by a sweep that asks the homes.
#pragma once

#include "object_mailbox.hpp"

#include <roam/base/detail/spin_lock.hpp>

#include <roam/mobile/detail/object_runtime.hpp>
#include <roam/transport/message.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace roam::detail {

/// Where a node believes an object is: packed in one word so senders read it atomically.
/// `version` counts the object's installations (1 = where it was created; 0 = no
/// knowledge). A newer version always wins.
struct route {
  std::uint32_t version = 0;
  node_id location = 0;
  static route unpack(std::uint64_t w) noexcept {
    return {static_cast<std::uint32_t>(w >> 32), static_cast<node_id>(w & 0xffffffffu)};
  }
  std::uint64_t pack() const noexcept {
    return (static_cast<std::uint64_t>(version) << 32) | location;
  }
};

enum class residence : std::uint8_t { absent, resident, destroyed };

/// What a node keeps of an object it hosts (or hosted, or holds messages for): its mailbox
/// (object_mailbox.hpp), residence and load. Guarded by the entry's lock.
struct object_state : object_mailbox {
  residence state = residence::absent;
  std::uint32_t type = 0;
  std::unique_ptr<object_box> object;

  /// Load: the messages that arrived for the object here and have not finished (waiting in
  /// any queue, or running), as the load-balancing layer's hooks count them.
  object_load_counters load;
  /// A migration asked for by load balancing, waiting for the running handlers to finish;
  /// nothing else is granted meanwhile.
  bool migration_pending = false;
  /// Set with migration_pending when handlers were granted but have not started: they give
  /// their grant back when a worker picks them (checked without the lock on every start).
  std::atomic<bool> revoke{false};
  /// Granted handlers that have started (the others may still be revoked).
  std::atomic<std::uint32_t> started{0};
  node_id migration_target = 0;
  /// A load balancer's move was refused: the object is too large for one message. The
  /// balancers do not pack it again (migrate_resident declines it).
  bool too_large_to_move = false;
  /// Position in the directory's list of resident objects.
  std::size_t resident_slot = 0;
};

class object_entry {
 public:
  explicit object_entry(const object_id& id) noexcept : id_(id) {}
  /// The object's home and index (the type part is the creator's and may be 0 here).
  const object_id& id() const noexcept { return id_; }

  route current_route() const noexcept {
    return route::unpack(route_.load(std::memory_order_acquire));
  }
  /// Adopts `r` if it is newer than what this node knows. Returns true if it did.
  bool learn_route(route r) noexcept;
  /// The series and sequence number of the next message from this node to the object.
  struct ticket {
    std::uint32_t series;
    std::uint64_t seq;
  };
  ticket take_sequence() noexcept {
    for (;;) {
      const std::uint64_t seq = next_sequence_.fetch_add(1, std::memory_order_acq_rel);
      // Read after the number: a new series cannot start while this message is unsent,
      // since the holder has not delivered it (restart_sequence needs all delivered).
      if (!(seq & restarting)) return {series_.load(std::memory_order_acquire), seq};
      while (next_sequence_.load(std::memory_order_acquire) & restarting) cpu_relax();
    }
  }
  /// Removed from its directory (under `lock`): whoever locks it afterwards looks the object
  /// up again. Never reset.
  bool collected() const noexcept { return collected_; }

  /// The object's holder delivered `delivered` messages of `series` from this node and
  /// asks it to number the next ones in a new series from 0 (ADR 45). Returns true if this
  /// node has moved past `series` (now, or earlier), false if it sent more meanwhile.
  bool restart_sequence(std::uint32_t series, std::uint64_t delivered) noexcept;

  /// Held for a few dozen instructions per message (a spin lock costs half a mutex here);
  /// contended only by messages to the same object.
  spin_lock lock;
  /// Created on first need (hosting, holding messages): senders never pay for it.
  object_state& state();
  object_state* state_if_any() noexcept { return state_.get(); }

 private:
  object_id id_;
  std::atomic<std::uint64_t> route_{0};
  /// Set in next_sequence_ while a new series starts: takers wait for it to clear.
  static constexpr std::uint64_t restarting = std::uint64_t{1} << 63;
  std::atomic<std::uint64_t> next_sequence_{0};
  std::atomic<std::uint32_t> series_{0};
  std::unique_ptr<object_state> state_;  // guarded by lock
  bool collected_ = false;               // guarded by lock
  friend class directory;
};

class directory {
 public:
  explicit directory(node_runtime& n);
  ~directory();
  directory(const directory&) = delete;
  directory& operator=(const directory&) = delete;

  /// The entry of an object, or nullptr if this node knows nothing of it. Lock-free.
  object_entry* find(const object_id& id) const noexcept;
  /// The entry of an object, created if needed.
  object_entry& find_or_insert(const object_id& id);
  /// Removes `e` if `dead()` holds under its lock (checked there, with the entry's lock
  /// held); it is freed after a grace period. Returns whether it was removed. The caller
  /// must not touch `e` afterwards beyond its current work item or read section.
  template <class Dead>
  bool remove_if(object_entry& e, Dead dead) {
    link* removed = nullptr;
    {
      // Unlinked under the entry's lock: whoever finds it collected after waiting for the
      // lock finds it gone on the next lookup.
      std::lock_guard guard(e.lock);
      if (e.collected_ || !dead(e)) return false;
      e.collected_ = true;
      removed = unlink(e);
    }
    retire(removed);  // freeing may run here: with no lock held
    return true;
  }
  /// Calls `visit(entry)` for every entry (a snapshot walk: entries inserted meanwhile may
  /// be missed). Inside a grace_read_section or a work item; `visit` takes no directory lock.
  template <class Visit>
  void for_each_entry(Visit visit) const {
    const table& t = *current_.load(std::memory_order_acquire);
    for (std::size_t b = 0; b <= t.mask; ++b)
      for (link* l = t.buckets[b].load(std::memory_order_acquire); l;
           l = l->next.load(std::memory_order_acquire))
        visit(*l->entry);
  }
  /// How many entries this node keeps.
  std::size_t entries() const noexcept { return count_.load(std::memory_order_relaxed); }
  /// Entries inserted since the last sweep (its trigger).
  std::size_t inserted() const noexcept { return inserted_.load(std::memory_order_relaxed); }
  /// Insertions and removals since the directory was made.
  std::uint64_t changes() const noexcept { return changes_.load(std::memory_order_relaxed); }
  /// Claims the sweep once `due` entries were inserted since the last one: true for one
  /// caller, which sweeps.
  bool claim_sweep(std::size_t due) noexcept {
    std::size_t seen = inserted_.load(std::memory_order_relaxed);
    while (seen >= due)
      if (inserted_.compare_exchange_weak(seen, 0, std::memory_order_relaxed)) return true;
    return false;
  }
  /// Index for the next object created on this node (from 1).
  std::uint64_t next_index() noexcept {
    return next_index_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Whether the home of `id` (this node, see home_node()) has handed out its index. An
  /// object keeps its entry at its home until it is destroyed, so a handed-out index without
  /// a route is a destroyed object's.
  bool index_issued(const object_id& id) const noexcept;

  /// The node that answers for the objects created on node `home`: that node, or after a
  /// restart on fewer nodes than the checkpoint's (ADR 50), `home % nodes` (their home field
  /// stays as it was, so that the application's pointers stay valid).
  node_id home_node(node_id home) const noexcept { return home < nodes_ ? home : home % nodes_; }
  /// Home fields objects may carry: the job's node count, or more after a restart from a
  /// larger job.
  node_id home_span() const noexcept { return home_span_.load(std::memory_order_acquire); }
  /// A restart (ADR 50), before any traffic: objects may carry homes below `span`; this node
  /// goes on numbering its own objects from `next_index`, and answers for the objects of the
  /// former nodes in `adopted` (home, the next index that home would have handed out).
  void adopt_homes(node_id span, std::uint64_t next_index,
                   std::vector<std::pair<node_id, std::uint64_t>> adopted);
  /// For a checkpoint: (home, next index) of this node and of the homes it adopted.
  std::vector<std::pair<node_id, std::uint64_t>> home_limits() const;

  /// The objects resident on this node (for load balancing). Call with the entry's lock
  /// held, when its residence changes.
  void add_resident(object_entry& e);
  void remove_resident(object_entry& e);
  /// The entries of the objects resident here, copied into `out` (reusing its storage).
  void copy_residents(std::vector<object_entry*>& out) const;

  /// Set by the load-balancing layer before any traffic; read on every message.
  std::atomic<object_hooks*> hooks{nullptr};

  node_runtime& node;  ///< whose directory this is
  /// A checkpoint or a restart is under way (restoration.cpp): load balancers' moves are
  /// refused (migrate_resident), so that every object is packed or installed exactly once.
  std::atomic<bool> migrations_frozen{false};
  /// migrate_resident calls under way (a freeze waits for them).
  std::atomic<unsigned> moves_starting{0};
  /// The job is ending (node_extension::quiesce): no more sweeps when idle.
  std::atomic<bool> ending{false};
  /// Sweeps of an idle node (entry_collection.cpp): when the next may run (steady_clock
  /// ticks), freed_by_sweeps when the last one was made, and how many in a row freed
  /// nothing.
  std::atomic<std::int64_t> next_idle_sweep{0};
  std::atomic<std::uint64_t> freed_at_idle_sweep{0};
  std::atomic<unsigned> idle_sweeps_in_vain{0};
  /// Entries removed because a sweep's answer named their object destroyed.
  std::atomic<std::uint64_t> freed_by_sweeps{0};

 private:
  /// A chain's link carries the key, so a lookup touches no entry but the one it finds.
  struct link {
    object_entry* entry;
    std::atomic<link*> next;
    std::uint64_t index;
    node_id home;
  };
  /// A bucket table owns its links (each table links every entry anew); entries are owned
  /// by the directory.
  struct table {
    explicit table(std::size_t buckets);
    ~table();
    std::size_t mask;
    std::unique_ptr<std::atomic<link*>[]> buckets;
  };
  static std::size_t hash(const object_id& id) noexcept;
  object_entry* find_in(const table& t, const object_id& id) const noexcept;
  static void insert_into(table& t, object_entry* e);
  /// Takes `e` out of the current table (insert_lock_ taken); returns its link.
  link* unlink(object_entry& e);
  /// Hands a removed link and its entry to the grace period, which frees both.
  void retire(link* l);
  /// The slow part of find_or_insert (insert_lock_ taken): `replaced` is set to the table
  /// replaced by a larger one, for the caller to retire.
  object_entry* insert(const object_id& id, table*& replaced);

  std::atomic<table*> current_;  // owned; replaced tables are retired
  std::mutex insert_lock_;
  std::atomic<std::size_t> count_{0};      // entries, written under insert_lock_
  std::atomic<std::size_t> inserted_{0};   // since the last claim_sweep()
  std::atomic<std::uint64_t> changes_{0};  // written under insert_lock_
  std::atomic<std::uint64_t> next_index_{1};
  node_id nodes_;  // the job's node count
  std::atomic<node_id> home_span_;
  // Set once by adopt_homes (before any traffic), read without a lock afterwards; sorted.
  std::vector<std::pair<node_id, std::uint64_t>> adopted_;
  std::atomic<bool> adopted_set_{false};
  mutable std::mutex residents_lock_;
  std::vector<object_entry*> residents_;
};

}  // namespace roam::detail
