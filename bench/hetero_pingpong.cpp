// Device-resident data bounced between two mobile objects on two ranks (thesis §5.2), next to
// the same work staged by hand with MPI, in the same program run.
//
// One hop: the receiver moves the arrived array to its device, increments every element there
// with a kernel, and sends the array on to the other rank.
// - roam: each rank holds a mobile object; bounce(hetero_object<unsigned>, hops) submits the
//   kernel and sends the object to its peer's bounce. Packing waits for the kernel and copies the
//   device's data back through the host pool; the receiver's first task moves it to its device.
// - MPI: the same device operations issued directly through the device API into a host buffer
//   from the device (page-locked under CUDA), then MPI_Send / MPI_Recv.
// Both end with every element incremented once per hop (checked; WRONG otherwise).
//
//   ./run bench hetero_pingpong [--backend opencl|host|cuda] [--sizes 64,4096,...] [--json]
// (it starts its 2 ranks itself). JSON: {"bench","backend","sizes","roam_us","mpi_us","ratio"},
// one-way hop times in microseconds, ratio = mpi_us / roam_us (1.0 is parity).
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "hetero_mobile_kernels.hpp"
#include "mobile_pair.hpp"
#include "mpi_pair.hpp"
#include "pingpong_common.hpp"

#include <roam/hetero_mobile.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace roam_bench;

roam::promise<bool>* bounced_home = nullptr;  // on rank 0: the last hop arrived (and was right)

int hops_for(std::size_t bytes) {
  if (bytes <= 4096) return 400;
  if (bytes <= 262144) return 100;
  return 20;
}

roam::launch_dims dims_for(std::size_t n) { return roam::launch_dims::linear(n, 64); }

struct endpoint {
  roam::mobile_ptr<endpoint> peer;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(peer);
  }
  // Increments `data` on this rank's device, then passes it on, `hops_left` more times.
  void bounce(roam::hetero_object<unsigned> data, int hops_left, unsigned expected) {
    const int n = static_cast<int>(data.size());
    roam::hetero_task(bounce_increment, dims_for(data.size()), roam::inout(data), n).submit();
    if (hops_left > 0) {
      peer.send<&endpoint::bounce>(data, hops_left - 1, expected);
      return;
    }
    auto values = data.to_vector();  // waits (suspending) for the kernel
    bounced_home->set_value(
        std::all_of(values.begin(), values.end(), [&](unsigned v) { return v == expected; }));
  }
};

// Rank 0 sends the array to rank 1, where the first hop runs; an even count of hops ends on
// rank 0.
double roam_one_way_us(const roam::mobile_ptr<endpoint>& remote, std::size_t bytes) {
  const std::size_t n = bytes / sizeof(unsigned);
  const int hops = hops_for(bytes);
  auto run_hops = [&](int count) {
    roam::promise<bool> done;
    bounced_home = &done;
    roam::hetero_object<unsigned> data(n, 0u);
    remote.send<&endpoint::bounce>(data, count - 1, static_cast<unsigned>(count));
    if (!done.get_future().get()) std::printf("WRONG: roam hop results (%zu bytes)\n", bytes);
  };
  run_hops(4);
  const auto start = clock_type::now();
  run_hops(hops);
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count() / hops;
}

