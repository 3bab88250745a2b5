#include <roam/base/error.hpp>
#include <roam/core/detail/function_table.hpp>

#include <link.h>

#include <cstdio>
#include <mutex>
#include <sstream>
#include <vector>

namespace roam::detail {
namespace {

struct module {
  std::string name;
  std::uintptr_t base;                                          // load bias
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> code;  // executable [begin, end)
};

struct module_table {
  std::once_flag once;
  std::vector<module> modules;
};
module_table& table() {
  static module_table t;
  return t;
}

int collect(dl_phdr_info* info, std::size_t, void* out) {
  auto& mods = *static_cast<std::vector<module>*>(out);
  module m{info->dlpi_name ? info->dlpi_name : "", info->dlpi_addr, {}};
  if (m.name.empty()) m.name = mods.empty() ? "<executable>" : "<anonymous>";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
      m.code.emplace_back(info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (!m.code.empty()) mods.push_back(std::move(m));
  return 0;
}

constexpr int offset_bits = 48;

}  // namespace

void load_module_table() {
  auto& t = table();
  std::call_once(t.once, [&] { dl_iterate_phdr(collect, &t.modules); });
}

std::uint64_t encode_function(const void* fn) {
  load_module_table();
  auto addr = reinterpret_cast<std::uintptr_t>(fn);
  const auto& mods = table().modules;
  for (std::size_t i = 0; i < mods.size(); ++i)
    for (auto [b, e] : mods[i].code)
      if (addr >= b && addr < e) return (std::uint64_t{i} << offset_bits) | (addr - mods[i].base);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", fn);
  throw usage_error(std::string("function at ") + buf +
                    " is not in any module loaded at start-up and cannot be used as a handler");
}

const void* decode_function(std::uint64_t token) noexcept {
  const auto& mods = table().modules;
  std::uint64_t index = token >> offset_bits;
  if (index >= mods.size()) return nullptr;
  std::uintptr_t addr = mods[index].base + (token & ((std::uint64_t{1} << offset_bits) - 1));
  for (auto [b, e] : mods[index].code)
    if (addr >= b && addr < e) return reinterpret_cast<const void*>(addr);
  return nullptr;
}

bool locate_function(std::uint64_t token, std::string& file, std::uintptr_t& offset) {
  if (!decode_function(token)) return false;
  const auto& m = table().modules[token >> offset_bits];
  // The executable appears without a path; its file is reachable as /proc/self/exe.
  file = m.name == "<executable>" ? "/proc/self/exe" : m.name;
  offset = token & ((std::uint64_t{1} << offset_bits) - 1);
  return true;
}

std::string module_fingerprint() {
  load_module_table();
  std::ostringstream os;
  const auto& mods = table().modules;
  // The executable's and the vdso's names differ harmlessly between launches, so they are
  // not compared; every other module's name and every module's code size must match
  // (the vdso's size is the kernel's business and is not compared either).
  for (std::size_t i = 0; i < mods.size(); ++i) {
    std::uintptr_t size = 0;
    for (auto [b, e] : mods[i].code) size += e - b;
    bool is_vdso = mods[i].name.find("linux-vdso") != std::string::npos;
    os << "module " << i << ' ' << (i == 0 ? "<executable>" : (is_vdso ? "<vdso>" : mods[i].name))
       << " code-bytes " << (is_vdso ? 0 : size) << '\n';
  }
  return os.str();
}

}  // namespace roam::detail
