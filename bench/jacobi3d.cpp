// A 3-D Jacobi proxy (thesis Fig. 59-61): a 7-point stencil over a grid split along z, halo
// planes exchanged every iteration, the grid on each rank's device. Side by side in one run:
// - MPI: one slab per rank, the hand-written loop of MPI+device codes: copy the two boundary
//   planes to the host, exchange them (MPI_Irecv/Isend/Waitall), copy the arrived halos to the
//   device, run the stencil, wait; repeat. Nothing overlaps.
// - roam: each rank's slab over-decomposed into `od` mobile objects. A block reads its boundary
//   planes straight from its device copy into message buffers (hetero_object::read_range), sends
//   them to its neighbours' halo() handler, which hands each arrived buffer to write_range (no
//   copy on the host), and computes as soon as both of its halos arrived; with od = 2 one block's
//   transfers and messages overlap the other's stencil. A neighbour on the same node gets its
//   halo on the device instead: a copy task from this block's grid into the neighbour's (found
//   through the global pointer it published), then a message without data saying it is there;
//   nothing waits on the host. (The copy is a writer of the neighbour's grid, so the neighbour's
//   next stencil is ordered after it. A halo object of its own per side, copied into the grid by
//   the neighbour, avoids that but measured slower on an H100: one more task per halo.)
// Both end with the same field (checksums compared; WRONG otherwise).
//
//   ./run bench jacobi3d [--backend opencl|host|cuda] [--nx 96 --ny 96 --nz 96] (per rank)
//                        [--iterations 40] [--od 1,2] [--repeats 3] [--json]
// (it starts 2 ranks itself; --ranks N for more). JSON:
// {"bench":"jacobi3d","backend","od":[1,2],"roam_s":[...],"mpi_s":[...],"speedup":[...]},
// speedup = mpi_s / roam_s (the MPI time measured beside each roam run).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "hetero_mobile_kernels.hpp"
#include "pingpong_common.hpp"

#include <roam/hetero_mobile.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using roam_bench::clock_type;

struct problem {
  int nx = 96, ny = 96, nz = 96;  // per rank
  int iterations = 40;
  [[nodiscard]] std::size_t plane() const { return static_cast<std::size_t>(nx) * ny; }
};

/// Initial field of a block of `planes` interior planes: zero, except the bottom halo of the
/// bottom block of the whole grid, held at 1 (a heated face).
std::vector<double> initial_block(const problem& p, int planes, bool bottom_of_grid) {
  std::vector<double> grid(p.plane() * static_cast<std::size_t>(planes + 2), 0.0);
  if (bottom_of_grid) std::fill(grid.begin(), grid.begin() + static_cast<long>(p.plane()), 1.0);
  return grid;
}

double interior_sum(const problem& p, const double* grid, int planes) {
  double sum = 0;
  for (std::size_t c = p.plane(); c < p.plane() * static_cast<std::size_t>(planes + 1); ++c)
    sum += grid[c];
  return sum;
}

roam::launch_dims dims_for(std::size_t items) { return roam::launch_dims::linear(items, 64); }

// ---- MPI + device API -----------------------------------------------------------------------

