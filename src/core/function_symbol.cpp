// Names a handler function by its symbol, for error messages.
//
// dladdr() sees only the dynamic symbol table, which holds exported symbols alone: most
// handlers of an executable (and every static or anonymous-namespace one) are missing
// from it. The full table (.symtab) is in the file, so it is read from there. Why not a
// library: libbacktrace ships only inside GCC (no header for other compilers), and
// libelf/libdw would add a link dependency to every roam program, and to the installed
// package, for one lookup in an error path; the ELF section and symbol layout is fixed by
// the ABI (<elf.h>) and reading it takes the few lines below.
#include <roam/core/detail/function_symbol.hpp>
#include <roam/core/detail/function_table.hpp>
#include <roam/core/detail/handler_registry.hpp>
#include <roam/core/detail/node_api.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace roam::detail {
namespace {

/// A read-only mapping of a whole file, unmapped when it goes.
class mapped_file {
 public:
  explicit mapped_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p =
          ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const std::byte*>(p);
        size_ = static_cast<std::size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }

  /// A pointer to a T at `offset`, or nullptr when `count` of them do not fit in the file
  /// or `offset` is misaligned for T (a corrupt file).
  template <class T>
  const T* at(std::uint64_t offset, std::uint64_t count = 1) const noexcept {
    if (!data_ || offset > size_ || count > (size_ - offset) / sizeof(T)) return nullptr;
    if (offset % alignof(T) != 0) return nullptr;
    return reinterpret_cast<const T*>(data_ + offset);
  }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// The raw (mangled) name of the function containing `address` in the symbol table of
/// section type `kind` (SHT_SYMTAB or SHT_DYNSYM) of a 64-bit ELF file, or "".
std::string find_symbol(const mapped_file& f, std::uint32_t kind, std::uint64_t address) {
  const auto* eh = f.at<Elf64_Ehdr>(0);
  if (!eh || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr))
    return {};
  const auto* sections = f.at<Elf64_Shdr>(eh->e_shoff, eh->e_shnum);
  if (!sections) return {};
  for (std::size_t i = 0; i < eh->e_shnum; ++i) {
    const Elf64_Shdr& table = sections[i];
    if (table.sh_type != kind || table.sh_entsize != sizeof(Elf64_Sym) ||
        table.sh_link >= eh->e_shnum)
      continue;
    const Elf64_Shdr& strings = sections[table.sh_link];
    const auto* symbols = f.at<Elf64_Sym>(table.sh_offset, table.sh_size / sizeof(Elf64_Sym));
    const auto* names = f.at<char>(strings.sh_offset, strings.sh_size);
    if (!symbols || !names) continue;
    for (std::size_t k = 0; k < table.sh_size / sizeof(Elf64_Sym); ++k) {
      const Elf64_Sym& s = symbols[k];
      const unsigned type = ELF64_ST_TYPE(s.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF) continue;
      if (address < s.st_value || address >= s.st_value + std::max<std::uint64_t>(s.st_size, 1))
        continue;
      if (s.st_name >= strings.sh_size) continue;
      const char* name = names + s.st_name;
      // Bounded by the string table: a corrupt file cannot make this read past it.
      const std::size_t length = strnlen(name, strings.sh_size - s.st_name);
      return std::string(name, length);
    }
  }
  return {};
}

/// A versioned name ("f@@V1", in a shared library's table) demangles without its version.
std::string demangle(const std::string& symbol) {
  return demangled(symbol.substr(0, symbol.find('@')).c_str());
}

}  // namespace

std::string function_symbol(std::uint64_t token) {
  // Bounded: one entry per handler function that has appeared in an error.
  static std::mutex lock;
  static std::map<std::uint64_t, std::string> known;
  {
    std::lock_guard guard(lock);
    if (auto it = known.find(token); it != known.end()) return it->second;
  }
  std::string file;
  std::uintptr_t offset = 0;
  std::string name;
  if (!locate_function(token, file, offset)) return name;  // not cached: a corrupt token
  const mapped_file f(file);
  name = find_symbol(f, SHT_SYMTAB, offset);
  if (name.empty()) name = find_symbol(f, SHT_DYNSYM, offset);
  if (!name.empty()) name = demangle(name);
  std::lock_guard guard(lock);
  known.emplace(token, name);
  return name;
}

std::string handler_display_name(std::uint32_t id, std::uint64_t function) {
  const handler_entry* e = handler_registry::find(id);
  if (!e) return "#" + std::to_string(id);
  return handler_display_name(e->name, e->names_function ? function : 0);
}

std::string handler_display_name(std::string_view registered, std::uint64_t function) {
  if (function == 0) return std::string(registered);
  std::string symbol = function_symbol(function);
  if (!symbol.empty()) return symbol;
  // Stripped: the type, and where the function is, for addr2line.
  std::string file;
  std::uintptr_t offset = 0;
  if (!locate_function(function, file, offset)) return std::string(registered);
  if (file == "/proc/self/exe") {
    char path[PATH_MAX];
    const ssize_t n = ::readlink(file.c_str(), path, sizeof path - 1);
    if (n > 0) file.assign(path, static_cast<std::size_t>(n));
  }
  char where[32];
  std::snprintf(where, sizeof where, "+0x%zx", static_cast<std::size_t>(offset));
  return std::string(registered) + " at " + file + where;
}

}  // namespace roam::detail
