// Sparse triangular solve L x = b as PPL runs it: column stripes per node, rows solved as soon
// as every contribution to them arrived (each row's count of missing contributions is its
// counter), and partial sums sent to other nodes by active messages. No level barriers: a
// row is solved the moment its last contribution lands, on whichever node. Beside it, the
// bulk-synchronous MPI version of the same solve (level scheduling: the rows of one level
// together, then every new x exchanged), and a serial solve to check both.
//
// L is the lower factor of ILU(0) of a 2-D (5-point) or 3-D (7-point) Poisson matrix, or the
// lower triangle of a Matrix Market file.
#pragma once

#include <roam/roam.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sptrsv {

/// A lower-triangular matrix in compressed sparse rows; every row holds its diagonal.
struct lower_matrix {
  std::uint32_t n = 0;
  std::vector<std::uint64_t> row_start;  // n + 1
  std::vector<std::uint32_t> column;
  std::vector<double> value;
};

/// The 5-point (2-D, `side`^2 unknowns) or 7-point (3-D, `side`^3) Poisson matrix's ILU(0)
/// lower factor, with its unit diagonal stored.
inline lower_matrix poisson_ilu0(std::uint32_t side, int dimensions) {
  const std::uint32_t n = dimensions == 2 ? side * side : side * side * side;
  // The whole matrix in CSR (sorted columns), then ILU(0) in place (IKJ).
  std::vector<std::uint64_t> start(n + 1, 0);
  std::vector<std::uint32_t> col;
  std::vector<double> a;
  auto neighbours = [&](std::uint32_t i, auto&& add) {
    const std::uint32_t x = i % side, y = (i / side) % side, z = i / (side * side);
    if (dimensions == 3 && z > 0) add(i - side * side, -1.0);
    if (y > 0) add(i - side, -1.0);
    if (x > 0) add(i - 1, -1.0);
    add(i, dimensions == 2 ? 4.0 : 6.0);
    if (x + 1 < side) add(i + 1, -1.0);
    if (y + 1 < side) add(i + side, -1.0);
    if (dimensions == 3 && z + 1 < side) add(i + side * side, -1.0);
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    neighbours(i, [&](std::uint32_t j, double v) {
      col.push_back(j);
      a.push_back(v);
    });
    start[i + 1] = col.size();
  }
  std::vector<std::uint64_t> diagonal(n);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint64_t k = start[i]; k < start[i + 1]; ++k)
      if (col[k] == i) diagonal[i] = k;
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint64_t kk = start[i]; kk < start[i + 1] && col[kk] < i; ++kk) {
      const std::uint32_t k = col[kk];
      a[kk] /= a[diagonal[k]];
      // a_ij -= a_ik a_kj for the j > k in both row i and row k (ILU(0): no fill).
      std::uint64_t p = kk + 1, q = diagonal[k] + 1;
      while (p < start[i + 1] && q < start[k + 1]) {
        if (col[p] == col[q])
          a[p++] -= a[kk] * a[q++];
        else if (col[p] < col[q])
          ++p;
        else
          ++q;
      }
    }
  lower_matrix l;
  l.n = n;
  l.row_start.push_back(0);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint64_t k = start[i]; k < start[i + 1] && col[k] < i; ++k) {
      l.column.push_back(col[k]);
      l.value.push_back(a[k]);
    }
    l.column.push_back(i);
    l.value.push_back(1.0);  // ILU's L has a unit diagonal
    l.row_start.push_back(l.column.size());
  }
  return l;
}

/// The lower triangle (diagonal included) of a Matrix Market coordinate file (real, integer
/// or pattern; general or symmetric). Throws std::runtime_error naming the file when it is
/// not one, or a diagonal entry is missing or zero.
inline lower_matrix read_matrix_market(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::string line;
  std::getline(in, line);
  if (line.rfind("%%MatrixMarket matrix coordinate", 0) != 0)
    throw std::runtime_error(path + ": not a Matrix Market coordinate matrix");
  const bool pattern = line.find("pattern") != std::string::npos;
  while (std::getline(in, line) && !line.empty() && line[0] == '%') {
  }
  std::istringstream sizes(line);
  std::uint64_t rows = 0, cols = 0, entries = 0;
  if (!(sizes >> rows >> cols >> entries) || rows != cols || rows == 0 || rows > UINT32_MAX)
    throw std::runtime_error(path + ": expected a square matrix's size line, found '" + line + "'");
  std::vector<std::map<std::uint32_t, double>> row(rows);
  for (std::uint64_t e = 0; e < entries; ++e) {
    std::uint64_t i = 0, j = 0;
    double v = 1.0;
    if (!(in >> i >> j) || (!pattern && !(in >> v)) || i == 0 || j == 0 || i > rows || j > cols)
      throw std::runtime_error(path + ": entry " + std::to_string(e + 1) + " is malformed");
    if (i < j) std::swap(i, j);  // the lower triangle (a symmetric file stores one of them)
    row[i - 1][static_cast<std::uint32_t>(j - 1)] += v;
  }
  lower_matrix l;
  l.n = static_cast<std::uint32_t>(rows);
  l.row_start.push_back(0);
  for (std::uint32_t i = 0; i < l.n; ++i) {
    const auto d = row[i].find(i);
    if (d == row[i].end() || d->second == 0)
      throw std::runtime_error(path + ": row " + std::to_string(i + 1) +
                               " has no nonzero diagonal");
    for (const auto& [j, v] : row[i]) {
      l.column.push_back(j);
      l.value.push_back(v);
    }
    l.row_start.push_back(l.column.size());
  }
  return l;
}

