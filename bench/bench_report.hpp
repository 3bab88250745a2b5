// Benchmark output: a readable table on stdout and, with --json, one JSON object as the
// last stdout line. (The command line is bench_options.hpp's.)
#pragma once

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace roam_bench {

inline std::string number(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

/// The median of a run's measurements (the upper one of an even count), as the tables
/// report them.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

template <class T>
std::string array(const std::vector<T>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + number(static_cast<double>(values[i]));
  return s + "]";
}

}  // namespace roam_bench
