// roam — the settings registry: every layer registers its own settings (flag, environment
// variable, default, validation, help text), and one parser reads them all.
//
// A layer declares a struct of its settings with their defaults and a static `registration()`
// that returns roam::register_settings<Struct>(...) (a function-local static, defined in the
// layer's library, so that linking the layer registers it). Programs read and change a layer's
// settings through roam::config (`cfg.of<roam::lb::policy_settings>()`, `cfg.set("lb", "...")`);
// `--roam-help` lists the settings of every linked layer.
#pragma once

#include <roam/base/error.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace roam {

/// One setting of the layer whose settings struct is `Group`.
template <class Group>
struct setting {
  const char* flag;     ///< "--roam-<flag>" on the command line (without the prefix)
  const char* env;      ///< the environment variable
  const char* values;   ///< the accepted values, for --roam-help ("on|off", "1..64")
  const char* meaning;  ///< one sentence for --roam-help, with the default
  bool is_switch;       ///< may appear without a value ("--roam-pin" means on)
  /// Validates `value` and stores it in the group; throws roam::config_error naming `origin`
  /// (the flag or variable) and the accepted values.
  void (*apply)(Group& group, std::string_view value, const std::string& origin);
};

namespace detail {

/// A registered layer's settings, with the type of its struct erased.
struct settings_group {
  const char* layer;  ///< heading of the layer's block in --roam-help
  int order;          ///< blocks are listed by increasing order (the layers bottom-up)
  struct entry {
    const char* flag;
    const char* env;
    const char* values;
    const char* meaning;
    bool is_switch;
    std::function<void(void* group, std::string_view value, const std::string& origin)> apply;
  };
  std::vector<entry> entries;
  std::shared_ptr<void> (*make)();
  std::shared_ptr<void> (*copy)(const void* group);
};

/// Adds a group to the process's registry (during static initialization, or before the first
/// parse). Returns it, at a stable address.
const settings_group& add_settings_group(settings_group group);

/// Every registered group, by increasing order. Not thread-safe against add_settings_group.
std::vector<const settings_group*> settings_groups();

}  // namespace detail

/// The registration of the settings struct `Group`: call it once, from `Group::registration()`.
template <class Group>
const detail::settings_group& register_settings(const char* layer, int order,
                                                std::vector<setting<Group>> entries) {
  detail::settings_group g;
  g.layer = layer;
  g.order = order;
  g.entries.reserve(entries.size());
  for (const auto& e : entries)
    g.entries.push_back(
        {e.flag, e.env, e.values, e.meaning, e.is_switch,
         [apply = e.apply](void* group, std::string_view value, const std::string& origin) {
           apply(*static_cast<Group*>(group), value, origin);
         }});
  g.make = [] { return std::shared_ptr<void>(std::make_shared<Group>()); };
  g.copy = [](const void* from) {
    return std::shared_ptr<void>(std::make_shared<Group>(*static_cast<const Group*>(from)));
  };
  return detail::add_settings_group(std::move(g));
}

/// The settings of every layer other than the core's own, one instance per layer. Copying
/// copies every instance. Threading: like a std::map (one writer, or any number of readers).
class layer_settings {
 public:
  /// No layer's settings yet: each is made with its defaults when first asked for.
  layer_settings() = default;
  /// Copies are deep: every layer's struct is copied.
  ///@{
  layer_settings(const layer_settings& other);
  layer_settings& operator=(const layer_settings& other);
  layer_settings(layer_settings&&) noexcept = default;
  layer_settings& operator=(layer_settings&&) noexcept = default;
  ///@}
  ~layer_settings() = default;

  /// The instance of `Group` (made with its defaults when first asked for).
  template <class Group>
  Group& get() {
    return *static_cast<Group*>(get(Group::registration()));
  }
  /// Same; the defaults when no instance was made.
  template <class Group>
  const Group& get() const {
    if (const void* g = find(Group::registration())) return *static_cast<const Group*>(g);
    static const Group defaults{};
    return defaults;
  }
  /// The instance of a registered group, made with its defaults when first asked for.
  void* get(const detail::settings_group& group);
  /// The instance of a registered group, or nullptr when none was made.
  const void* find(const detail::settings_group& group) const noexcept;

 private:
  std::map<const detail::settings_group*, std::shared_ptr<void>> groups_;
};

/// Parsers for the `apply` functions of settings: each throws roam::config_error
/// "invalid value '<text>' for <origin>: expected ..." when `text` does not fit.
namespace setting_values {
/// A whole number in [min, max].
std::uint64_t whole(std::string_view text, const std::string& origin, std::uint64_t min,
                    std::uint64_t max);
/// A whole number in [min, max] that fits 32 bits.
std::uint32_t count(std::string_view text, const std::string& origin, std::uint32_t min,
                    std::uint32_t max);
/// A number in [min, max].
double real(std::string_view text, const std::string& origin, double min, double max);
/// A size in bytes with an optional binary suffix: 262144, 256K, 256KiB, 1M, 1MiB, 1G.
std::uint64_t bytes(std::string_view text, const std::string& origin, std::uint64_t min,
                    std::uint64_t max);
/// on|off (or 1|0, true|false, yes|no).
bool on_off(std::string_view text, const std::string& origin);
/// One of `choices` (a non-empty list); returns its index.
std::size_t choice(std::string_view text, const std::string& origin,
                   const std::vector<std::string_view>& choices);
}  // namespace setting_values

namespace detail {

/// Where parse_settings stores a group's values: the instance to apply them to.
using settings_target = void* (*)(void* context, const settings_group& group);

/// The settings of the job roam::run is running in this process, or nullptr (set by the node
/// runtime for the duration of the run): a layer whose objects are made inside the run reads
/// its settings from there.
const layer_settings* job_settings() noexcept;
void set_job_settings(const layer_settings* settings) noexcept;

/// Applies the environment variables of every registered setting to `target` (a group whose
/// target is nullptr is skipped).
void apply_environment(settings_target target, void* context);
/// Applies and removes the "--roam-..." flags of argv (so the application sees only its own
/// arguments); an unknown "--roam-" flag is a config_error naming it.
void apply_arguments(int& argc, char** argv, settings_target target, void* context);
/// Applies one setting by its flag name (without "--roam-"), as if given on the command line.
void apply_setting(std::string_view flag, std::string_view value, settings_target target,
                   void* context);
/// The table --roam-help prints: every registered setting, a block per layer.
std::string settings_help();

}  // namespace detail
}  // namespace roam
