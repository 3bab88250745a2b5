#include <roam/base/detail/enum_names.hpp>
#include <roam/base/detail/message_text.hpp>
#include <roam/base/error.hpp>

namespace roam {
namespace detail {
namespace {

constexpr std::string_view prefix = "roam: ";

// A message already formatted (a roam::error's what() passed on) loses its prefix once.
std::string_view without_prefix(std::string_view message) noexcept {
  if (message.rfind(prefix, 0) == 0) message.remove_prefix(prefix.size());
  return message;
}

}  // namespace

std::string error_text(std::string_view message) {
  std::string text(prefix);
  text += without_prefix(message);
  return text;
}

std::string fatal_text(long node, std::string_view message) {
  std::string text = "roam: fatal error";
  if (node >= 0) text += " on node " + std::to_string(node);
  text += ": ";
  text += without_prefix(message);
  return text;
}

std::string exception_text(const std::exception& e) {
  if (const auto* r = dynamic_cast<const error*>(&e)) return r->message();
  return e.what();
}

}  // namespace detail

const char* to_string(errc code) noexcept {
  static constexpr const char* names[] = {"?",
                                          "config",
                                          "usage",
                                          "broken_promise",
                                          "object",
                                          "remote",
                                          "malformed_message",
                                          "device",
                                          "out_of_device_memory",
                                          "checkpoint",
                                          "communication",
                                          "global_memory"};
  return detail::enum_name(code, names);
}

error::error(errc code, std::string_view message)
    : std::runtime_error(detail::error_text(message)),
      code_(code),
      message_(detail::without_prefix(message)) {}

}  // namespace roam
