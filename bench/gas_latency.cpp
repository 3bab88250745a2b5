// Get and put latency, 8 B .. 1 MiB, between 2 ranks: roam::gas (RMA under a lease) next to
// raw MPI_Get/MPI_Put on a window of the same kind (MPI_Win_allocate, passive target,
// lock_all, each operation closed by MPI_Win_flush) in the same program run, and roam's
// active-message path (--roam-gas-path am). The table also shows the alternatives the
// window's operations were chosen against: request-based MPI_Rget closed by MPI_Wait.
// (A window over memory of our own, MPI_Win_create, is no choice: Open MPI 4.1 over shared
// memory without a single-copy mechanism refuses it.) Repetitions alternate the three;
// the figures are their medians. Run with
// `./run bench gas_latency [--json] [--repeat N]` (it starts 2 ranks itself).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "mpi_pair.hpp"
#include "pingpong_common.hpp"

#include <roam/roam.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace roam_bench;

std::vector<std::size_t> sizes = {8, 64, 512, 4096, 32768, 65536, 262144, 1048576};

int gas_iterations(std::size_t size) {
  if (size <= 4096) return 10000;
  if (size <= 65536) return 2000;
  return 300;
}

/// Microseconds per call of `op` (after a tenth as many to warm up).
template <class Op>
double time_us(int iters, Op&& op) {
  for (int i = 0; i < iters / 10; ++i) op();
  const auto start = clock_type::now();
  for (int i = 0; i < iters; ++i) op();
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / iters;
}

enum class mpi_kind { get_flush, put_flush, rget_wait };

/// Raw MPI on rank 0 against rank 1's part of `window` (rank 1 waits in a sleeping barrier).
std::vector<double> mpi_us(MPI_Win window, mpi_kind kind, int rank) {
  std::vector<double> result;
  std::vector<std::uint8_t> local(sizes.back(), 1);
  for (std::size_t size : sizes) {
    const int count = static_cast<int>(size);
    double us = 0;
    if (rank == 0)
      us = time_us(gas_iterations(size), [&] {
        switch (kind) {
          case mpi_kind::get_flush:
            MPI_Get(local.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, window);
            MPI_Win_flush(1, window);
            break;
          case mpi_kind::put_flush:
            MPI_Put(local.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, window);
            MPI_Win_flush(1, window);
            break;
          case mpi_kind::rget_wait: {
            MPI_Request r;
            MPI_Rget(local.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, window, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            break;
          }
        }
      });
    result.push_back(us);
  }
  sleepy_barrier();
  return result;
}

struct mpi_figures {
  std::vector<double> get, put, rget;
};

mpi_figures measure_mpi(int rank) {
  mpi_figures f;
  const MPI_Aint bytes = static_cast<MPI_Aint>(sizes.back());
  void* base = nullptr;
  MPI_Win window;
  MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &window);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, window);
  f.get = mpi_us(window, mpi_kind::get_flush, rank);
  f.put = mpi_us(window, mpi_kind::put_flush, rank);
  f.rget = mpi_us(window, mpi_kind::rget_wait, rank);
  MPI_Win_unlock_all(window);
  MPI_Win_free(&window);
  return f;
}

struct roam_figures {
  std::vector<double> get, put;
};

/// roam::gas between node 0 and node 1's heap, on node 0's application thread.
roam_figures measure_roam(roam::config cfg) {
  roam_figures f;
  roam::run(cfg, [&f] {
    if (roam::this_node() != 0) return;
    const auto remote = roam::gas::allocate<std::uint8_t>(1, sizes.back()).get();
    std::vector<std::uint8_t> local(sizes.back(), 1);
    // The first access goes to the owner and brings the lease back.
    roam::gas::get(remote, local.data(), 8).get();
    for (std::size_t size : sizes)
      f.get.push_back(
          time_us(gas_iterations(size), [&] { roam::gas::get(remote, local.data(), size).get(); }));
    for (std::size_t size : sizes)
      f.put.push_back(
          time_us(gas_iterations(size), [&] { roam::gas::put(remote, local.data(), size).get(); }));
    roam::gas::deallocate(remote).get();
  });
  return f;
}

std::vector<double> medians(const std::vector<std::vector<double>>& runs) {
  std::vector<double> result;
  result.reserve(runs.front().size());
  for (std::size_t i = 0; i < runs.front().size(); ++i) {
    std::vector<double> column;
    column.reserve(runs.size());
    for (const auto& run : runs) column.push_back(run[i]);
    result.push_back(median(column));
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_bytes = sizes.back();
  int repeat = 3;
  roam_bench::options_with_json command_line("gas_latency");
  command_line.add("--max-bytes", max_bytes, "largest transfer measured")
      .add("--repeat", repeat, "repetitions (alternating roam and MPI); medians reported")
      .parse(argc, argv);
  std::erase_if(sizes, [=](std::size_t s) { return s > max_bytes; });
  const int rank = roam_bench::init_mpi_pair(argc, argv, "gas_latency");

  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  cfg.threads = 1;
  roam::config am = cfg;
  am.of<roam::gas::gas_settings>().path = roam::gas::path::active_messages;

  std::vector<std::vector<double>> get, put, mpi_get, mpi_put, rget, am_get;
  for (int r = 0; r < repeat; ++r) {
    const mpi_figures m = measure_mpi(rank);
    mpi_get.push_back(m.get);
    mpi_put.push_back(m.put);
    rget.push_back(m.rget);
    const roam_figures rma = measure_roam(cfg);
    get.push_back(rma.get);
    put.push_back(rma.put);
    am_get.push_back(measure_roam(am).get);
  }

  if (rank == 0) {
    const auto get_us = medians(get), put_us = medians(put), mpi_get_us = medians(mpi_get),
               mpi_put_us = medians(mpi_put), rget_us = medians(rget), am_get_us = medians(am_get);
    std::printf("%9s %9s %9s %6s %9s %9s %6s %9s %9s\n", "bytes", "get_us", "mpi_get", "ratio",
                "put_us", "mpi_put", "ratio", "am_get_us", "mpi_rget");
    for (std::size_t i = 0; i < sizes.size(); ++i)
      std::printf("%9zu %9.3f %9.3f %6.3f %9.3f %9.3f %6.3f %9.3f %9.3f\n", sizes[i], get_us[i],
                  mpi_get_us[i], get_us[i] / mpi_get_us[i], put_us[i], mpi_put_us[i],
                  put_us[i] / mpi_put_us[i], am_get_us[i], rget_us[i]);
    if (command_line.json)
      std::printf(
          "{\"bench\":\"gas_latency\",\"sizes\":%s,\"get_us\":%s,\"put_us\":%s,\"mpi_get_us\":%s,"
          "\"mpi_put_us\":%s,\"am_get_us\":%s}\n",
          array(sizes).c_str(), array(get_us).c_str(), array(put_us).c_str(),
          array(mpi_get_us).c_str(), array(mpi_put_us).c_str(), array(am_get_us).c_str());
  }
  MPI_Finalize();
  return 0;
}
