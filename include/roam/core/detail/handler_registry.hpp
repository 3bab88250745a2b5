// roam — the table that maps handler ids to code, identical on every rank of one binary.
//
// Handlers register themselves during static initialization (one entry per handler type,
// see am/detail/handler_traits.hpp); no manual registration. At the first roam::run the
// table is sorted by name (stable, so registration order breaks ties) and ids are
// assigned; transports then compare the table across ranks before any traffic.
#pragma once

#include <roam/transport/message.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace roam::detail {

class node_runtime;

/// Runs the handler of a message on `node`. Throws deserialization_error for a bad
/// payload; any other exception escaping it is a handler failure. The handler may take
/// ownership of the message block (zero-copy bulk arguments), leaving `m` empty.
using invoke_function = void (*)(node_runtime& node, message_ptr& m);

/// Runs when a message arrives on its node, on the thread that delivers it, before it is
/// queued: returns true if it took the message (set it aside, forwarded it, or queued it
/// itself). Lets a layer account for messages the moment they arrive (mobile objects: their
/// load) even while every worker is busy. Throws deserialization_error for bad payloads.
using admit_function = bool (*)(node_runtime& node, message_ptr& m);

/// Runs the handler of a channel once per record of a combined group (see
/// core/detail/aggregation.hpp): `count` records in `bytes` bytes at `records`, for the
/// function `function` names (pointer handlers; 0 otherwise), sent by node `source`.
/// Throws deserialization_error when the records do not match the handler's parameters.
using batch_function = void (*)(node_runtime& node, node_id source, const std::byte* records,
                                std::size_t bytes, std::uint32_t count, std::uint64_t function);

struct handler_entry {
  std::string_view name;  ///< stable, human-readable (shown in errors)
  /// Runs one message; nullptr for handlers that only run through `batch` (channels).
  invoke_function invoke;
  std::uint32_t id = ~0u;          ///< assigned by handler_registry::seal()
  admit_function admit = nullptr;  ///< optional, see admit_function
  batch_function batch = nullptr;  ///< channel handlers: runs the records of a group
  /// The handler is a free function travelling as a function token (message_header::
  /// function): errors name it by that function's symbol (handler_display_name).
  bool names_function = false;
};

class handler_registry {
 public:
  /// Adds an entry; called from static initializers. Returns true (for `static const bool`).
  static bool add(handler_entry* entry) noexcept;
  /// Sorts and numbers the entries; idempotent. Registration after sealing is fatal.
  static void seal();
  /// Entry for an id, or nullptr if no handler has this id.
  static const handler_entry* find(std::uint32_t id) noexcept;
  static std::uint32_t size() noexcept;
  /// One line per handler: "<id> <name>", the text compared across ranks.
  static std::string fingerprint();
};

/// Id of a registered entry, checking that the table has been sealed.
std::uint32_t id_of(const handler_entry& e);

}  // namespace roam::detail
