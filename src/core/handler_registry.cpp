#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <vector>

namespace roam::detail {
namespace {

struct registry_state {
  std::mutex lock;
  std::vector<handler_entry*> entries;  // sorted and numbered once sealed
  std::atomic<bool> sealed{false};
};
registry_state& state() {
  static registry_state* s = new registry_state;  // used from static initializers
  return *s;
}

}  // namespace

bool handler_registry::add(handler_entry* entry) noexcept {
  auto& s = state();
  std::lock_guard guard(s.lock);
  if (s.sealed.load()) {
    // A module loaded after start-up (dlopen) registered handlers the other ranks may not
    // know: ids would no longer be consistent.
    fatal("handler '" + std::string(entry->name) +
          "' was registered after roam started (loaded with dlopen?); every handler must "
          "be part of the program when roam::run begins");
  }
  s.entries.push_back(entry);
  return true;
}

void handler_registry::seal() {
  auto& s = state();
  std::lock_guard guard(s.lock);
  if (s.sealed.load()) return;
  std::stable_sort(
      s.entries.begin(), s.entries.end(),
      [](const handler_entry* a, const handler_entry* b) { return a->name < b->name; });
  for (std::uint32_t i = 0; i < s.entries.size(); ++i) s.entries[i]->id = i;
  s.sealed.store(true);
}

const handler_entry* handler_registry::find(std::uint32_t id) noexcept {
  auto& s = state();
  return id < s.entries.size() ? s.entries[id] : nullptr;
}

std::uint32_t handler_registry::size() noexcept {
  return static_cast<std::uint32_t>(state().entries.size());
}

std::string handler_registry::fingerprint() {
  std::ostringstream os;
  for (const auto* e : state().entries) os << "handler " << e->id << ' ' << e->name << '\n';
  return os.str();
}

std::uint32_t id_of(const handler_entry& e) {
  if (e.id == ~0u)
    throw usage_error("handler '" + std::string(e.name) +
                      "' used outside roam::run (the handler table is sealed at start-up)");
  return e.id;
}

}  // namespace roam::detail
