// roam — exception types thrown to user code.
#pragma once

#include <stdexcept>
#include <string>

namespace roam {

/// Base of every exception roam throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A configuration flag or environment variable has an invalid value.
class config_error : public error {
 public:
  using error::error;
};

/// A roam function was called where it cannot work (outside roam::run, from a thread
/// that belongs to no node, ...).
class usage_error : public error {
 public:
  using error::error;
};

/// The promise behind a future was destroyed before it was fulfilled.
class broken_promise : public error {
 public:
  using error::error;
};

/// A message reached a mobile object that no longer exists (destroyed, or never created),
/// or named it with the wrong type. what() names the object, the handler and the nodes.
class object_error : public error {
 public:
  using error::error;
};

/// A handler invoked through roam::call threw; the caller's future rethrows this.
/// what() names the handler, the node it ran on and the original message.
class remote_error : public error {
 public:
  remote_error(std::string type, std::string message, const std::string& full)
      : error(full), type_(std::move(type)), message_(std::move(message)) {}
  /// Demangled type of the original exception ("std::out_of_range", or "unknown").
  const std::string& exception_type() const noexcept { return type_; }
  /// The original exception's what().
  const std::string& original_message() const noexcept { return message_; }

 private:
  std::string type_;
  std::string message_;
};

}  // namespace roam
