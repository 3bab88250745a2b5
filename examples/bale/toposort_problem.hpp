// bale toposort's input, its per-node state and its serial reference.
//
// The input is a "morally upper-triangular" sparse matrix M: an upper-triangular matrix T
// with ones on the diagonal whose rows and columns were permuted at random. toposort finds
// a row and a column permutation that make M upper triangular again. It repeatedly takes
// a row with a single nonzero (its column is the pivot), gives the row and that column the
// last free position, and removes the column from every other row. Rather than searching
// rows, each row keeps its count of nonzeros left and the sum of their column indices:
// when the count reaches 1, the sum is the column left (bale's trick).
//
// Parallel versions work in levels: the rows that have one nonzero at the start of a level
// are pivoted together, and the rows they leave with one nonzero form the next level. A
// row's level depends only on the matrix, and within a level positions go to the nodes in
// node order, each node's rows in increasing order. So the result is the same for roam,
// for MPI and for the serial reference, and they can be compared exactly.
#pragma once

#include "random_stream.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

namespace bale {

struct toposort_setup {
  std::uint64_t rows_per_node = 1 << 14;
  /// The average number of nonzeros per row besides the diagonal one: each entry above
  /// T's diagonal is nonzero with probability 2 * off_diagonal / rows.
  double off_diagonal = 5;
  std::uint64_t seed = 3;
};

/// Compressed sparse rows: the column indices of row r are index[start[r] .. start[r+1]).
struct sparse_lines {
  std::vector<std::uint64_t> start;
  std::vector<std::uint32_t> index;
  std::span<const std::uint32_t> line(std::uint64_t r) const noexcept {
    return {index.data() + start[r], index.data() + start[r + 1]};
  }
};

/// The whole matrix M, by rows and by columns (its transpose). Every node builds it the
/// same way from the setup and keeps its share (toposort_share).
struct toposort_problem {
  std::uint32_t rows = 0;
  sparse_lines by_row, by_column;
  std::uint64_t nonzeros() const noexcept { return by_row.index.size(); }
};

namespace detail {

/// A random permutation of 0..n-1 (Fisher-Yates), the same on every node.
inline std::vector<std::uint32_t> random_permutation(std::uint32_t n, random_stream random) {
  std::vector<std::uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  for (std::uint32_t i = n; i > 1; --i) {
    const auto j = static_cast<std::uint32_t>(((random.next() >> 32) * i) >> 32);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

/// Fills `lines` (start and index) from a callback that lists every entry as a (line,
/// index) pair; it is called twice, to count the entries per line and then to place them.
template <class ForEach>
void fill_lines(sparse_lines& lines, std::uint32_t n, ForEach for_each_entry) {
  lines.start.assign(std::uint64_t{n} + 1, 0);
  for_each_entry([&](std::uint32_t line, std::uint32_t) { ++lines.start[line + 1]; });
  std::partial_sum(lines.start.begin(), lines.start.end(), lines.start.begin());
  lines.index.resize(lines.start.back());
  std::vector<std::uint64_t> fill(lines.start.begin(), lines.start.end() - 1);
  for_each_entry(
      [&](std::uint32_t line, std::uint32_t index) { lines.index[fill[line]++] = index; });
}

}  // namespace detail

/// Builds M for `nodes` nodes: rows_per_node * nodes rows (at most 2^32 - 1).
inline toposort_problem toposort_matrix(const toposort_setup& s, std::uint32_t nodes) {
  if (nodes == 0 || s.rows_per_node == 0 || s.rows_per_node > ((1ull << 32) - 1) / nodes)
    throw std::invalid_argument("bale: toposort needs 1 to 2^32 - 1 rows in all");
  const std::uint64_t n64 = s.rows_per_node * nodes;
  if (!(s.off_diagonal >= 0)) throw std::invalid_argument("bale: off_diagonal must be >= 0");
  const auto n = static_cast<std::uint32_t>(n64);
  const double p = std::min(1.0, 2 * s.off_diagonal / n);

  // T by rows: the diagonal, then each later column with probability p (geometric skips).
  sparse_lines upper;
  upper.start.assign(n64 + 1, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    upper.index.push_back(i);
    random_stream random(s.seed, i);
    for (double j = i; p > 0;) {
      const double u = (static_cast<double>(random.next() >> 11) + 1) * 0x1p-53;  // (0, 1]
      j += p >= 1 ? 1 : 1 + std::floor(std::log(u) / std::log1p(-p));
      if (j >= n) break;
      upper.index.push_back(static_cast<std::uint32_t>(j));
    }
    upper.start[i + 1] = upper.index.size();
  }

  const auto row_of = detail::random_permutation(n, random_stream(s.seed ^ 0x5a5a, nodes));
  const auto column_of = detail::random_permutation(n, random_stream(s.seed ^ 0xa5a5, nodes));
  toposort_problem m;
  m.rows = n;
  auto each_entry = [&](auto emit) {
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t j : upper.line(i)) emit(row_of[i], column_of[j]);
  };
  detail::fill_lines(m.by_row, n, each_entry);
  detail::fill_lines(m.by_column, n, [&](auto emit) {
    each_entry([&](std::uint32_t r, std::uint32_t c) { emit(c, r); });
  });
  return m;
}

/// One node's share: rows r with r % nodes == node and columns likewise, each kept at
/// index r / nodes. The same state serves roam's version and the MPI one.
struct toposort_share {
  std::uint32_t node = 0, nodes = 1, rows = 0;
  std::vector<std::uint32_t> row_count;  ///< nonzeros left in each of my rows
  std::vector<std::uint64_t> row_sum;    ///< the sum of their column indices
  sparse_lines column_rows;              ///< the rows with a nonzero in each of my columns
  std::vector<std::uint32_t> row_position, column_position;  ///< the result
  std::vector<std::uint32_t> level;  ///< rows to pivot in this level, in increasing order
  std::vector<std::uint32_t> next;   ///< rows left with one nonzero, for the next level

