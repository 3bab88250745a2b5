// roam — the one format of roam's messages to users: exceptions and fatal errors.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace roam::detail {

/// "roam: <message>": what() of every roam::error. A message that already starts with
/// "roam: " is kept as it is.
[[nodiscard]] std::string error_text(std::string_view message);

/// An exception's message for embedding in another message: a roam::error's message()
/// (without the prefix), any other exception's what().
[[nodiscard]] std::string exception_text(const std::exception& e);

/// "roam: fatal error on node N: <message>" (without "on node N" when `node` is negative):
/// the line fatal() prints before it ends the job.
[[nodiscard]] std::string fatal_text(long node, std::string_view message);

}  // namespace roam::detail
