#include <roam/base/settings.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>

namespace roam {
namespace detail {
namespace {

// A deque: groups keep their address as more register.
std::deque<settings_group>& registry() {
  static std::deque<settings_group> groups;
  return groups;
}

struct found_setting {
  const settings_group* group = nullptr;
  const settings_group::entry* entry = nullptr;
};

found_setting find_flag(std::string_view flag) {
  for (const auto& g : registry())
    for (const auto& e : g.entries)
      if (flag == e.flag) return {&g, &e};
  return {};
}

}  // namespace

const settings_group& add_settings_group(settings_group group) {
  for (const auto& e : group.entries)
    if (find_flag(e.flag).entry)  // two layers claiming one flag is a bug in roam
      throw usage_error(std::string("the setting --roam-") + e.flag + " is registered twice");
  return registry().emplace_back(std::move(group));
}

std::vector<const settings_group*> settings_groups() {
  std::vector<const settings_group*> all;
  all.reserve(registry().size());
  for (const auto& g : registry()) all.push_back(&g);
  std::stable_sort(all.begin(), all.end(), [](const settings_group* a, const settings_group* b) {
    return a->order < b->order;
  });
  return all;
}

std::atomic<const layer_settings*> job{nullptr};

const layer_settings* job_settings() noexcept { return job.load(std::memory_order_acquire); }

void set_job_settings(const layer_settings* settings) noexcept {
  job.store(settings, std::memory_order_release);
}

void apply_environment(settings_target target, void* context) {
  for (const settings_group* g : settings_groups()) {
    void* group = target(context, *g);
    if (!group) continue;
    for (const auto& e : g->entries)
      if (const char* v = std::getenv(e.env))
        e.apply(group, v, std::string("environment variable ") + e.env);
  }
}

void apply_setting(std::string_view flag, std::string_view value, settings_target target,
                   void* context) {
  const found_setting match = find_flag(flag);
  if (!match.entry)
    throw config_error("unknown setting '" + std::string(flag) +
                       "'; run with --roam-help for the list");
  match.entry->apply(target(context, *match.group), value, "--roam-" + std::string(flag));
}

void apply_arguments(int& argc, char** argv, settings_target target, void* context) {
  int out = argc > 0 ? 1 : 0;
  for (int i = out; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.rfind("--roam-", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    std::string_view body = arg.substr(7);
    std::string_view name = body.substr(0, body.find('='));
    const found_setting match = find_flag(name);
    if (!match.entry)
      throw config_error("unknown flag '" + std::string(arg) +
                         "'; run with --roam-help for the list");
    std::string origin = "--roam-" + std::string(name);
    std::string value;
    if (body.size() > name.size()) {
      value = std::string(body.substr(name.size() + 1));
    } else if (match.entry->is_switch) {
      // A switch takes the next argument only if it is a boolean word, so that
      // "--roam-pin input.txt" leaves input.txt to the application.
      static constexpr std::string_view words[] = {"on",   "off",   "1",   "0",
                                                   "true", "false", "yes", "no"};
      bool next_is_word = false;
      if (i + 1 < argc)
        for (auto w : words) next_is_word = next_is_word || w == argv[i + 1];
      value = next_is_word ? argv[++i] : "on";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw config_error("flag " + origin + " needs a value (" + match.entry->values + ")");
    }
    match.entry->apply(target(context, *match.group), value, origin);
  }
  if (argc > 0) argv[out] = nullptr;
  argc = out;
}

std::string settings_help() {
  std::ostringstream os;
  os << "roam runtime settings (flag overrides environment variable):\n";
  for (const settings_group* g : settings_groups()) {
    os << g->layer << ":\n";
    for (const auto& e : g->entries) {
      std::string flag = std::string("--roam-") + e.flag;
      os << "  " << flag << std::string(flag.size() < 20 ? 20 - flag.size() : 1, ' ') << e.env
         << std::string(std::strlen(e.env) < 20 ? 20 - std::strlen(e.env) : 1, ' ') << e.values
         << "\n      " << e.meaning << "\n";
    }
  }
  return os.str();
}

}  // namespace detail

layer_settings::layer_settings(const layer_settings& other) { *this = other; }

layer_settings& layer_settings::operator=(const layer_settings& other) {
  if (this == &other) return *this;
  std::map<const detail::settings_group*, std::shared_ptr<void>> copied;
  for (const auto& [group, value] : other.groups_) copied.emplace(group, group->copy(value.get()));
  groups_ = std::move(copied);
  return *this;
}

void* layer_settings::get(const detail::settings_group& group) {
  auto& slot = groups_[&group];
  if (!slot) slot = group.make();
  return slot.get();
}

const void* layer_settings::find(const detail::settings_group& group) const noexcept {
  auto it = groups_.find(&group);
  return it == groups_.end() ? nullptr : it->second.get();
}

namespace setting_values {
namespace {

// Every parser reports a value that does not fit in the same words.
[[noreturn]] void reject(std::string_view text, const std::string& origin,
                         const std::string& expected) {
  throw config_error("invalid value '" + std::string(text) + "' for " + origin + ": expected " +
                     expected);
}

// `text` as a whole or real Number in [min, max]; `kind` names it for the message.
template <class Number>
Number number_in_range(std::string_view text, const std::string& origin, Number min, Number max,
                       const char* kind) {
  Number v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !(v >= min && v <= max))
    reject(text, origin,
           std::string(kind) + " in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return v;
}

}  // namespace

std::uint64_t whole(std::string_view text, const std::string& origin, std::uint64_t min,
                    std::uint64_t max) {
  return number_in_range(text, origin, min, max, "an integer");
}

std::uint32_t count(std::string_view text, const std::string& origin, std::uint32_t min,
                    std::uint32_t max) {
  return static_cast<std::uint32_t>(whole(text, origin, min, max));
}

double real(std::string_view text, const std::string& origin, double min, double max) {
  return number_in_range(text, origin, min, max, "a number");
}

std::uint64_t bytes(std::string_view text, const std::string& origin, std::uint64_t min,
                    std::uint64_t max) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    shift = 10;
  else if (suffix == "M" || suffix == "MiB")
    shift = 20;
  else if (suffix == "G" || suffix == "GiB")
    shift = 30;
  else if (!suffix.empty())
    ec = std::errc::invalid_argument;
  const bool fits = ec == std::errc{} && end != text.data() && (v << shift >> shift) == v;
  v <<= shift;
  if (!fits || v < min || v > max)
    reject(text, origin,
           "a size in [" + std::to_string(min >> 10) + "K, " + std::to_string(max >> 20) +
               "M] (bytes, or with a K, M or G suffix)");
  return v;
}

bool on_off(std::string_view text, const std::string& origin) {
  if (text == "1" || text == "on" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "off" || text == "false" || text == "no") return false;
  reject(text, origin, "on|off (or 1|0, true|false, yes|no)");
}

std::size_t choice(std::string_view text, const std::string& origin,
                   const std::vector<std::string_view>& choices) {
  for (std::size_t i = 0; i < choices.size(); ++i)
    if (text == choices[i]) return i;
  std::string expected;
  for (std::size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(choices[i]);
  reject(text, origin, expected);
}

}  // namespace setting_values
}  // namespace roam