  std::uint32_t owner(std::uint32_t line) const noexcept { return line % nodes; }
  std::uint32_t local(std::uint32_t line) const noexcept { return line / nodes; }

  /// Removes `column` from my row `row`; a row left with one nonzero joins the next level.
  void remove(std::uint32_t row, std::uint32_t column) noexcept {
    const std::uint32_t r = local(row);
    row_sum[r] -= column;
    if (--row_count[r] == 1) next.push_back(row);
  }
  /// The column left in my row `row` once it has one nonzero.
  std::uint32_t pivot_column(std::uint32_t row) const noexcept {
    return static_cast<std::uint32_t>(row_sum[local(row)]);
  }

  /// A pivot: row `row` and its last column `column` both take `position`.
  struct pivot {
    std::uint32_t column, row, position;
  };
  /// Gives the i-th row of the level its position (`first` - i) and returns its pivot,
  /// for the owner of the pivot's column.
  pivot place_row(std::size_t i, std::uint32_t first) noexcept {
    const std::uint32_t row = level[i];
    const auto position = static_cast<std::uint32_t>(first - i);
    row_position[local(row)] = position;
    return {pivot_column(row), row, position};
  }
  /// Records the position of my column `p.column` and calls `remove(other_row)` for every
  /// other row with a nonzero in it (the removals for their owners).
  template <class Remove>
  void place_column(const pivot& p, Remove remove) {
    column_position[local(p.column)] = p.position;
    for (std::uint32_t other : column_rows.line(local(p.column)))
      if (other != p.row) remove(other);
  }
  /// Starts a level: its rows are those found in the last one. Returns how many.
  std::uint32_t begin_level() {
    std::sort(next.begin(), next.end());
    level.swap(next);
    next.clear();
    return static_cast<std::uint32_t>(level.size());
  }
};

inline toposort_share toposort_share_of(const toposort_problem& m, std::uint32_t node,
                                        std::uint32_t nodes) {
  toposort_share s;
  s.node = node;
  s.nodes = nodes;
  s.rows = m.rows;
  const std::uint32_t mine = m.rows / nodes + (node < m.rows % nodes ? 1 : 0);
  s.row_count.resize(mine);
  s.row_sum.resize(mine);
  s.row_position.assign(mine, 0);
  s.column_position.assign(mine, 0);
  s.column_rows.start.assign(std::uint64_t{mine} + 1, 0);
  for (std::uint32_t k = 0; k < mine; ++k) {
    const std::uint32_t line = k * nodes + node;
    const auto row = m.by_row.line(line);
    s.row_count[k] = static_cast<std::uint32_t>(row.size());
    s.row_sum[k] = std::accumulate(row.begin(), row.end(), std::uint64_t{0});
    if (row.size() == 1) s.next.push_back(line);
    const auto column = m.by_column.line(line);
    s.column_rows.index.insert(s.column_rows.index.end(), column.begin(), column.end());
    s.column_rows.start[k + 1] = s.column_rows.index.size();
  }
  return s;
}

/// The first position of a level's rows on node `node`: positions are given from the last
/// down, `placed` of them before this level, and the nodes before `node` take theirs first.
inline std::uint32_t toposort_first_position(std::uint32_t rows, std::uint32_t placed,
                                             std::span<const std::uint32_t> level_sizes,
                                             std::uint32_t node) {
  return rows - 1 - placed -
         std::accumulate(level_sizes.begin(), level_sizes.begin() + node, std::uint32_t{0});
}

struct toposort_result {
  std::vector<std::uint32_t> row_position, column_position;
};

/// The serial reference for `nodes` nodes: one queue per level, sorted by (owner, row).
inline toposort_result toposort_serial(const toposort_problem& m, std::uint32_t nodes) {
  const std::uint32_t n = m.rows;
  std::vector<std::uint32_t> count(n);
  std::vector<std::uint64_t> sum(n);
  std::vector<std::uint32_t> level, next;
  for (std::uint32_t r = 0; r < n; ++r) {
    const auto row = m.by_row.line(r);
    count[r] = static_cast<std::uint32_t>(row.size());
    sum[r] = std::accumulate(row.begin(), row.end(), std::uint64_t{0});
    if (count[r] == 1) next.push_back(r);
  }
  toposort_result result{std::vector<std::uint32_t>(n), std::vector<std::uint32_t>(n)};
  std::uint32_t position = n;
  while (!next.empty()) {
    level.swap(next);
    next.clear();
    std::sort(level.begin(), level.end(), [nodes](std::uint32_t a, std::uint32_t b) {
      return a % nodes != b % nodes ? a % nodes < b % nodes : a < b;
    });
    for (std::uint32_t r : level) {
      const auto c = static_cast<std::uint32_t>(sum[r]);
      result.row_position[r] = result.column_position[c] = --position;
      for (std::uint32_t other : m.by_column.line(c)) {
        if (other == r) continue;
        sum[other] -= c;
        if (--count[other] == 1) next.push_back(other);
      }
    }
  }
  if (position != 0) throw std::invalid_argument("bale: the matrix is not morally triangular");
  return result;
}

/// Whether the permutations make M upper triangular with its nonzeros on the diagonal:
/// each is a permutation, every nonzero (r, c) has row_position[r] <= column_position[c],
/// and every row has a nonzero on the diagonal.
inline bool toposort_is_upper_triangular(const toposort_problem& m, const toposort_result& p) {
  const std::uint32_t n = m.rows;
  std::vector<bool> row_seen(n), column_seen(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (p.row_position[i] >= n || row_seen[p.row_position[i]]) return false;
    if (p.column_position[i] >= n || column_seen[p.column_position[i]]) return false;
    row_seen[p.row_position[i]] = column_seen[p.column_position[i]] = true;
  }
  for (std::uint32_t r = 0; r < n; ++r) {
    bool diagonal = false;
    for (std::uint32_t c : m.by_row.line(r)) {
      if (p.row_position[r] > p.column_position[c]) return false;
      diagonal = diagonal || p.row_position[r] == p.column_position[c];
    }
    if (!diagonal) return false;
  }
  return true;
}

/// Whether node `s.node`'s share of the result equals the corresponding part of `expected`.
inline bool toposort_share_equals(const toposort_share& s, const toposort_result& expected) {
  for (std::uint32_t k = 0; k < s.row_position.size(); ++k) {
    const std::uint32_t line = k * s.nodes + s.node;
    if (s.row_position[k] != expected.row_position[line] ||
        s.column_position[k] != expected.column_position[line])
      return false;
  }
  return true;
}

}  // namespace bale
