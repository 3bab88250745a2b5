// N-queens (the BOTS kernel): count the placements of N queens, one task per candidate
// column at each level above a depth cutoff. roam tasklets vs oneTBB vs OpenMP tasks.
//   ./run bench nqueens [--json] [--n 12]
#include "bench_options.hpp"
#include "fork_join.hpp"

#include <tbb/task_group.h>

#include <array>

namespace {

constexpr int task_depth = 3;  // rows below this are searched serially
int n = 12;

bool safe(const std::array<int, 32>& cols, int row, int col) {
  for (int r = 0; r < row; ++r)
    if (cols[static_cast<std::size_t>(r)] == col ||
        std::abs(cols[static_cast<std::size_t>(r)] - col) == row - r)
      return false;
  return true;
}

long serial(std::array<int, 32> cols, int row) {
  if (row == n) return 1;
  long count = 0;
  for (int c = 0; c < n; ++c)
    if (safe(cols, row, c)) {
      cols[static_cast<std::size_t>(row)] = c;
      count += serial(cols, row + 1);
    }
  return count;
}

template <class Spawn>
long search(std::array<int, 32> cols, int row, Spawn& spawn_all) {
  if (row >= task_depth || row == n) return serial(cols, row);
  return spawn_all(cols, row);
}

long with_roam(std::array<int, 32> cols, int row) {
  if (row >= task_depth || row == n) return serial(cols, row);
  std::vector<roam::task<long>> tasks;
  for (int c = 0; c < n; ++c)
    if (safe(cols, row, c)) {
      auto next = cols;
      next[static_cast<std::size_t>(row)] = c;
      tasks.push_back(roam::spawn([next, row] { return with_roam(next, row + 1); }));
    }
  long count = 0;
  for (auto& t : tasks) count += t.join();
  return count;
}

long with_tbb(std::array<int, 32> cols, int row) {
  if (row >= task_depth || row == n) return serial(cols, row);
  std::array<long, 32> counts{};
  tbb::task_group g;
  for (int c = 0; c < n; ++c)
    if (safe(cols, row, c)) {
      auto next = cols;
      next[static_cast<std::size_t>(row)] = c;
      g.run([next, row, &counts, c] {
        counts[static_cast<std::size_t>(c)] = with_tbb(next, row + 1);
      });
    }
  g.wait();
  long count = 0;
  for (long x : counts) count += x;
  return count;
}

long with_omp(std::array<int, 32> cols, int row) {
  if (row >= task_depth || row == n) return serial(cols, row);
  std::array<long, 32> counts{};
  for (int c = 0; c < n; ++c)
    if (safe(cols, row, c)) {
      auto next = cols;
      next[static_cast<std::size_t>(row)] = c;
#pragma omp task firstprivate(next, row, c) shared(counts)
      counts[static_cast<std::size_t>(c)] = with_omp(next, row + 1);
    }
#pragma omp taskwait
  long count = 0;
  for (long x : counts) count += x;
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  roam_bench::options_with_json command_line("nqueens");
  command_line.add("--n", n, "board size and number of queens").parse(argc, argv);
  const long expected = serial({}, 0);
  roam_bench::fork_join_kernel k{"nqueens", [&] { return with_roam({}, 0) == expected; },
                                 [&] { return with_tbb({}, 0) == expected; },
                                 [&] {
                                   long r = 0;
#pragma omp parallel
#pragma omp single
                                   r = with_omp({}, 0);
                                   return r == expected;
                                 }};
  return roam_bench::compare_fork_join(command_line.json, k);
}
