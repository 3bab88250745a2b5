#include <roam/base/detail/enum_names.hpp>
#include <roam/base/detail/message_text.hpp>
#include <roam/base/error.hpp>

namespace roam {
namespace detail {

std::string error_text(std::string_view message) {
  if (message.rfind("roam: ", 0) == 0) return std::string(message);
  std::string text = "roam: ";
  text += message;
  return text;
}

std::string fatal_text(long node, std::string_view message) {
  std::string text = "roam: fatal error";
  if (node >= 0) text += " on node " + std::to_string(node);
  text += ": ";
  // A roam::error's text embedded whole keeps its meaning without a second prefix.
  if (message.rfind("roam: ", 0) == 0) message.remove_prefix(6);
  text += message;
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
                                          "out_of_device_memory"};
  return detail::enum_name(code, names);
}

error::error(errc code, std::string_view message)
    : std::runtime_error(detail::error_text(message)),
      code_(code),
      message_(message.rfind("roam: ", 0) == 0 ? message.substr(6) : message) {}

}  // namespace roam
