// Benchmark output: a readable table on stdout and, with --json, one JSON object as the
// last stdout line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace roam_bench {

inline bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) return true;
  return false;
}

/// Text of "--name V" or "--name=V", or `fallback`.
inline std::string text_option(int argc, char** argv, const char* name,
                               const std::string& fallback) {
  const std::size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) != 0) continue;
    if (argv[i][n] == '=') return argv[i] + n + 1;
    if (argv[i][n] == '\0' && i + 1 < argc) return argv[i + 1];
  }
  return fallback;
}

/// Value of "--name V" or "--name=V", or `fallback`.
inline long option(int argc, char** argv, const char* name, long fallback) {
  const std::string v = text_option(argc, argv, name, "");
  return v.empty() ? fallback : std::atol(v.c_str());
}

/// The same for real numbers.
inline double real_option(int argc, char** argv, const char* name, double fallback) {
  const std::string v = text_option(argc, argv, name, "");
  return v.empty() ? fallback : std::atof(v.c_str());
}

/// The comma-separated numbers of "--name a,b,c", or of `fallback`.
template <class T = long>
std::vector<T> list_option(int argc, char** argv, const char* name, const std::string& fallback) {
  std::vector<T> values;
  std::stringstream in(text_option(argc, argv, name, fallback));
  for (std::string item; std::getline(in, item, ',');)
    values.push_back(static_cast<T>(std::stoll(item)));
  return values;
}

inline std::string number(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

template <class T>
std::string array(const std::vector<T>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + number(static_cast<double>(values[i]));
  return s + "]";
}

}  // namespace roam_bench
