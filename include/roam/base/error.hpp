// roam — the one root of every exception roam throws, and its error codes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace roam {

/// What kind of failure an exception reports. Every exception roam throws derives from
/// roam::error and carries one of these.
enum class errc : std::uint8_t {
  config = 1,            ///< a flag, environment variable or option has an invalid value
  usage,                 ///< a roam function was called where it cannot work
  broken_promise,        ///< a promise was destroyed before it was fulfilled
  object,                ///< a message named a mobile object that does not exist, or the wrong type
  remote,                ///< a handler run for roam::call threw
  malformed_message,     ///< a payload or message is truncated or corrupt
  device,                ///< a device operation failed, or a device request cannot be met
  out_of_device_memory,  ///< a device has no room for an allocation
  checkpoint,            ///< a checkpoint cannot be written, or read back
  communication,         ///< a transfer between ranks failed (an MPI call returned an error)
  global_memory,  ///< a global pointer is null, freed, stale or out of bounds, or a heap is full
};

/// The code's name ("config", "usage", ...).
[[nodiscard]] const char* to_string(errc code) noexcept;

/// Base of every exception roam throws. what() is the message in roam's one format
/// ("roam: <message>"); message() is the message alone, for embedding in another one.
/// Threading: immutable after construction.
class error : public std::runtime_error {
 public:
  /// An error of kind `code`; `message` says what happened (without the "roam: " prefix).
  error(errc code, std::string_view message);
  /// What kind of failure this is.
  [[nodiscard]] errc code() const noexcept { return code_; }
  /// The message without the "roam: " prefix.
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  errc code_;
  std::string message_;
};

/// A configuration flag or environment variable has an invalid value.
class config_error : public error {
 public:
  /// An error with code errc::config.
  explicit config_error(std::string_view message) : error(errc::config, message) {}
};

/// A roam function was called where it cannot work (outside roam::run, from a thread
/// that belongs to no node, ...).
class usage_error : public error {
 public:
  /// An error with code errc::usage.
  explicit usage_error(std::string_view message) : error(errc::usage, message) {}
};

/// The promise behind a future was destroyed before it was fulfilled.
class broken_promise : public error {
 public:
  /// An error with code errc::broken_promise.
  explicit broken_promise(std::string_view message) : error(errc::broken_promise, message) {}
};

/// A message reached a mobile object that no longer exists (destroyed, or never created),
/// or named it with the wrong type. message() names the object, the handler and the nodes.
class object_error : public error {
 public:
  /// An error with code errc::object.
  explicit object_error(std::string_view message) : error(errc::object, message) {}
};

/// A payload or message is truncated or malformed (deserialization, wire decoding).
class deserialization_error : public error {
 public:
  /// An error with code errc::malformed_message.
  explicit deserialization_error(std::string_view message)
      : error(errc::malformed_message, message) {}
};

/// A checkpoint could not be written (roam::checkpoint), or one a restart reads is missing,
/// truncated, corrupt or from another program.
class checkpoint_error : public error {
 public:
  /// An error with code errc::checkpoint.
  explicit checkpoint_error(std::string_view message) : error(errc::checkpoint, message) {}
};

/// A handler invoked through roam::call threw; the caller's future rethrows this.
/// message() names the handler, the type of the exception it threw and its message.
class remote_error : public error {
 public:
  /// The handler's exception of type `type` said `original`; `message` is the whole report.
  remote_error(std::string type, std::string original, std::string_view message)
      : error(errc::remote, message), type_(std::move(type)), original_(std::move(original)) {}
  /// Demangled type of the original exception ("std::out_of_range", or "unknown").
  [[nodiscard]] const std::string& exception_type() const noexcept { return type_; }
  /// The original exception's message.
  [[nodiscard]] const std::string& original_message() const noexcept { return original_; }

 private:
  std::string type_;
  std::string original_;
};

/// Thrown by the heterogeneous framework: a backend call failed, a request cannot be met, or
/// (code errc::config) one of its settings is invalid.
class device_error : public error {
 public:
  /// A device failure (code errc::device).
  explicit device_error(std::string_view message) : error(errc::device, message) {}
  /// A failure of the framework of another kind (errc::config, errc::out_of_device_memory).
  device_error(errc code, std::string_view message) : error(code, message) {}
};

/// A device has no room for an allocation (its memory or its configured limit).
class out_of_device_memory : public device_error {
 public:
  /// An error with code errc::out_of_device_memory.
  explicit out_of_device_memory(std::string_view message)
      : device_error(errc::out_of_device_memory, message) {}
};

/// A global-memory operation named memory that is not there: a null, freed or stale
/// roam::global_ptr, a range beyond its allocation, or an allocation that does not fit in
/// its node's heap. message() names the pointer, the node and the operation.
class memory_error : public error {
 public:
  /// An error with code errc::global_memory.
  explicit memory_error(std::string_view message) : error(errc::global_memory, message) {}
};

}  // namespace roam
