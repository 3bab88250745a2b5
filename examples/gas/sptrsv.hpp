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
#include <cctype>
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

/// The largest grid side whose unknowns still fit the 32-bit row numbers.
inline std::uint32_t max_poisson_side(int dimensions) { return dimensions == 2 ? 65535 : 1625; }

/// The 5-point (2-D, `side`^2 unknowns) or 7-point (3-D, `side`^3) Poisson matrix's ILU(0)
/// lower factor, with its unit diagonal stored. Throws std::invalid_argument for a dimension
/// other than 2 or 3, or a side of 0 or above max_poisson_side().
inline lower_matrix poisson_ilu0(std::uint32_t side, int dimensions) {
  if (dimensions != 2 && dimensions != 3)
    throw std::invalid_argument("Poisson matrices have 2 or 3 dimensions, not " +
                                std::to_string(dimensions));
  if (side == 0 || side > max_poisson_side(dimensions))
    throw std::invalid_argument(
        "a " + std::to_string(dimensions) + "-D Poisson grid's side is 1 to " +
        std::to_string(max_poisson_side(dimensions)) + ", not " + std::to_string(side));
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

/// The lower triangle (diagonal included) of a Matrix Market coordinate file: real, integer
/// or pattern entries; general (entries above the diagonal are dropped) or symmetric (an
/// entry given above the diagonal stands for its mirror below). Throws std::runtime_error
/// naming the file when it is not one (complex, Hermitian and skew-symmetric files included),
/// or a diagonal entry is missing or zero.
inline lower_matrix read_matrix_market(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::string line;
  std::getline(in, line);
  std::istringstream banner(line);
  std::string tag, object, format, field, symmetry;
  banner >> tag >> object >> format >> field >> symmetry;
  auto lower = [](std::string w) {
    for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return w;
  };
  if (tag != "%%MatrixMarket" || lower(object) != "matrix" || lower(format) != "coordinate")
    throw std::runtime_error(path + ": not a Matrix Market coordinate matrix");
  field = lower(field);
  symmetry = lower(symmetry);
  if (field != "real" && field != "integer" && field != "pattern")
    throw std::runtime_error(path + ": entries of field '" + field +
                             "' are not supported (real, integer or pattern)");
  if (symmetry != "general" && symmetry != "symmetric")
    throw std::runtime_error(path + ": symmetry '" + symmetry +
                             "' is not supported (general or symmetric)");
  const bool pattern = field == "pattern", symmetric = symmetry == "symmetric";
  // Comments, and blank lines (the format allows them), up to the size line.
  while (std::getline(in, line) &&
         (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '%')) {
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
    if (i < j) {
      if (!symmetric) continue;  // the upper triangle of a general matrix is not L's
      std::swap(i, j);           // a symmetric file may store either triangle
    }
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

/// The part of `parts` holding row `r` (< n): the arithmetic of stripe_start() inverted, then
/// nudged past its rounding, so a row's owner costs O(1) whatever the number of parts.
inline std::uint32_t stripe_of(std::uint32_t n, std::uint32_t r, std::uint32_t parts) {
  auto p = static_cast<std::uint32_t>(std::uint64_t{r} * parts / n);
  while (p > 0 && stripe_start(n, p, parts) > r) --p;
  while (stripe_start(n, p + 1, parts) <= r) ++p;
  return p;
}

/// max |x - reference| / max |reference|; infinite when the sizes differ or an entry of x is
/// not a number (which every comparison would otherwise let through).
inline double relative_error(const std::vector<double>& x, const std::vector<double>& reference) {
  if (x.size() != reference.size()) return HUGE_VAL;
  double diff = 0, size = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isinf(x[i])) return HUGE_VAL;
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
  std::vector<std::uint32_t> ready;  // rows whose contributions all arrived, unsolved
  std::size_t ready_head = 0;        // ready[ready_head ..] are still to solve
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

/// Rows solved between two sends of their contributions: the rows of other nodes that wait
/// on this stripe start while the stripe's cascade goes on (a pipeline), and a batch's
/// contributions to one node travel as one message.
inline constexpr std::uint32_t rows_per_batch = 256;

/// Solves up to rows_per_batch rows of s.ready (rows made ready by them join s.ready) and
/// returns the contributions for other nodes, by node. Under s.lock.
inline std::vector<std::vector<contribution>> solve_batch(stripe& s, std::uint32_t nodes) {
  std::vector<std::vector<contribution>> out(nodes);
  for (std::uint32_t done = 0; done < rows_per_batch && s.ready_head < s.ready.size(); ++done) {
    // Oldest first: the stripe advances as a wavefront, so the rows that other stripes
    // wait for (its last ones) start early instead of after the whole cascade.
    const std::uint32_t i = s.ready[s.ready_head++];  // global row
    if (s.ready_head == s.ready.size()) {
      s.ready.clear();
      s.ready_head = 0;
    }
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
        if (--s.missing[lr] == 0) s.ready.push_back(r);
      } else {
        out[stripe_of(s.n, r, nodes)].push_back({r, v});
      }
    }
  }
  return out;
}

/// Solves s.ready batch by batch, sending each batch's contributions before the next (with
/// s.lock released, so handlers of this node meanwhile add theirs). Several workers may run
/// it at once: each batch is taken under the lock.
inline void advance(stripe& s) {
  const std::uint32_t nodes = roam::num_nodes();
  for (;;) {
    std::vector<std::vector<contribution>> out;
    bool finished = false;
    {
      std::lock_guard guard(s.lock);
      if (s.ready_head == s.ready.size()) return;
      out = solve_batch(s, nodes);
      finished = s.finishing();
    }
    for (roam::node_id k = 0; k < out.size(); ++k)
      if (!out[k].empty()) stripes.send<receive>(k, std::move(out[k]));
    if (finished) {
      s.done.set_value();
      return;
    }
  }
}

inline void receive(stripe& s, std::vector<contribution> arrived) {
  {
    std::lock_guard guard(s.lock);
    for (const contribution& c : arrived) {
      const std::uint32_t lr = c.row - s.first;
      s.sum[lr] -= c.value;
      if (--s.missing[lr] == 0) s.ready.push_back(c.row);
    }
  }
  advance(s);
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
  s.ready.clear();
  s.ready_head = 0;
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
  // Rows that need no contribution are ready from the start; the first advance() of this
  // node (solve_roam(), or a contribution arriving earlier) solves them.
  for (std::uint32_t lr = 0; lr < rows; ++lr)
    if (s.missing[lr] == 0) s.ready.push_back(s.first + lr);
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
  bool empty_stripe = false;
  {
    std::lock_guard guard(s.lock);
    empty_stripe = s.finishing();
  }
  if (empty_stripe) s.done.set_value();
  advance(s);
  finished.get();
}

// ---- MPI: level scheduling ---------------------------------------------------------------

/// What level scheduling computes before solving (the analysis; the roam version's is
/// prepare()): every row's level, and per level the rows of each rank in the order of the
/// gathered values. Every rank holds the whole matrix, so it knows the others' rows too and
/// only values travel.
struct level_plan {
  std::vector<std::uint32_t> rows;         // by level, then by rank: the rows solved
  std::vector<std::uint64_t> level_start;  // levels + 1 offsets into rows
  std::vector<std::vector<int>> counts;    // per level: values from each rank
  std::vector<std::vector<int>> offsets;   // per level: where each rank's values go
};

inline level_plan plan_levels(const lower_matrix& l, int ranks) {
  std::vector<std::uint32_t> level(l.n, 0);
  std::uint32_t levels = 0;
  for (std::uint32_t i = 0; i < l.n; ++i) {
    for (std::uint64_t k = l.row_start[i]; k < l.row_start[i + 1]; ++k)
      if (l.column[k] != i) level[i] = std::max(level[i], level[l.column[k]] + 1);
    levels = std::max(levels, level[i] + 1);
  }
  level_plan p;
  p.counts.assign(levels, std::vector<int>(ranks, 0));
  p.offsets.assign(levels, std::vector<int>(ranks, 0));
  std::vector<std::uint64_t> per_level(levels + 1, 0);
  for (std::uint32_t i = 0; i < l.n; ++i) ++per_level[level[i] + 1];
  for (std::uint32_t lv = 0; lv < levels; ++lv) per_level[lv + 1] += per_level[lv];
  p.level_start = per_level;
  p.rows.resize(l.n);
  // Rows ascend within a level, and the stripes ascend with the rank: rank r's rows of a level
  // are contiguous in p.rows, where MPI_Allgatherv puts its values.
  for (int r = 0; r < ranks; ++r)
    for (std::uint32_t i = stripe_start(l.n, r, ranks); i < stripe_start(l.n, r + 1, ranks); ++i)
      ++p.counts[level[i]][r];
  for (std::uint32_t i = 0; i < l.n; ++i) p.rows[per_level[level[i]]++] = i;
  for (std::uint32_t lv = 0; lv < levels; ++lv)
    for (int r = 1; r < ranks; ++r) p.offsets[lv][r] = p.offsets[lv][r - 1] + p.counts[lv][r - 1];
  return p;
}

/// The bulk-synchronous solve on `comm` with `plan` from plan_levels(l, ranks of comm): the
/// rows of each level solved together, then the level's new x of every rank gathered (one
/// MPI_Allgatherv of the values). Returns the whole x.
inline std::vector<double> solve_mpi_levels(const lower_matrix& l, const level_plan& plan,
                                            const std::vector<double>& b, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<double> x(l.n, 0), solved, gathered;
  const std::size_t levels = plan.counts.size();
  for (std::size_t lv = 0; lv < levels; ++lv) {
    const std::uint32_t* rows = plan.rows.data() + plan.level_start[lv];
    const int mine = plan.offsets[lv][rank], count = plan.counts[lv][rank];
    solved.resize(count);
    for (int m = 0; m < count; ++m) {
      const std::uint32_t i = rows[mine + m];
      double s = b[i], d = 1;
      for (std::uint64_t k = l.row_start[i]; k < l.row_start[i + 1]; ++k)
        if (l.column[k] == i)
          d = l.value[k];
        else
          s -= l.value[k] * x[l.column[k]];
      solved[m] = s / d;
    }
    const std::size_t total = plan.level_start[lv + 1] - plan.level_start[lv];
    gathered.resize(total);
    MPI_Allgatherv(solved.data(), count, MPI_DOUBLE, gathered.data(), plan.counts[lv].data(),
                   plan.offsets[lv].data(), MPI_DOUBLE, comm);
    for (std::size_t k = 0; k < total; ++k) x[rows[k]] = gathered[k];
  }
  return x;
}

}  // namespace sptrsv
