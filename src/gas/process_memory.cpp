// The global heaps of a process: one anonymous mapping, reserved without being committed.
#include "process_memory.hpp"

#include <roam/base/error.hpp>
#include <roam/core/detail/node_api.hpp>
#include <roam/gas/statistics.hpp>

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

namespace roam::gas::detail {

namespace {

std::atomic<process_memory*> running{nullptr};
std::mutex life_lock;          // the nodes of a process are made and destroyed one by one,
std::size_t life_holders = 0;  // but not necessarily by one thread

void* make_state(roam::detail::node_runtime& n) {
  std::lock_guard guard(life_lock);
  // Made before it is counted: a node whose make() throws holds nothing, so that the next
  // run of the process starts from nothing.
  if (life_holders == 0) running.store(new process_memory(n), std::memory_order_release);
  ++life_holders;
  return running.load(std::memory_order_relaxed);
}

void destroy_state(void*) noexcept {
  std::lock_guard guard(life_lock);
  if (--life_holders == 0) delete running.exchange(nullptr, std::memory_order_acq_rel);
}

// The extension only ties the memory's life to the nodes'; operations find it through
// `running` (a handler runs on the owner, a direct copy on any thread of the process).
[[maybe_unused]] const roam::detail::extension_key key = roam::detail::register_node_extension(
    {.name = "global memory", .order = 45, .make = make_state, .destroy = destroy_state});

std::uint64_t round_to_page(std::uint64_t n) {
  constexpr std::uint64_t page = 4096;
  return (n + page - 1) / page * page;
}

}  // namespace

/// Leases a process keeps at most (about 40 bytes each).
constexpr std::size_t most_leases = std::size_t{1} << 16;

process_memory::process_memory(roam::detail::node_runtime& n)
    : first_(roam::detail::local_nodes_of(n).first),
      count_(roam::detail::local_nodes_of(n).count),
      settings_(roam::detail::settings_of(n).of<gas_settings>()),
      heap_bytes_(round_to_page(settings_.heap_bytes)),
      node_bytes_(heap_bytes_ + round_to_page(settings_.symmetric_heap_bytes)),
      leases_(most_leases),
      counted_(std::make_unique<counters[]>(count_)) {
  const std::uint64_t bytes = node_bytes_ * count_;
  std::byte* memory = nullptr;
  if (settings_.path == path::automatic)
    if ((window_ = roam::detail::expose_process_memory(n, bytes))) memory = window_->local_part();
  if (!memory) {
    region_bytes_ = static_cast<std::size_t>(bytes);
    // MAP_NORESERVE: a heap costs the pages a program touches, not the size reserved.
    void* region = ::mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED)
      throw memory_error("roam::gas: cannot reserve " + std::to_string(region_bytes_) +
                         " bytes for the global heaps of " + std::to_string(count_) +
                         " nodes (--roam-gas-heap and --roam-gas-symmetric-heap per node): " +
                         std::strerror(errno));
    region_ = static_cast<std::byte*>(region);
    memory = region_;
  }
  nodes_.reserve(count_);
  for (node_id k = 0; k < count_; ++k) {
    std::byte* base = memory + node_bytes_ * k;
    nodes_.push_back(std::unique_ptr<node_state>(
        new node_state{node_heap(first_ + k, base, heap_bytes_, settings_.max_allocations),
                       node_heap(first_ + k, base + heap_bytes_, node_bytes_ - heap_bytes_,
                                 settings_.max_allocations, node_heap::symmetric_slot),
                       node_cache(settings_.cache_bytes, settings_.cache_shards), ward_merges()}));
  }
}

process_memory::~process_memory() {
  if (region_) ::munmap(region_, region_bytes_);
}

process_memory* process_memory::current() noexcept {
  return running.load(std::memory_order_acquire);
}

process_memory::counters& process_memory::counted(const char* caller) {
  return counted_[roam::detail::id_of(roam::detail::sending_node(caller)) - first_];
}

bool process_memory::reads_directly(node_id node) const noexcept {
  if (!hosts(node)) return false;
  if (settings_.path == path::automatic) return true;
  const roam::detail::node_runtime* self = roam::detail::current_node();
  return self && roam::detail::id_of(*self) == node;
}

node_cache& process_memory::cache(const char* caller) {
  return nodes_[roam::detail::id_of(roam::detail::sending_node(caller)) - first_]->cached;
}

process_memory& process_memory::require(const char* caller) {
  process_memory* m = current();
  if (!m)
    throw usage_error(std::string(caller) +
                      " called outside roam::run: global memory exists while the job runs");
  return *m;
}

}  // namespace roam::gas::detail

namespace roam::gas {

path_statistics node_path_statistics() {
  const char* caller = "roam::gas::node_path_statistics";
  detail::process_memory::counters& c = detail::process_memory::require(caller).counted(caller);
  return {c.direct.load(std::memory_order_relaxed), c.rma.load(std::memory_order_relaxed),
          c.messages.load(std::memory_order_relaxed), c.bytes.load(std::memory_order_relaxed)};
}

}  // namespace roam::gas