/// A right-hand side the same on every node.
inline std::vector<double> right_hand_side(std::uint32_t n) {
  std::vector<double> b(n);
  for (std::uint32_t i = 0; i < n; ++i) b[i] = 1.0 + static_cast<double>(i % 7) / 7.0;
  return b;
}

/// Forward substitution.
inline std::vector<double> solve_serial(const lower_matrix& l, const std::vector<double>& b) {
  std::vector<double> x(l.n);
  for (std::uint32_t i = 0; i < l.n; ++i) {
    double s = b[i], d = 0;
    for (std::uint64_t k = l.row_start[i]; k < l.row_start[i + 1]; ++k)
      if (l.column[k] == i)
        d = l.value[k];
      else
        s -= l.value[k] * x[l.column[k]];
    x[i] = s / d;
  }
  return x;
}

/// The first row of part `p` of `parts` (contiguous stripes).
inline std::uint32_t stripe_start(std::uint32_t n, std::uint32_t p, std::uint32_t parts) {
  return static_cast<std::uint32_t>(std::uint64_t{n} * p / parts);
}

/// max |x - reference| / max |reference|.
inline double relative_error(const std::vector<double>& x, const std::vector<double>& reference) {
  double diff = 0, size = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - reference[i]));
    size = std::max(size, std::abs(reference[i]));
  }
  return size > 0 ? diff / size : diff;
}

// ---- roam: fan-out by active messages ------------------------------------------------------

/// One node's stripe: its columns (to push contributions), its rows' counters and sums.
struct stripe {
  std::mutex lock;  // handlers of the node may run on several workers
  std::uint32_t first = 0, last = 0, n = 0;
  std::vector<std::uint64_t> column_start;  // CSC of the stripe's columns, entries below diagonal
  std::vector<std::uint32_t> column_row;
  std::vector<double> column_value;
  std::vector<std::uint32_t> missing;  // per own row: contributions still to come (its counter)
  std::vector<double> sum;             // per own row: b minus what arrived
  std::vector<double> diagonal;
  std::vector<double> x;
  std::vector<std::uint32_t> independent;  // rows that need no contribution: solved first
  std::uint32_t solved = 0;
  bool announced = false;  // done set (once: the last row may be solved on either path)
  roam::promise<void> done;

  /// Whether this call solved the stripe's last row (under `lock`).
  bool finishing() {
    if (announced || solved != last - first) return false;
    announced = true;
    return true;
  }
};

inline roam::node_local<stripe> stripes;

/// Contributions (row, value) for rows of the receiving node.
struct contribution {
  std::uint32_t row = 0;
  double value = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(row, value);
  }
};

void receive(stripe& s, std::vector<contribution> arrived);

/// Solves the ready rows of `ready` and every row they make ready on this node; returns
/// the contributions for other nodes, by node. Under s.lock.
inline std::vector<std::vector<contribution>> solve_ready(stripe& s,
                                                          std::vector<std::uint32_t> ready,
                                                          std::uint32_t nodes) {
  std::vector<std::vector<contribution>> out(nodes);
  while (!ready.empty()) {
    const std::uint32_t i = ready.back();  // global row
    ready.pop_back();
    const std::uint32_t li = i - s.first;
    const double xi = s.sum[li] / s.diagonal[li];
    s.x[li] = xi;
    ++s.solved;
    for (std::uint64_t k = s.column_start[li]; k < s.column_start[li + 1]; ++k) {
      const std::uint32_t r = s.column_row[k];
      const double v = s.column_value[k] * xi;
      if (r < s.last) {
        const std::uint32_t lr = r - s.first;
        s.sum[lr] -= v;
        if (--s.missing[lr] == 0) ready.push_back(r);
      } else {
        std::uint32_t owner = 0;
        while (stripe_start(s.n, owner + 1, nodes) <= r) ++owner;
        out[owner].push_back({r, v});
      }
    }
  }
  return out;
}

inline void send_out(std::vector<std::vector<contribution>>& out) {
  for (roam::node_id k = 0; k < out.size(); ++k)
    if (!out[k].empty()) stripes.send<receive>(k, std::move(out[k]));
}

inline void receive(stripe& s, std::vector<contribution> arrived) {
  std::vector<std::vector<contribution>> out;
  bool finished = false;
  {
    std::lock_guard guard(s.lock);
    std::vector<std::uint32_t> ready;
    for (const contribution& c : arrived) {
      const std::uint32_t lr = c.row - s.first;
      s.sum[lr] -= c.value;
      if (--s.missing[lr] == 0) ready.push_back(c.row);
    }
    out = solve_ready(s, std::move(ready), roam::num_nodes());
    finished = s.finishing();
  }
  send_out(out);
  if (finished) s.done.set_value();
}

