// The tables behind roam::node_local: per node, the instances of the lazy node_locals (made
// on first use, destroyed with the node) and of the collective ones (published by their
// constructors); per process, the lazy node_locals that exist.
#include <roam/am/node_local.hpp>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace roam::detail {

std::atomic<std::uint64_t> node_local_generation{0};

namespace {

// Lazy node_locals are globals: a few per program. Their ids index a two-level table of each
// node's instances (which messages and local()'s slow path read); local() itself reads the
// node_local's per-run slots.
constexpr std::uint32_t lazy_chunk = 64;
constexpr std::uint32_t most_lazy = lazy_chunk * 64;

struct lazy_registry {
  std::mutex lock;
  std::vector<node_local_kind> kinds{1};  // index 0 is no id
  std::vector<bool> alive{false};
};

lazy_registry& lazies() {
  static lazy_registry r;
  return r;
}

// The kind of lazy id `id` (kept after its node_local died: its instances may outlive it
// until the run ends).
node_local_kind kind_of(std::uint32_t id) {
  lazy_registry& r = lazies();
  std::lock_guard guard(r.lock);
  return r.kinds.at(id);
}

struct collective_entry {
  void* instance = nullptr;
  // Shared with the handlers waiting for it: an entry erased meanwhile (a misuse that is
  // reported) must not free a flag a waiter still touches.
  std::shared_ptr<ready_flag> built = std::make_shared<ready_flag>();
};

struct node_local_table {
  ~node_local_table() {
    node_local_generation.fetch_add(1, std::memory_order_acq_rel);
    for (std::uint32_t c = 0; c < chunks.size(); ++c) {
      auto* chunk = chunks[c].load(std::memory_order_acquire);
      if (!chunk) continue;
      for (std::uint32_t i = 0; i < lazy_chunk; ++i)
        if (void* instance = (*chunk)[i].load(std::memory_order_acquire))
          kind_of(c * lazy_chunk + i).destroy(instance);
      delete chunk;
    }
  }

  using chunk_type = std::array<std::atomic<void*>, lazy_chunk>;
  std::array<std::atomic<chunk_type*>, most_lazy / lazy_chunk> chunks{};
  std::mutex lock;                     // creation of lazy instances; the collective entries
  std::uint32_t collective_built = 0;  // highest collective id built on this node (low bits)
  std::unordered_map<std::uint32_t, collective_entry> collective;
};

/// The global node_locals by number: processes that numbered them differently (one made a
/// global the others did not, before roam::run) would deliver messages to the wrong one.
std::string lazy_fingerprint() {
  lazy_registry& r = lazies();
  std::lock_guard guard(r.lock);
  std::string lines;
  for (std::size_t id = 1; id < r.kinds.size(); ++id)
    lines +=
        "node_local " + std::to_string(id) + " of type " + demangled(r.kinds[id].type_name) + '\n';
  return lines;
}

const extension_key table_extension = register_node_extension(
    {.name = "per-node state (roam::node_local)",
     .order = 40,
     .make = [](node_runtime&) -> void* { return new node_local_table(); },
     .destroy = [](void* state) noexcept { delete static_cast<node_local_table*>(state); },
     .fingerprint = lazy_fingerprint});

node_local_table& table_of(node_runtime& n) {
  return *static_cast<node_local_table*>(extension_state(n, table_extension));
}

/// The instance of lazy node_local `id` (1 to most_lazy - 1) in `t` if it was made, else
/// nullptr. Without a lock.
void* made_instance(const node_local_table& t, std::uint32_t id) {
  auto* chunk = t.chunks[id / lazy_chunk].load(std::memory_order_acquire);
  return chunk ? (*chunk)[id % lazy_chunk].load(std::memory_order_acquire) : nullptr;
}

/// The slot of lazy node_local `id` in `t`, its chunk made if needed (t.lock held).
std::atomic<void*>& slot_of(node_local_table& t, std::uint32_t id) {
  auto* chunk = t.chunks[id / lazy_chunk].load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new node_local_table::chunk_type{};
    t.chunks[id / lazy_chunk].store(chunk, std::memory_order_release);
  }
  return (*chunk)[id % lazy_chunk];
}

}  // namespace