double run_mpi(roam::device& device, const problem& p, int rank, int ranks, double& checksum) {
  const std::size_t plane_bytes = p.plane() * sizeof(double);
  const std::size_t grid_bytes = plane_bytes * static_cast<std::size_t>(p.nz + 2);
  const int count = static_cast<int>(p.plane());
  const bool has_below = rank > 0, has_above = rank + 1 < ranks;
  std::array<roam::device_buffer, 2> grids{device.allocate(grid_bytes),
                                           device.allocate(grid_bytes)};
  auto* host = static_cast<double*>(device.allocate_host(grid_bytes));
  std::array<double*, 4> planes{};  // send low, send high, receive low, receive high
  for (auto& plane : planes) plane = static_cast<double*>(device.allocate_host(plane_bytes));
  const auto start_field = initial_block(p, p.nz, rank == 0);
  std::copy(start_field.begin(), start_field.end(), host);
  for (auto& g : grids)
    device.copy_to_device(roam::device_queue::host_to_device(), g, 0, host, grid_bytes, {}).wait();

  roam_bench::sleepy_barrier();
  const auto start = clock_type::now();
  int cur = 0;
  for (int it = 0; it < p.iterations; ++it) {
    std::vector<MPI_Request> requests;
    auto exchange = [&](bool exists, int peer, int k_send, double* send, double* receive) {
      if (!exists) return;
      requests.emplace_back();
      MPI_Irecv(receive, count, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &requests.back());
      device
          .copy_to_host(roam::device_queue::device_to_host(), send, grids[cur],
                        plane_bytes * static_cast<std::size_t>(k_send), plane_bytes, {})
          .wait();
      requests.emplace_back();
      MPI_Isend(send, count, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &requests.back());
    };
    exchange(has_below, rank - 1, 1, planes[0], planes[2]);
    exchange(has_above, rank + 1, p.nz, planes[1], planes[3]);
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    std::vector<roam::device_event> halos;
    if (has_below)
      halos.push_back(device.copy_to_device(roam::device_queue::host_to_device(), grids[cur], 0,
                                            planes[2], plane_bytes, {}));
    if (has_above)
      halos.push_back(device.copy_to_device(roam::device_queue::host_to_device(), grids[cur],
                                            plane_bytes * static_cast<std::size_t>(p.nz + 1),
                                            planes[3], plane_bytes, {}));
    const roam::kernel_argument arguments[] = {
        roam::kernel_argument::of_buffer(grids[cur]),
        roam::kernel_argument::of_buffer(grids[1 - cur]), roam::kernel_argument::of_value(p.nx),
        roam::kernel_argument::of_value(p.ny), roam::kernel_argument::of_value(p.nz)};
    device
        .launch(roam::device_queue::compute(0), jacobi_step, dims_for(p.plane() * p.nz), arguments,
                0, halos)
        .wait();
    cur = 1 - cur;
  }
  roam_bench::sleepy_barrier();
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();

  device.copy_to_host(roam::device_queue::device_to_host(), host, grids[cur], 0, grid_bytes, {})
      .wait();
  const double mine = interior_sum(p, host, p.nz);
  MPI_Allreduce(&mine, &checksum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (auto* plane : planes) device.release_host(plane, plane_bytes);
  device.release_host(host, grid_bytes);
  for (auto& g : grids) device.release(g);
  return seconds;
}

// ---- roam: over-decomposed blocks ---------------------------------------------------------

std::atomic<int> blocks_running{0};
roam::promise<void>* blocks_done = nullptr;  // this rank's blocks all finished

using grid_pointers = std::array<roam::global_hetero_ptr<double>, 2>;

struct jacobi_block {
  std::array<roam::hetero_object<double>, 2> grid;
  roam::mobile_ptr<jacobi_block> below, above;
  grid_pointers below_grids, above_grids;
  int nx = 0, ny = 0, nz = 0, iterations = 0;
  int cur = 0, iteration = 0;
  bool started = false;
  // Halos by iteration parity (a neighbour runs at most one iteration ahead): [parity][side],
  // side 0 from below, 1 from above.
  std::array<std::array<roam::buffer<double>, 2>, 2> arrived;
  std::array<int, 2> arrived_count{};

  template <class Ar>
  void serialize(Ar& ar) {
    ar(grid, below, above, below_grids, above_grids, nx, ny, nz, iterations, cur, iteration,
       started, arrived, arrived_count);
  }

  jacobi_block() = default;
  jacobi_block(const problem& p, int planes, bool bottom_of_grid)
      : nx(p.nx), ny(p.ny), nz(planes), iterations(p.iterations) {
    const auto field = initial_block(p, planes, bottom_of_grid);
    for (auto& g : grid) g = roam::hetero_object<double>(std::span<const double>(field));
  }

  grid_pointers publish_grids() {
    // For neighbours on the same node; the caller unpublishes them.
    grid_pointers published;
    for (std::size_t g = 0; g < 2; ++g) published[g] = roam::publish(grid[g]);
    return published;
  }
  void connect(roam::mobile_ptr<jacobi_block> lower, grid_pointers lower_grids,
               roam::mobile_ptr<jacobi_block> upper, grid_pointers upper_grids) {
    below = lower;
    above = upper;
    below_grids = lower_grids;
    above_grids = upper_grids;
  }
  [[nodiscard]] int neighbours() const { return (below ? 1 : 0) + (above ? 1 : 0); }
  [[nodiscard]] std::size_t plane_count() const {
    return static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny);
  }

  // Halos may arrive before start(): the block computes nothing until it has sent its own.
  void start() {
    started = true;
    send_halos();
    advance();
  }

  void halo(int for_iteration, int side, roam::buffer<double> plane) {
    const int parity = for_iteration % 2;
    arrived[parity][side] = std::move(plane);
    ++arrived_count[parity];
    advance();
  }
  // A neighbour on this node copied the halo into grid[for_iteration % 2] on the device (a task
  // submitted before this message was sent: the stencil submitted after it is ordered after it).
  void halo_written(int for_iteration) {
    ++arrived_count[for_iteration % 2];
    advance();
  }

  [[nodiscard]] double checksum() {
    auto values = grid[cur].to_vector();
    double sum = 0;
    for (std::size_t c = plane_count(); c < plane_count() * static_cast<std::size_t>(nz + 1); ++c)
      sum += values[c];
    return sum;
  }

 private:
  // A neighbour on this node: plane `from_plane` of grid[cur] becomes plane `to_plane` of the
  // neighbour's grid for `iteration` (it reads grid[iteration % 2] then), by a task on the
  // device. Implicit dependencies order it after the neighbour's stencil still reading that
  // grid (submitted before the halo this block needed for its last iteration was sent) and
  // before the neighbour's stencil that will read it (submitted after this message arrives).
  // Then a message without data.
  void write_into_neighbour(roam::mobile_ptr<jacobi_block>& neighbour, const grid_pointers& grids,
                            std::size_t from_plane, std::size_t to_plane) {
    const std::size_t count = plane_count();
    auto target = roam::local_object(grids[static_cast<std::size_t>(iteration % 2)]);
    roam::hetero_task(copy_elements, dims_for(count), roam::in(grid[cur]), roam::inout(target),
                      static_cast<int>(from_plane * count), static_cast<int>(to_plane * count),
                      static_cast<int>(count))
        .submit();
    neighbour.send<&jacobi_block::halo_written>(iteration);
  }

  // Other neighbours: both reads are issued before either is waited for, so the second transfer
  // runs during the first wait (which suspends this handler, not its worker). The buffers become
  // the messages.
  void send_halos() {
    const std::size_t count = plane_count();
    const auto here = roam::this_node();
    const bool below_here = below && below_grids[0].where() == here;
    const bool above_here = above && above_grids[0].where() == here;
    if (below_here) write_into_neighbour(below, below_grids, 1, static_cast<std::size_t>(nz) + 1);
    if (above_here) write_into_neighbour(above, above_grids, static_cast<std::size_t>(nz), 0);
    roam::buffer<double> low, high;
    roam::hetero_future<void> low_read, high_read;
    if (below && !below_here) {
      low = roam::buffer<double>(count);
      low_read = grid[cur].read_range(count, low.span());  // plane 1
    }
    if (above && !above_here) {
      high = roam::buffer<double>(count);
      high_read = grid[cur].read_range(count * static_cast<std::size_t>(nz), high.span());
    }
    // A failed read must not end this handler while the other one still writes into its buffer:
    // both are waited for, and the first failure is rethrown after.
    std::exception_ptr failure;
    auto send_when_read = [&](roam::hetero_future<void>& read, roam::mobile_ptr<jacobi_block>& to,
                              int side, roam::buffer<double>& plane) {
      try {
        read.wait();
        if (!failure) to.send<&jacobi_block::halo>(iteration, side, std::move(plane));
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    };
    if (below && !below_here) send_when_read(low_read, below, 1, low);
    if (above && !above_here) send_when_read(high_read, above, 0, high);
    if (failure) std::rethrow_exception(failure);
  }

  // Computes every iteration whose halos are all here.
  void advance() {
    const std::size_t count = plane_count();
    while (started && iteration < iterations && arrived_count[iteration % 2] == neighbours()) {
      const int parity = iteration % 2;
      arrived_count[parity] = 0;
      // Each halo goes straight into the device copy from the block it arrived in (taken over,
      // not copied: roam::buffer blocks are page-locked for CUDA), ordered before the stencil
      // that reads it.
      if (!arrived[parity][0].empty())
        (void)grid[cur].write_range(0, std::move(arrived[parity][0]));
      if (!arrived[parity][1].empty())
        (void)grid[cur].write_range(count * static_cast<std::size_t>(nz + 1),
                                    std::move(arrived[parity][1]));
      // inout: the halo planes of the other grid (the fixed face) must stay as they are.
      roam::hetero_task(jacobi_step, dims_for(count * static_cast<std::size_t>(nz)),
                        roam::in(grid[cur]), roam::inout(grid[1 - cur]), nx, ny, nz)
          .submit();
      cur = 1 - cur;
      ++iteration;
      if (iteration < iterations) {
        send_halos();
      } else {
        grid[cur].tasks_done().wait();
        if (blocks_running.fetch_sub(1) == 1) blocks_done->set_value();
      }
    }
  }
};

double run_roam(const problem& p, int od, double& checksum) {
  double seconds = 0;
  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  roam::run(cfg, [&] {
    const int rank = static_cast<int>(roam::this_node());
    const int planes = p.nz / od;
    std::vector<roam::mobile_ptr<jacobi_block>> mine;
    mine.reserve(static_cast<std::size_t>(od));
    for (int b = 0; b < od; ++b)
      mine.push_back(roam::make_mobile<jacobi_block>(p, planes, rank == 0 && b == 0));
    std::vector<grid_pointers> my_grids;
    my_grids.reserve(mine.size());
    for (auto& block : mine) my_grids.push_back(block.call<&jacobi_block::publish_grids>().get());
    std::vector<roam::mobile_ptr<jacobi_block>> all;
    for (auto& part : roam::allgather(mine)) all.insert(all.end(), part.begin(), part.end());
    std::vector<grid_pointers> all_grids;
    for (auto& part : roam::allgather(my_grids))
      all_grids.insert(all_grids.end(), part.begin(), part.end());
    for (int b = 0; b < od; ++b) {
      const std::size_t g = static_cast<std::size_t>(rank) * static_cast<std::size_t>(od) +
                            static_cast<std::size_t>(b);
      const bool has_below = g > 0, has_above = g + 1 < all.size();
      mine[static_cast<std::size_t>(b)]
          .call<&jacobi_block::connect>(has_below ? all[g - 1] : roam::mobile_ptr<jacobi_block>(),
                                        has_below ? all_grids[g - 1] : grid_pointers{},
                                        has_above ? all[g + 1] : roam::mobile_ptr<jacobi_block>(),
                                        has_above ? all_grids[g + 1] : grid_pointers{})
          .get();
    }
    roam::promise<void> done;
    blocks_done = &done;
    blocks_running = od;
    roam::barrier();
    const auto start = clock_type::now();
    for (auto& block : mine) block.send<&jacobi_block::start>();
    done.get_future().get();
    roam::barrier();
    seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    double sum = 0;
    for (auto& block : mine) sum += block.call<&jacobi_block::checksum>().get();
    checksum = roam::allreduce(sum, std::plus<>());
    for (auto& pointers : my_grids)
      for (auto& pointer : pointers) roam::unpublish(pointer).get();
    for (auto& block : mine) roam::destroy(block).get();
    roam::barrier();
  });
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace roam_bench;
  problem p;
  std::vector<int> ods = {1, 2};
  int repeats = 3;
  std::string backend = roam::backend_built(roam::backend::opencl) ? "opencl" : "host";
  roam_bench::options_with_json command_line("jacobi3d");
  command_line.add("--nx", p.nx, "grid points along x per rank")
      .add("--ny", p.ny, "grid points along y per rank")
      .add("--nz", p.nz, "grid planes along z per rank")
      .add("--iterations", p.iterations, "stencil sweeps per run")
      .add("--od", ods, "blocks per rank (over-decomposition) measured")
      .add("--repeats", repeats, "runs of each version (the best counts)")
      .add("--backend", backend, "opencl, host or cuda")
      .parse(argc, argv);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (int od : ods) {
    if (od < 1 || p.nz % od != 0 || p.nz / od < 1) {
      if (rank == 0)
        std::fprintf(stderr, "jacobi3d: --nz %d does not split into %d blocks\n", p.nz, od);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }

  auto options = roam::hetero_options::from_environment();  // ROAM_HETERO_* apply too
  options.backends = backend;
  options.host_separate_memory = true;  // the host backend then copies like a discrete device
  roam::hetero_runtime devices(options);
  roam::device& device = *devices.devices().front();

  std::vector<double> roam_s(ods.size(), 1e300), mpi_s(ods.size(), 1e300), speedup;
  bool wrong = false;
  {  // Untimed: compiles the kernels (OpenCL builds them at first use) and warms the pools.
    problem warm = p;
    warm.iterations = 2;
    double ignored = 0;
    (void)run_mpi(device, warm, rank, ranks, ignored);
    (void)run_roam(warm, ods.back(), ignored);
  }
  // Alternating runs, best of each: the machine's noise hits both alike.
  for (int round = 0; round < repeats; ++round) {
    for (std::size_t i = 0; i < ods.size(); ++i) {
      double mpi_sum = 0, roam_sum = 0;
      mpi_s[i] = std::min(mpi_s[i], run_mpi(device, p, rank, ranks, mpi_sum));
      roam_s[i] = std::min(roam_s[i], run_roam(p, ods[i], roam_sum));
      if (std::abs(mpi_sum - roam_sum) > 1e-9 * std::max(1.0, std::abs(mpi_sum))) wrong = true;
      if (rank == 0 && round == 0 && i == 0)
        std::printf("jacobi3d: checksum %.12g (MPI) %.12g (roam)\n", mpi_sum, roam_sum);
    }
  }

  if (rank == 0) {
    std::printf("jacobi3d: %s (%s), %d ranks, %dx%dx%d per rank, %d iterations\n", backend.c_str(),
                device.info().name.c_str(), ranks, p.nx, p.ny, p.nz, p.iterations);
    if (wrong) std::printf("WRONG: roam and MPI fields differ\n");
    std::printf("%4s %12s %12s %10s\n", "od", "roam_s", "mpi_s", "speedup");
    for (std::size_t i = 0; i < ods.size(); ++i) {
      speedup.push_back(mpi_s[i] / roam_s[i]);
      std::printf("%4d %12.4f %12.4f %10.3f\n", ods[i], roam_s[i], mpi_s[i], speedup[i]);
    }
    if (command_line.json)
      std::printf(
          "{\"bench\":\"jacobi3d\",\"backend\":\"%s\",\"od\":%s,\"roam_s\":%s,\"mpi_s\":%s,"
          "\"speedup\":%s}\n",
          backend.c_str(), array(ods).c_str(), array(roam_s).c_str(), array(mpi_s).c_str(),
          array(speedup).c_str());
  }
  MPI_Finalize();
  return 0;
}