/// Sets up this node's stripe of `l` (every node holds the whole matrix: generated or read).
inline void prepare(const lower_matrix& l, const std::vector<double>& b) {
  const roam::node_id me = roam::this_node(), nodes = roam::num_nodes();
  stripe& s = stripes.local();
  s.n = l.n;
  s.first = stripe_start(l.n, me, nodes);
  s.last = stripe_start(l.n, me + 1, nodes);
  const std::uint32_t rows = s.last - s.first;
  s.missing.assign(rows, 0);
  s.sum.assign(b.begin() + s.first, b.begin() + s.last);
  s.diagonal.assign(rows, 0);
  s.x.assign(rows, 0);
  s.solved = 0;
  s.announced = false;
  s.done = roam::promise<void>();
  std::vector<std::vector<std::pair<std::uint32_t, double>>> columns(rows);
  for (std::uint32_t i = 0; i < l.n; ++i)
    for (std::uint64_t k = l.row_start[i]; k < l.row_start[i + 1]; ++k) {
      const std::uint32_t j = l.column[k];
      if (i >= s.first && i < s.last) {
        if (j == i)
          s.diagonal[i - s.first] = l.value[k];
        else
          ++s.missing[i - s.first];
      }
      if (j != i && j >= s.first && j < s.last) columns[j - s.first].push_back({i, l.value[k]});
    }
  s.independent.clear();
  for (std::uint32_t lr = 0; lr < rows; ++lr)
    if (s.missing[lr] == 0) s.independent.push_back(s.first + lr);
  s.column_start.assign(1, 0);
  s.column_row.clear();
  s.column_value.clear();
  for (const auto& c : columns) {
    for (const auto& [r, v] : c) {
      s.column_row.push_back(r);
      s.column_value.push_back(v);
    }
    s.column_start.push_back(s.column_row.size());
  }
}

/// Solves on every node (call from the body of roam::run, after prepare() and a barrier);
/// returns when this node's rows are solved. The node's x is stripes.local().x.
inline void solve_roam() {
  stripe& s = stripes.local();
  auto finished = s.done.get_future();
  std::vector<std::vector<contribution>> out;
  bool all_done;
  {
    // Contributions may have arrived (and solved rows) before: only the rows that need none
    // start here.
    std::lock_guard guard(s.lock);
    out = solve_ready(s, std::move(s.independent), roam::num_nodes());
    all_done = s.finishing();
  }
  send_out(out);
  if (all_done) s.done.set_value();
  finished.get();
}

// ---- MPI: level scheduling ---------------------------------------------------------------

/// The bulk-synchronous solve on `comm`: the rows of each level solved together, then the
/// new x of every rank gathered (MPI_Allgatherv). Returns the whole x.
inline std::vector<double> solve_mpi_levels(const lower_matrix& l, const std::vector<double>& b,
                                            MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const std::uint32_t first = stripe_start(l.n, rank, ranks),
                      last = stripe_start(l.n, rank + 1, ranks);
  std::vector<std::uint32_t> level(l.n, 0);
  std::uint32_t levels = 0;
  for (std::uint32_t i = 0; i < l.n; ++i) {
    for (std::uint64_t k = l.row_start[i]; k < l.row_start[i + 1]; ++k)
      if (l.column[k] != i) level[i] = std::max(level[i], level[l.column[k]] + 1);
    levels = std::max(levels, level[i] + 1);
  }
  std::vector<std::vector<std::uint32_t>> mine(levels);
  for (std::uint32_t i = first; i < last; ++i) mine[level[i]].push_back(i);
  std::vector<double> x(l.n, 0);
  std::vector<double> sent, got;
  std::vector<std::uint32_t> sent_rows, got_rows;
  std::vector<int> counts(ranks), offsets(ranks);
  for (std::uint32_t lv = 0; lv < levels; ++lv) {
    sent.clear();
    sent_rows.clear();
    for (std::uint32_t i : mine[lv]) {
      double s = b[i], d = 1;
      for (std::uint64_t k = l.row_start[i]; k < l.row_start[i + 1]; ++k)
        if (l.column[k] == i)
          d = l.value[k];
        else
          s -= l.value[k] * x[l.column[k]];
      x[i] = s / d;
      sent.push_back(x[i]);
      sent_rows.push_back(i);
    }
    const int count = static_cast<int>(sent.size());
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    int total = 0;
    for (int r = 0; r < ranks; ++r) {
      offsets[r] = total;
      total += counts[r];
    }
    got.resize(total);
    got_rows.resize(total);
    MPI_Allgatherv(sent.data(), count, MPI_DOUBLE, got.data(), counts.data(), offsets.data(),
                   MPI_DOUBLE, comm);
    MPI_Allgatherv(sent_rows.data(), count, MPI_UINT32_T, got_rows.data(), counts.data(),
                   offsets.data(), MPI_UINT32_T, comm);
    for (int k = 0; k < total; ++k) x[got_rows[k]] = got[k];
  }
  return x;
}

}  // namespace sptrsv