std::uint32_t register_lazy_node_local(const node_local_kind& kind) {
  if (current_node())
    throw usage_error(
        "roam::node_local built inside roam::run without roam::collective: inside the run, "
        "every node builds its own with node_local<T>(roam::collective, args...); a "
        "node_local<T> without it is a global (made before the run, each node's instance made "
        "on first use)");
  lazy_registry& r = lazies();
  std::lock_guard guard(r.lock);
  if (r.kinds.size() == most_lazy)
    throw usage_error("roam::node_local: more than " + std::to_string(most_lazy - 1) +
                      " global node_locals in one process");
  if (kind.checkpoint_name) {
    if (!*kind.checkpoint_name)
      throw usage_error("roam::node_local(roam::checkpointed{name}): the name is empty");
    for (std::size_t id = 1; id < r.kinds.size(); ++id)
      if (r.alive[id] && r.kinds[id].checkpoint_name &&
          std::string_view(r.kinds[id].checkpoint_name) == kind.checkpoint_name)
        throw usage_error("roam::node_local(roam::checkpointed{\"" +
                          std::string(kind.checkpoint_name) +
                          "\"}): another checkpointed node_local has that name");
  }
  r.kinds.push_back(kind);
  r.alive.push_back(true);
  return static_cast<std::uint32_t>(r.kinds.size() - 1);
}

void unregister_lazy_node_local(std::uint32_t id) noexcept {
  lazy_registry& r = lazies();
  std::lock_guard guard(r.lock);
  if (id < r.alive.size()) r.alive[id] = false;
}

std::vector<checkpointed_node_local> checkpointed_node_locals() {
  lazy_registry& r = lazies();
  std::lock_guard guard(r.lock);
  std::vector<checkpointed_node_local> found;
  for (std::size_t id = 1; id < r.kinds.size(); ++id)
    if (r.alive[id] && r.kinds[id].checkpoint_name)
      found.push_back({static_cast<std::uint32_t>(id), r.kinds[id].checkpoint_name,
                       r.kinds[id].type_name, r.kinds[id].merge != nullptr});
  return found;
}

bool save_node_local(node_runtime& n, std::uint32_t id, std::vector<std::byte>& out) {
  void* instance = made_instance(table_of(n), id);
  if (!instance) return false;
  kind_of(id).save(instance, out);
  return true;
}

void restore_node_local(node_runtime& n, std::uint32_t id, std::span<const std::byte> bytes) {
  const node_local_kind kind = kind_of(id);
  void* loaded = kind.load(bytes.data(), bytes.size());
  node_local_table& t = table_of(n);
  void* existing = nullptr;
  {
    std::lock_guard guard(t.lock);
    auto& slot = slot_of(t, id);
    existing = slot.load(std::memory_order_relaxed);
    if (!existing) {
      slot.store(loaded, std::memory_order_release);
      return;
    }
  }
  // Merged outside the lock: the merge function may use other node_locals.
  struct discard {
    const node_local_kind& kind;
    void* instance;
    ~discard() { kind.destroy(instance); }
  } dropped{kind, loaded};
  if (!kind.merge)
    throw usage_error("roam::node_local(roam::checkpointed{\"" + std::string(kind.checkpoint_name) +
                      "\"}) has no merge function, and node " + std::to_string(id_of(n)) +
                      " restores the states of several nodes");
  kind.merge(kind.owner, existing, loaded);
}

