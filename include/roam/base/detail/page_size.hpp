#pragma once
// The system's page size, asked once (base layer: the transport, the core and the
// heterogeneous framework share it).
#include <unistd.h>

#include <cstddef>

namespace roam::detail {

/// The system's page size (4 KiB on x86-64; 16 or 64 KiB on some Arm systems).
inline std::size_t page_bytes() noexcept {
  static const std::size_t bytes = [] {
    const long reported = ::sysconf(_SC_PAGESIZE);
    return reported > 0 ? static_cast<std::size_t>(reported) : std::size_t{4096};
  }();
  return bytes;
}

}  // namespace roam::detail
