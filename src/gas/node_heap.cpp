// One node's global heap: first fit over a map of free ranges, coalesced on release.
#include "node_heap.hpp"

#include <roam/base/error.hpp>

#include <algorithm>
#include <string>
#include <utility>

namespace roam::gas::detail {

namespace {

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

std::string allocation_name(std::uint32_t slot, std::uint16_t generation, node_id node) {
  return "allocation " + std::to_string(slot & ~node_heap::symmetric_slot) +
         ((slot & node_heap::symmetric_slot) ? "s." : ".") + std::to_string(generation) +
         " on node " + std::to_string(node);
}

}  // namespace

node_heap::node_heap(node_id owner, std::byte* base, std::uint64_t bytes,
                     std::uint32_t max_allocations, std::uint32_t slot_tag)
    : owner_(owner), slot_tag_(slot_tag), base_(base), bytes_(bytes / alignment * alignment) {
  table_.resize(std::size_t{max_allocations} + 1);
  for (std::uint32_t s = 1; s <= max_allocations; ++s) free_slots_.push_back(s);
  if (bytes_ != 0) free_ranges_.emplace(0, bytes_);
}

node_heap::block node_heap::allocate(std::uint64_t bytes) {
  // An empty allocation still takes a line, so that its pointer is distinct.
  const std::uint64_t span = bytes == 0 ? alignment : round_up(bytes, alignment);
  std::lock_guard guard(lock_);
  auto range = free_ranges_.begin();  // first fit
  while (range != free_ranges_.end() && range->second < span) ++range;
  if (span < bytes || range == free_ranges_.end() || free_slots_.empty())
    throw memory_error(
        "roam::gas::allocate: node " + std::to_string(owner_) + " cannot hold " +
        std::to_string(bytes) + " more bytes: " + std::to_string(in_use_) + " of its " +
        std::to_string(bytes_) + " heap bytes and " + std::to_string(live_) + " of its " +
        std::to_string(table_.size() - 1) +
        " allocations are in use (--roam-gas-heap and --roam-gas-max-allocations set them)");
  const std::uint64_t at = range->first, left = range->second - span;
  free_ranges_.erase(range);
  if (left != 0) free_ranges_.emplace(at + span, left);
  const std::uint32_t slot = free_slots_.front();
  free_slots_.pop_front();
  entry& e = table_[slot];
  e.offset = at;
  e.bytes = bytes;
  e.span = span;
  e.live = true;
  in_use_ += span;
  ++live_;
  return {slot | slot_tag_, e.generation, at, bytes};
}

const node_heap::entry* node_heap::live_entry(std::uint32_t slot, std::uint16_t generation) const {
  if ((slot & symmetric_slot) != slot_tag_) return nullptr;
  slot &= ~symmetric_slot;
  if (slot == 0 || slot >= table_.size()) return nullptr;
  const entry& e = table_[slot];
  return e.live && !e.leaving && e.generation == generation ? &e : nullptr;
}

std::vector<std::uint32_t> node_heap::start_release(std::uint32_t slot, std::uint16_t generation) {
  std::lock_guard guard(lock_);
  if (!live_entry(slot, generation))
    throw memory_error(slot == 0
                           ? std::string("roam::gas::deallocate: the pointer is null")
                           : "roam::gas::deallocate: " + allocation_name(slot, generation, owner_) +
                                 " is not allocated (freed already, or never allocated)");
  entry& e = table_[slot & ~symmetric_slot];
  if (e.holders.empty()) {
    free_entry(slot & ~symmetric_slot);
    return {};
  }
  e.leaving = true;
  return std::exchange(e.holders, {});
}

void node_heap::finish_release(std::uint32_t slot, std::uint16_t generation) noexcept {
  std::lock_guard guard(lock_);
  const std::uint32_t index = slot & ~symmetric_slot;
  if (index == 0 || index >= table_.size()) return;
  const entry& e = table_[index];
  if (e.live && e.leaving && e.generation == generation) free_entry(index);
}

void node_heap::free_entry(std::uint32_t index) noexcept {
  entry& e = table_[index];
  give_back(e.offset, e.span);
  in_use_ -= e.span;
  --live_;
  e.live = e.leaving = false;
  e.holders.clear();
  e.holders.shrink_to_fit();
  ++e.generation;  // wraps: see the class comment
  free_slots_.push_back(index);
}

node_heap::extent node_heap::lease(std::uint32_t slot, std::uint16_t generation,
                                   std::uint32_t holder, const char* operation) {
  {
    std::lock_guard guard(lock_);
    if (live_entry(slot, generation)) {
      entry& e = table_[slot & ~symmetric_slot];
      if (std::find(e.holders.begin(), e.holders.end(), holder) == e.holders.end())
        e.holders.push_back(holder);
      return {base_, e.offset, e.offset + e.bytes};
    }
  }
  refuse(slot, generation, 0, 0, operation);
}

void node_heap::give_back(std::uint64_t offset, std::uint64_t span) {
  auto next = free_ranges_.lower_bound(offset);
  if (next != free_ranges_.begin()) {
    auto before = std::prev(next);
    if (before->first + before->second == offset) {
      offset = before->first;
      span += before->second;
      free_ranges_.erase(before);
    }
  }
  if (next != free_ranges_.end() && offset + span == next->first) {
    span += next->second;
    free_ranges_.erase(next);
  }
  free_ranges_.emplace(offset, span);
}

std::byte* node_heap::resolve(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset,
                              std::uint64_t bytes, const char* operation) const {
  {
    std::lock_guard guard(lock_);
    const entry* e = live_entry(slot, generation);
    if (e && offset >= e->offset && offset - e->offset <= e->bytes &&
        bytes <= e->bytes - (offset - e->offset))
      return base_ + offset;
  }
  refuse(slot, generation, offset, bytes, operation);
}

node_heap::extent node_heap::extent_of(std::uint32_t slot, std::uint16_t generation,
                                       const char* operation) const {
  {
    std::lock_guard guard(lock_);
    if (const entry* e = live_entry(slot, generation))
      return {base_, e->offset, e->offset + e->bytes};
  }
  refuse(slot, generation, 0, 0, operation);
}

std::string node_heap::out_of_bounds(const char* operation, node_id node, std::uint32_t slot,
                                     std::uint16_t generation, std::uint64_t offset,
                                     std::uint64_t bytes, std::uint64_t begin, std::uint64_t end) {
  return std::string("roam::gas::") + operation + ": bytes [" + std::to_string(offset) + ", " +
         std::to_string(offset + bytes) + ") leave " + allocation_name(slot, generation, node) +
         ", bytes [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

void node_heap::refuse(std::uint32_t slot, std::uint16_t generation, std::uint64_t offset,
                       std::uint64_t bytes, const char* operation) const {
  std::lock_guard guard(lock_);
  const entry* e = live_entry(slot, generation);
  if (slot == 0)
    throw memory_error(std::string("roam::gas::") + operation + ": the pointer is null");
  if (!e)
    throw memory_error(std::string("roam::gas::") + operation + ": " +
                       allocation_name(slot, generation, owner_) +
                       " is not allocated (freed, or its slot reused since)");
  throw memory_error(out_of_bounds(operation, owner_, slot, generation, offset, bytes, e->offset,
                                   e->offset + e->bytes));
}

std::uint64_t node_heap::bytes_in_use() const {
  std::lock_guard guard(lock_);
  return in_use_;
}

std::uint32_t node_heap::live_allocations() const {
  std::lock_guard guard(lock_);
  return live_;
}

}  // namespace roam::gas::detail