void* lazy_node_local(node_runtime& n, std::uint32_t id) {
  node_local_table& t = table_of(n);
  if (id == 0 || id >= most_lazy)
    fatal("a message names node_local #" + std::to_string(id) +
          ", which this program does not have");
  if (void* instance = made_instance(t, id)) return instance;
  node_local_kind kind{};
  {
    lazy_registry& r = lazies();
    std::lock_guard guard(r.lock);
    if (id >= r.kinds.size() || !r.alive[id])
      fatal("a message names node_local #" + std::to_string(id) + ", which " +
            (id >= r.kinds.size() ? "this program does not have" : "was destroyed"));
    kind = r.kinds[id];
  }
  // Built outside the lock: T() or the factory may use other node_locals, or wait.
  void* made = kind.make(kind.owner);
  std::lock_guard guard(t.lock);
  auto& slot = slot_of(t, id);
  if (void* first = slot.load(std::memory_order_relaxed)) {
    kind.destroy(made);  // another thread of the node made it meanwhile
    return first;
  }
  slot.store(made, std::memory_order_release);
  return made;
}

void* lazy_node_local_slow(std::atomic<node_local_slots*>& slots,
                           std::unique_ptr<node_local_slots>& owned, std::uint32_t id) {
  node_runtime& n = require_node("roam::node_local::local");
  void* instance = lazy_node_local(n, id);
  static std::mutex slots_lock;  // rare: once per node_local, node and run
  std::lock_guard guard(slots_lock);
  const std::uint64_t generation = node_local_generation.load(std::memory_order_acquire);
  node_local_slots* s = slots.load(std::memory_order_acquire);
  if (!s || s->generation != generation) {
    const local_node_range local = local_nodes_of(n);
    auto fresh = std::make_unique<node_local_slots>();
    fresh->generation = generation;
    fresh->first = local.first;
    fresh->count = local.count;
    fresh->instances = std::make_unique<std::atomic<void*>[]>(local.count);
    fresh->previous = std::move(owned);  // a reader may still look at it
    s = fresh.get();
    owned = std::move(fresh);
    slots.store(s, std::memory_order_release);
  }
  const node_id index = id_of(n) - s->first;
  if (index < s->count) s->instances[index].store(instance, std::memory_order_release);
  return instance;
}

std::uint32_t publish_collective_node_local(node_runtime& n, void* instance) {
  node_local_table& t = table_of(n);
  std::shared_ptr<ready_flag> built;
  std::uint32_t id = 0;
  {
    // The id and the entry together: a message for this id never finds it numbered but
    // missing (which would read as destroyed).
    std::lock_guard guard(t.lock);
    if (t.collective_built + 1 >= collective_node_local)
      throw usage_error("roam::node_local: too many collective node_locals on one node");
    id = collective_node_local | ++t.collective_built;
    collective_entry& e = t.collective[id];
    e.instance = instance;
    built = e.built;
  }
  built->set();
  return id;
}

void withdraw_node_local(node_runtime& n, std::uint32_t id) noexcept {
  node_local_table& t = table_of(n);
  std::lock_guard guard(t.lock);
  t.collective.erase(id);
}

void* collective_node_local_instance(node_runtime& n, std::uint32_t id) {
  node_local_table& t = table_of(n);
  std::shared_ptr<ready_flag> built;
  {
    std::lock_guard guard(t.lock);
    auto it = t.collective.find(id);
    if (it == t.collective.end()) {
      if ((id & ~collective_node_local) <= t.collective_built)
        fatal("a message reached collective node_local #" +
              std::to_string(id & ~collective_node_local) + " on node " + std::to_string(id_of(n)) +
              " after it was destroyed there (destroy a node_local only once no message to it "
              "can arrive: after roam::barrier_all_handled())");
      it = t.collective.emplace(id, collective_entry{}).first;  // built later: wait for it
    }
    if (it->second.built->ready()) return it->second.instance;
    built = it->second.built;
  }
  wait(*built);  // a handler suspends until this node builds it
  std::lock_guard guard(t.lock);
  auto it = t.collective.find(id);
  if (it == t.collective.end())
    fatal("collective node_local #" + std::to_string(id & ~collective_node_local) +
          " was destroyed on node " + std::to_string(id_of(n)) +
          " while a message to it waited for it to be built");
  return it->second.instance;
}

}  // namespace roam::detail
