// The command line of a benchmark: each program declares the options it takes, and anything
// else is an error. A misspelt option used to be ignored, so the benchmark ran, and reported,
// with a default the user meant to change (issue 25).
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace roam_bench {

namespace options_detail {
template <class T>
inline constexpr bool is_list = false;
template <class T>
inline constexpr bool is_list<std::vector<T>> = true;
}  // namespace options_detail

class options {
 public:
  /// `bench` as in `./run bench NAME`; messages name the program bench_NAME.
  explicit options(const std::string& bench) : program_("bench_" + bench) {}

  /// A switch: `target` becomes true when the option is present.
  options& flag(const char* name, bool& target, const char* meaning) {
    entries_.push_back({name, meaning, "", "", "", true, [&target](const std::string&) {
                          target = true;
                          return true;
                        }});
    return *this;
  }

  /// An option with a value, "--name V" or "--name=V": a whole or real number, a text, or a
  /// comma-separated list of them, after T. `target` holds the default on entry (--help
  /// shows it).
  template <class T>
  options& add(const char* name, T& target, const char* meaning) {
    const value_form form = form_of<T>();
    entries_.push_back({name, meaning, form.shape, shown(target), form.expects, false,
                        [&target](const std::string& text) { return read_value(text, target); }});
    return *this;
  }

  /// A text option that must be one of `choices`.
  options& choice(const char* name, std::string& target, std::initializer_list<const char*> choices,
                  const char* meaning) {
    std::string names;
    for (const char* c : choices) names += (names.empty() ? "" : "|") + std::string(c);
    const std::vector<std::string> allowed(choices.begin(), choices.end());
    entries_.push_back({name, meaning, names, target, "one of these words", false,
                        [&target, allowed](const std::string& text) {
                          if (std::find(allowed.begin(), allowed.end(), text) == allowed.end())
                            return false;
                          target = text;
                          return true;
                        }});
    return *this;
  }

  /// Reads the command line, or exits: with status 0 after printing the options for --help,
  /// with status 2 and a message on stderr for an option it does not know or a missing or
  /// malformed value. Call it before MPI_Init: a process that exits before it leaves nothing
  /// for the launcher to clean up.
  void parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        if (first_rank()) std::fputs(help().c_str(), stdout);
        std::exit(0);
      }
    }
    std::vector<bool> seen(entries_.size(), false);
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const std::size_t equals = arg.find('=');
      const std::string name = arg.substr(0, equals);
      // roam's flags are the runtime's to check, where the benchmark hands argv to it; as no
      // benchmark takes a bare word, one after a --roam- flag without '=' is that flag's value.
      if (name.rfind("--roam-", 0) == 0) {
        if (equals == std::string::npos && i + 1 < argc && argv[i + 1][0] != '-') ++i;
        continue;
      }
      const auto e = std::find_if(entries_.begin(), entries_.end(),
                                  [&name](const entry& x) { return x.name == name; });
      if (e == entries_.end()) fail({"unknown option '", arg, "'"});
      std::string value;
      if (e->is_switch) {
        if (equals != std::string::npos) fail({"option '", name, "' takes no value"});
      } else if (equals != std::string::npos) {
        value = arg.substr(equals + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        fail({"option '", name, "' needs a value: ", e->shape, ", ", e->expects});
      }
      // The first occurrence wins, as before: ./run puts its own --out ahead of the user's
      // arguments and plots the traces from there.
      const auto k = static_cast<std::size_t>(e - entries_.begin());
      if (seen[k]) continue;
      seen[k] = true;
      if (!e->set(value))
        fail({"invalid value '", value, "' for option '", name, "': ", e->shape, ", ", e->expects});
    }
  }

  /// What --help prints: one line per option, its value's shape, meaning and default.
  std::string help() const {
    constexpr std::size_t column = 30;
    std::string text = "usage: " + program_ + " [options]\n";
    for (const auto& e : entries_) {
      std::string left = "  " + e.name + (e.shape.empty() ? "" : " " + e.shape);
      left += left.size() < column ? std::string(column - left.size(), ' ')
                                   : "\n" + std::string(column, ' ');
      text += left + e.meaning + (e.fallback.empty() ? "" : " (default " + e.fallback + ")") + "\n";
    }
    return text + "  --help                      print this list\n" +
           "Flags starting with --roam- are not checked here: they are the roam runtime's\n"
           "(--roam-help lists them).\n";
  }

 private:
  struct entry {
    std::string name, meaning;
    std::string shape, fallback;  // for --help: "N", "TEXT,...", "a|b"; the default
    std::string expects;          // the shape in words, for messages
    bool is_switch;
    std::function<bool(const std::string&)> set;  // false: the value is malformed
  };

  [[noreturn]] void fail(std::initializer_list<std::string_view> message) const {
    if (first_rank()) {
      std::string what;
      for (const auto part : message) what += part;
      std::string known;
      for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.name;
      std::fprintf(stderr, "%s: %s; known options: %s (--help says what they mean)\n",
                   program_.c_str(), what.c_str(), known.c_str());
    }
    std::exit(2);
  }

  // Under mpiexec every rank parses the same command line: one of them speaks.
  static bool first_rank() {
    for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
      if (const char* rank = std::getenv(variable)) return std::string(rank) == "0";
    return true;
  }

  // What a value of type T looks like, for --help ("N", "TEXT,...") and in words for messages.
  struct value_form {
    std::string shape, expects;
  };

  template <class T>
  static value_form form_of() {
    if constexpr (options_detail::is_list<T>) {
      const value_form item = form_of<typename T::value_type>();
      return {item.shape + ",...", "a comma-separated list, each " + item.expects};
    } else if constexpr (std::is_same_v<T, std::string>) {
      return {"TEXT", "any text"};
    } else if constexpr (std::is_unsigned_v<T>) {
      return {"N", "a whole number, 0 or more"};
    } else if constexpr (std::is_integral_v<T>) {
      return {"N", "a whole number"};
    } else {
      return {"X", "a number"};
    }
  }

  template <class T>
  static std::string shown(const T& value) {
    if constexpr (options_detail::is_list<T>) {
      std::string text;
      for (const auto& v : value) text += (text.empty() ? "" : ",") + shown(v);
      return text;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return value;
    } else {
      std::ostringstream os;
      os << value;
      return os.str();
    }
  }

  // The whole text must be the value: "20ms" or "1e6" for a count is a mistake to report,
  // not a number to truncate.
  template <class T>
  static bool read_value(const std::string& text, T& target) {
    if constexpr (options_detail::is_list<T>) {
      T values;
      for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma - start);
        typename T::value_type v{};
        if (item.empty() || !read_value(item, v)) return false;
        values.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      target = std::move(values);
      return true;
    } else if constexpr (std::is_same_v<T, std::string>) {
      target = text;
      return true;
    } else if constexpr (std::is_integral_v<T>) {
      T v{};
      const char* end = text.data() + text.size();
      const auto [stop, error] = std::from_chars(text.data(), end, v);
      if (text.empty() || error != std::errc() || stop != end) return false;
      target = v;
      return true;
    } else {
      if (text.empty()) return false;
      char* stop = nullptr;
      errno = 0;
      const double v = std::strtod(text.c_str(), &stop);
      if (errno != 0 || *stop != '\0') return false;
      target = static_cast<T>(v);
      return true;
    }
  }

  std::string program_;
  std::vector<entry> entries_;
};

/// The command line of a benchmark that reports: --json first, then what the benchmark adds.
/// After parse(), `json` says whether the results end with one JSON line.
class options_with_json : public options {
 public:
  explicit options_with_json(const std::string& bench) : options(bench) {
    flag("--json", json, "end with the results as one JSON line");
  }
  // The --json entry refers to this object's `json`: a copy would set the original's.
  options_with_json(const options_with_json&) = delete;
  options_with_json& operator=(const options_with_json&) = delete;

  bool json = false;
};

}  // namespace roam_bench
