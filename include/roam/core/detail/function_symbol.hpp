// roam — naming free-function handlers in error messages by their symbol.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace roam::detail {

/// The demangled name of the function a token names, e.g. "square(int)", read from the
/// symbol table of its module's file (static functions included), or "" when the file has
/// no symbol for it (a stripped binary). Reads the file on the first call for a token and
/// remembers the answer: meant for error messages, not for hot paths. Thread-safe.
std::string function_symbol(std::uint64_t token);

/// How an error names a handler: a function-pointer handler (function token != 0) by its
/// symbol, so that two `int(int)` handlers are told apart; otherwise by its registered
/// name. `registered` is the handler's registered (type) name.
std::string handler_display_name(std::string_view registered, std::uint64_t function);

/// How an error names the handler with id `id` carried by a message whose function token
/// is `function`: by symbol when the handler is a free function (handler_entry::
/// names_function), else by its registered name; "#id" when no handler has that id.
std::string handler_display_name(std::uint32_t id, std::uint64_t function);

}  // namespace roam::detail
