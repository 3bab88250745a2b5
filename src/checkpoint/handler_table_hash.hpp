// The handler table's identity, which a checkpoint records: object ids carry their type as a
// handler id, so only the program that wrote a checkpoint (or one with the same handler
// table) reads its pointers right.
#pragma once

#include <roam/core/detail/handler_registry.hpp>

#include <cstdint>

namespace roam::detail {

/// FNV-1a of handler_registry::fingerprint() (handler ids and names).
inline std::uint64_t handler_table_hash() {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : handler_registry::fingerprint()) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace roam::detail
