#include "directory.hpp"

#include <roam/base/detail/fatal.hpp>
#include <roam/core/detail/grace_period.hpp>

#include <algorithm>

namespace roam::detail {

bool object_entry::learn_route(route r) noexcept {
  std::uint64_t seen = route_.load(std::memory_order_acquire);
  while (route::unpack(seen).version < r.version)
    if (route_.compare_exchange_weak(seen, r.pack(), std::memory_order_acq_rel)) return true;
  return false;
}

bool object_entry::restart_sequence(std::uint32_t series, std::uint64_t delivered) noexcept {
  std::lock_guard guard(lock);  // one restart at a time (requests may repeat)
  if (series_.load(std::memory_order_relaxed) != series) return true;
  std::uint64_t expected = delivered;
  if (!next_sequence_.compare_exchange_strong(expected, delivered | restarting,
                                              std::memory_order_acq_rel))
    return false;  // a message was numbered since: it is in flight
  series_.store(series + 1, std::memory_order_release);
  next_sequence_.store(0, std::memory_order_release);  // lets waiting takers go on
  return true;
}

void directory::add_resident(object_entry& e) {
  std::lock_guard guard(residents_lock_);
  e.state().resident_slot = residents_.size();
  residents_.push_back(&e);
}

void directory::remove_resident(object_entry& e) {
  std::lock_guard guard(residents_lock_);
  const std::size_t slot = e.state().resident_slot;
  if (slot >= residents_.size() || residents_[slot] != &e) return;
  residents_[slot] = residents_.back();
  residents_[slot]->state_if_any()->resident_slot = slot;
  residents_.pop_back();
}

void directory::copy_residents(std::vector<object_entry*>& out) const {
  std::lock_guard guard(residents_lock_);
  out.assign(residents_.begin(), residents_.end());
}

object_state& object_entry::state() {
  if (!state_) state_ = std::make_unique<object_state>();
  return *state_;
}

namespace {
constexpr std::size_t initial_buckets = 1024;
constexpr std::size_t entries_per_bucket = 2;  // grow beyond this load factor
}  // namespace

directory::table::table(std::size_t n)
    : mask(n - 1), buckets(std::make_unique<std::atomic<link*>[]>(n)) {
  for (std::size_t i = 0; i < n; ++i) buckets[i].store(nullptr, std::memory_order_relaxed);
}

directory::table::~table() {
  for (std::size_t b = 0; b <= mask; ++b) {
    link* l = buckets[b].load(std::memory_order_relaxed);
    while (l) {
      link* next = l->next.load(std::memory_order_relaxed);
      delete l;
      l = next;
    }
  }
}

namespace {
template <class T>
void free_as(void* p) {
  delete static_cast<T*>(p);
}
}  // namespace

directory::directory(node_runtime& n) : node(n), nodes_(size_of(n)), home_span_(size_of(n)) {
  current_.store(new table(initial_buckets), std::memory_order_release);
}

bool directory::index_issued(const object_id& id) const noexcept {
  if (id.index == 0) return false;
  if (id.home == id_of(node)) return id.index < next_index_.load(std::memory_order_relaxed);
  if (!adopted_set_.load(std::memory_order_acquire)) return false;
  auto it =
      std::lower_bound(adopted_.begin(), adopted_.end(), std::pair{id.home, std::uint64_t{0}});
  return it != adopted_.end() && it->first == id.home && id.index < it->second;
}

void directory::adopt_homes(node_id span, std::uint64_t next_index,
                            std::vector<std::pair<node_id, std::uint64_t>> adopted) {
  if (adopted_set_.load(std::memory_order_relaxed))
    fatal("internal error: a node's directory adopted homes twice");
  std::sort(adopted.begin(), adopted.end());
  adopted_ = std::move(adopted);
  adopted_set_.store(true, std::memory_order_release);
  std::uint64_t seen = next_index_.load(std::memory_order_relaxed);
  while (seen < next_index && !next_index_.compare_exchange_weak(seen, next_index)) {
  }
  home_span_.store(std::max(span, nodes_), std::memory_order_release);
}

std::vector<std::pair<node_id, std::uint64_t>> directory::home_limits() const {
  std::vector<std::pair<node_id, std::uint64_t>> limits;
  limits.emplace_back(id_of(node), next_index_.load(std::memory_order_relaxed));
  if (adopted_set_.load(std::memory_order_acquire))
    limits.insert(limits.end(), adopted_.begin(), adopted_.end());
  return limits;
}

directory::~directory() {
  // The node has stopped: nobody reads this directory any more.
  grace_free_retired_of(this);
  std::unique_ptr<table> t(current_.load(std::memory_order_relaxed));
  for (std::size_t b = 0; b <= t->mask; ++b)
    for (link* l = t->buckets[b].load(std::memory_order_relaxed); l;
         l = l->next.load(std::memory_order_relaxed))
      delete l->entry;
}

std::size_t directory::hash(const object_id& id) noexcept {
  std::uint64_t h = id.index * 0x9E3779B97F4A7C15ull ^ (std::uint64_t{id.home} << 40);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return static_cast<std::size_t>(h ^ (h >> 32));
}

object_entry* directory::find_in(const table& t, const object_id& id) const noexcept {
  for (link* l = t.buckets[hash(id) & t.mask].load(std::memory_order_acquire); l;
       l = l->next.load(std::memory_order_acquire))
    if (l->index == id.index && l->home == id.home) return l->entry;
  return nullptr;
}

object_entry* directory::find(const object_id& id) const noexcept {
  return find_in(*current_.load(std::memory_order_acquire), id);
}

void directory::insert_into(table& t, object_entry* e) {
  auto* l = new link{e, {}, e->id().index, e->id().home};
  auto& head = t.buckets[hash(e->id()) & t.mask];
  l->next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  head.store(l, std::memory_order_release);
}

object_entry& directory::find_or_insert(const object_id& id) {
  if (object_entry* e = find(id)) return *e;
  table* replaced = nullptr;
  object_entry* e = insert(id, replaced);
  // Retired with no lock held: freeing what is due may run here.
  if (replaced) grace_retire(this, replaced, free_as<table>);
  return *e;
}

object_entry* directory::insert(const object_id& id, table*& replaced) {
  std::lock_guard guard(insert_lock_);
  table* t = current_.load(std::memory_order_relaxed);
  if (object_entry* e = find_in(*t, id)) return e;
  auto* e = new object_entry(object_id{id.home, 0, id.index});
  const std::size_t count = count_.load(std::memory_order_relaxed) + 1;
  count_.store(count, std::memory_order_relaxed);
  inserted_.fetch_add(1, std::memory_order_relaxed);
  changes_.store(changes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  insert_into(*t, e);
  if (count > (t->mask + 1) * entries_per_bucket) {
    // Double: a new table with its own links; readers still on the old one see a complete
    // (if slightly stale) chain, and the old table is freed after a grace period.
    auto* bigger = new table((t->mask + 1) * 4);
    for (std::size_t b = 0; b <= t->mask; ++b)
      for (link* l = t->buckets[b].load(std::memory_order_relaxed); l;
           l = l->next.load(std::memory_order_relaxed))
        insert_into(*bigger, l->entry);
    current_.store(bigger, std::memory_order_release);
    replaced = t;
  }
  return e;
}

directory::link* directory::unlink(object_entry& e) {
  std::lock_guard guard(insert_lock_);
  table& t = *current_.load(std::memory_order_relaxed);
  std::atomic<link*>* at = &t.buckets[hash(e.id()) & t.mask];
  for (link* l = at->load(std::memory_order_relaxed); l;
       l = l->next.load(std::memory_order_relaxed)) {
    if (l->entry == &e) {
      // Readers standing on `l` still follow its next: the rest of the chain.
      at->store(l->next.load(std::memory_order_relaxed), std::memory_order_release);
      count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      changes_.store(changes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return l;
    }
    at = &l->next;
  }
  fatal("directory inconsistency: " + describe_object(e.id()) +
        " is not in the directory it is removed from");
}

void directory::retire(link* l) {
  grace_retire(this, l, [](void* p) {
    auto* removed = static_cast<link*>(p);
    delete removed->entry;
    delete removed;
  });
}

}  // namespace roam::detail