double mpi_one_way_us(roam::device& device, std::size_t bytes, int rank) {
  const std::size_t n = bytes / sizeof(unsigned);
  const int hops = hops_for(bytes);
  roam::device_buffer on_device = device.allocate(bytes);
  auto* staging = static_cast<unsigned*>(device.allocate_host(bytes));
  const int count = static_cast<int>(n), peer = 1 - rank;
  auto hop = [&] {
    const auto up = device.copy_to_device(roam::device_queue::host_to_device(), on_device, 0,
                                          staging, bytes, {});
    const roam::kernel_argument arguments[] = {roam::kernel_argument::of_buffer(on_device),
                                               roam::kernel_argument::of_value(count)};
    const auto computed = device.launch(roam::device_queue::compute(0), bounce_increment,
                                        dims_for(n), arguments, 0, std::span(&up, 1));
    device
        .copy_to_host(roam::device_queue::device_to_host(), staging, on_device, 0, bytes,
                      std::span(&computed, 1))
        .wait();
  };
  // As the roam version: rank 0 sends the array to rank 1, which runs the first hop; an even
  // count of hops ends on rank 0, which checks.
  auto run_hops = [&](int total) {
    std::fill(staging, staging + n, 0u);
    if (rank == 0) MPI_Send(staging, count, MPI_UNSIGNED, peer, 7, MPI_COMM_WORLD);
    for (int h = 0; h < total; ++h) {
      if ((h % 2 == 0 ? 1 : 0) != rank) continue;
      MPI_Recv(staging, count, MPI_UNSIGNED, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      hop();
      if (h + 1 < total) MPI_Send(staging, count, MPI_UNSIGNED, peer, 7, MPI_COMM_WORLD);
    }
    if (rank == 0 && !std::all_of(staging, staging + n,
                                  [&](unsigned v) { return v == static_cast<unsigned>(total); }))
      std::printf("WRONG: MPI hop results (%zu bytes)\n", bytes);
  };
  sleepy_barrier();
  run_hops(4);
  sleepy_barrier();
  const auto start = clock_type::now();
  run_hops(hops);
  const double us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
  device.release_host(staging, bytes);
  device.release(on_device);
  return us / hops;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = roam::backend_built(roam::backend::opencl) ? "opencl" : "host";
  std::vector<std::size_t> sizes = {64, 4096, 65536, 1048576};
  int repeats = 3;
  roam_bench::options_with_json command_line("hetero_pingpong");
  command_line.add("--backend", backend, "opencl, host or cuda")
      .add("--sizes", sizes, "array sizes in bytes")
      .add("--repeats", repeats, "measurements of each side (the best counts)")
      .parse(argc, argv);
  const int rank = init_mpi_pair(argc, argv, "hetero_pingpong");

  auto options = roam::hetero_options::from_environment();  // ROAM_HETERO_* apply too
  options.backends = backend;
  options.host_separate_memory = true;  // the host backend then copies like a discrete device
  options.host_threads = 1;
  roam::hetero_runtime devices(options);
  roam::device& device = *devices.devices().front();

  std::vector<double> roam_us(sizes.size(), 1e300), mpi_us(sizes.size(), 1e300);
  roam::config cfg = roam::config::from_environment();
  cfg.transport = roam::transport_kind::mpi;
  cfg.threads = 1;
  // Alternating rounds, best of each: the machine's noise hits both alike.
  for (int round = 0; round < repeats; ++round) {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      mpi_us[i] = std::min(mpi_us[i], mpi_one_way_us(device, sizes[i], rank));
    roam::run(cfg, [&] {
      const auto both = paired_endpoints<endpoint>();
      if (roam::this_node() == 0)
        for (std::size_t i = 0; i < sizes.size(); ++i)
          roam_us[i] = std::min(roam_us[i], roam_one_way_us(both[1], sizes[i]));
      roam::barrier();
      roam::destroy(both[roam::this_node()]).get();
    });
    sleepy_barrier();
  }

  if (rank == 0) {
    std::printf("hetero_pingpong: %s (%s), one-way hop: device kernel + transfers + message\n",
                backend.c_str(), device.info().name.c_str());
    std::printf("%10s %12s %12s %12s\n", "bytes", "roam_us", "mpi_us", "mpi/roam");
    std::vector<double> ratio;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      ratio.push_back(mpi_us[i] / roam_us[i]);
      std::printf("%10zu %12.1f %12.1f %12.3f\n", sizes[i], roam_us[i], mpi_us[i], ratio[i]);
    }
    if (command_line.json)
      std::printf(
          "{\"bench\":\"hetero_pingpong\",\"backend\":\"%s\",\"sizes\":%s,\"roam_us\":%s,"
          "\"mpi_us\":%s,\"ratio\":%s}\n",
          backend.c_str(), array(sizes).c_str(), array(roam_us).c_str(), array(mpi_us).c_str(),
          array(ratio).c_str());
  }
  MPI_Finalize();
  return 0;
}
