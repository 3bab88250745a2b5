// roam — the one format of roam's messages to users: exceptions and fatal errors.
#pragma once

#include <string>
#include <string_view>

namespace roam::detail {

/// "roam: <message>": what() of every roam::error. A message that already starts with
/// "roam:" or names a roam function ("roam::spawn: ...") is kept as it is.
[[nodiscard]] std::string error_text(std::string_view message);

/// "roam: fatal error on node N: <message>" (without "on node N" when `node` is negative):
/// the line fatal() prints before it ends the job.
[[nodiscard]] std::string fatal_text(long node, std::string_view message);

}  // namespace roam::detail
