// roam — portable identity of plain function pointers.
//
// A free function used as a handler is a run-time value, so it cannot be registered by
// type. Like UPC++, roam sends it as (loaded module, offset from the module's load
// address): identical on every rank of one binary even with address randomization. The
// receiver checks that the decoded address lies in an executable segment of that module
// before calling it, so a corrupt token is an error, not a jump into garbage.
#pragma once

#include <cstdint>
#include <string>

namespace roam::detail {

/// Encodes a function address; throws roam::usage_error if it lies in no module that was
/// loaded when the runtime started.
std::uint64_t encode_function(const void* fn);
/// Decodes a token, or returns nullptr if it names no executable address.
const void* decode_function(std::uint64_t token) noexcept;
/// Module list compared across ranks ("<index> <name>" per line).
std::string module_fingerprint();
/// Builds the module table (first roam::run); idempotent.
void load_module_table();

/// The file of the module a token points into and the token's offset in it (the address a
/// symbol table gives); false when the token names no executable address.
bool locate_function(std::uint64_t token, std::string& file, std::uintptr_t& offset);

}  // namespace roam::detail
