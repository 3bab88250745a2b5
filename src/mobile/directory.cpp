#include "directory.hpp"

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

directory::directory() {
  tables_.push_back(std::make_unique<table>(initial_buckets));
  current_.store(tables_.back().get(), std::memory_order_release);
}

directory::~directory() = default;

std::size_t directory::hash(const object_id& id) noexcept {
  std::uint64_t h = id.index * 0x9E3779B97F4A7C15ull ^ (std::uint64_t{id.home} << 40);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return static_cast<std::size_t>(h ^ (h >> 32));
}

object_entry* directory::find_in(const table& t, const object_id& id) const noexcept {
  for (link* l = t.buckets[hash(id) & t.mask].load(std::memory_order_acquire); l; l = l->next) {
    const object_id& k = l->entry->id();
    if (k.index == id.index && k.home == id.home) return l->entry;
  }
  return nullptr;
}

object_entry* directory::find(const object_id& id) const noexcept {
  return find_in(*current_.load(std::memory_order_acquire), id);
}

void directory::insert_into(table& t, object_entry* e) {
  // Links come in blocks that live as long as their table.
  constexpr std::size_t block_size = 256;
  if (t.links.empty() || t.used_in_last_block == block_size) {
    t.links.push_back(std::make_unique<link[]>(block_size));
    t.used_in_last_block = 0;
  }
  link* l = &t.links.back()[t.used_in_last_block++];
  l->entry = e;
  auto& head = t.buckets[hash(e->id()) & t.mask];
  l->next = head.load(std::memory_order_relaxed);
  head.store(l, std::memory_order_release);
}

object_entry& directory::find_or_insert(const object_id& id) {
  if (object_entry* e = find(id)) return *e;
  std::lock_guard guard(insert_lock_);
  table* t = current_.load(std::memory_order_relaxed);
  if (object_entry* e = find_in(*t, id)) return *e;
  entries_.push_back(std::make_unique<object_entry>(object_id{id.home, 0, id.index}));
  object_entry* e = entries_.back().get();
  if (entries_.size() > (t->mask + 1) * entries_per_bucket) {
    // Double: a new table with its own links; readers still on the old one see a complete
    // (if slightly stale) chain, and the old table stays alive until the node stops.
    auto bigger = std::make_unique<table>((t->mask + 1) * 4);
    for (auto& existing : entries_) insert_into(*bigger, existing.get());
    tables_.push_back(std::move(bigger));
    current_.store(tables_.back().get(), std::memory_order_release);
  } else {
    insert_into(*t, e);
  }
  return *e;
}

}  // namespace roam::detail
