// hetero_dgemm: for each size, `iterations` rounds of allocate + transfer + DGEMM + read back,
// through roam's hetero tasks and written directly against the backend (OpenCL or CUDA), side
// by side in one run (thesis §5.1.4). ratio = direct time / roam time (1.0 is parity).
//
//   hetero_dgemm [--backend opencl|cuda|host] [--sizes 64,128,...] [--iterations N] [--json]
//
// Both sides run the same tiled algorithm: roam's is the kernel below, written once; the
// direct OpenCL side compiles the equivalent OpenCL C by hand, the direct CUDA side launches
// the `__global__` function the macro generates.
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_report.hpp"
#include "roam/hetero.hpp"

#if defined(ROAM_BENCH_OPENCL)
#include <CL/cl.h>
#endif

// 16 x 16 tiles; n must be a multiple of 16. Per-item accumulators live in local memory
// because per-item variables do not survive from one parallel region to the next.
ROAM_GROUP_KERNEL(dgemm_tiled,
                  (roam_global const double* a, roam_global const double* b, roam_global double* c,
                   int n),
                  {
                    roam_local double tile_a[16][16];
                    roam_local double tile_b[16][16];
                    roam_local double sum[16][16];
                    roam_parallel_region({
                      sum[roam_local_id(1)][roam_local_id(0)] = 0.0;
                    }) for (int t = 0; t < n / 16; ++t){roam_parallel_region({
                      const int x = (int)roam_local_id(0);
                      const int y = (int)roam_local_id(1);
                      const int row = (int)roam_group_id(1) * 16 + y;
                      const int column = (int)roam_group_id(0) * 16 + x;
                      tile_a[y][x] = a[row * n + t * 16 + x];
                      tile_b[y][x] = b[(t * 16 + y) * n + column];
                    }) roam_parallel_region({
                      const int x = (int)roam_local_id(0);
                      const int y = (int)roam_local_id(1);
                      double s = sum[y][x];
                      for (int k = 0; k < 16; ++k) s += tile_a[y][k] * tile_b[k][x];
                      sum[y][x] = s;
                    })} roam_parallel_region({
                      const int row = (int)roam_group_id(1) * 16 + (int)roam_local_id(1);
                      const int column = (int)roam_group_id(0) * 16 + (int)roam_local_id(0);
                      c[row * n + column] = sum[roam_local_id(1)][roam_local_id(0)];
                    })
                  })

namespace {

using clock_type = std::chrono::steady_clock;

struct inputs {
  std::vector<double> a, b;
};

inputs make_inputs(int n) {
  inputs in{std::vector<double>(std::size_t(n) * n), std::vector<double>(std::size_t(n) * n)};
  std::mt19937 random(n);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& v : in.a) v = u(random);
  for (auto& v : in.b) v = u(random);
  return in;
}

/// Spot-checks a few entries of c against a serial computation.
void check(const inputs& in, const std::vector<double>& c, int n, const char* who) {
  for (int probe = 0; probe < 16; ++probe) {
    const int i = (probe * 7919) % n;
    const int j = (probe * 104729) % n;
    double expected = 0;
    for (int k = 0; k < n; ++k)
      expected += in.a[std::size_t(i) * n + k] * in.b[std::size_t(k) * n + j];
    if (std::abs(c[std::size_t(i) * n + j] - expected) > 1e-9 * n) {
      std::fprintf(stderr, "hetero_dgemm: WRONG result from %s at n=%d (%d,%d): %g vs %g\n", who, n,
                   i, j, c[std::size_t(i) * n + j], expected);
      std::exit(1);
    }
  }
}

double time_roam(const inputs& in, int n, int iterations, std::vector<double>& c) {
  // The objects hold the host data, as an application's would; each round frees their device
  // copies (remove_from_devices), so every round allocates, transfers and computes again, as
  // the direct version does.
  const auto dims = roam::launch_dims::grid2d(n, n, 16);
  roam::hetero_object<double> da{std::span<const double>(in.a)};
  roam::hetero_object<double> db{std::span<const double>(in.b)};
  roam::hetero_object<double> dc(std::size_t(n) * n);
  auto once = [&] {
    roam::hetero_task(dgemm_tiled, dims, roam::in(da), roam::in(db), roam::out(dc), n).submit();
    (void)dc.request(roam::data_access::read).get();
    dc.release();
    da.remove_from_devices();
    db.remove_from_devices();
    dc.remove_from_devices();
  };
  once();  // warm-up: kernel compilation, pools
  const auto start = clock_type::now();
  for (int i = 0; i < iterations; ++i) once();
  roam::hetero_runtime::current().wait_all();
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  auto view = dc.request(roam::data_access::read).get();
  std::memcpy(c.data(), view.data(), c.size() * sizeof(double));
  dc.release();
  return seconds;
}

#if defined(ROAM_BENCH_OPENCL)
constexpr const char* opencl_dgemm = R"(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void dgemm(__global const double* a, __global const double* b, __global double* c, int n) {
  __local double tile_a[16][16];
  __local double tile_b[16][16];
  const int x = get_local_id(0), y = get_local_id(1);
  const int row = get_group_id(1) * 16 + y, column = get_group_id(0) * 16 + x;
  double s = 0.0;
  for (int t = 0; t < n / 16; ++t) {
    tile_a[y][x] = a[row * n + t * 16 + x];
    tile_b[y][x] = b[(t * 16 + y) * n + column];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < 16; ++k) s += tile_a[y][k] * tile_b[k][x];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  c[row * n + column] = s;
}
)";

void cl_check(cl_int status, const char* what) {
  if (status != CL_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + std::to_string(status));
}

double time_direct_opencl(const inputs& in, int n, int iterations, std::vector<double>& c) {
  cl_platform_id platform;
  cl_device_id device;
  cl_check(clGetPlatformIDs(1, &platform, nullptr), "clGetPlatformIDs");
  cl_check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
  cl_int status;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  cl_check(status, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &status);
  cl_check(status, "clCreateCommandQueue");
  const char* source = opencl_dgemm;
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &status);
  cl_check(status, "clCreateProgramWithSource");
  cl_check(clBuildProgram(program, 1, &device, "-cl-std=CL1.2", nullptr, nullptr),
           "clBuildProgram");
  cl_kernel kernel = clCreateKernel(program, "dgemm", &status);
  cl_check(status, "clCreateKernel");
  const std::size_t bytes = std::size_t(n) * n * sizeof(double);
  const std::size_t global[2] = {std::size_t(n), std::size_t(n)};
  const std::size_t local[2] = {16, 16};
  auto once = [&] {
    cl_mem da = clCreateBuffer(context, CL_MEM_READ_ONLY, bytes, nullptr, &status);
    cl_mem db = clCreateBuffer(context, CL_MEM_READ_ONLY, bytes, nullptr, &status);
    cl_mem dc = clCreateBuffer(context, CL_MEM_WRITE_ONLY, bytes, nullptr, &status);
    cl_check(clEnqueueWriteBuffer(queue, da, CL_FALSE, 0, bytes, in.a.data(), 0, nullptr, nullptr),
             "write");
    cl_check(clEnqueueWriteBuffer(queue, db, CL_FALSE, 0, bytes, in.b.data(), 0, nullptr, nullptr),
             "write");
    clSetKernelArg(kernel, 0, sizeof(cl_mem), &da);
    clSetKernelArg(kernel, 1, sizeof(cl_mem), &db);
    clSetKernelArg(kernel, 2, sizeof(cl_mem), &dc);
    clSetKernelArg(kernel, 3, sizeof(int), &n);
    cl_check(clEnqueueNDRangeKernel(queue, kernel, 2, nullptr, global, local, 0, nullptr, nullptr),
             "launch");
    cl_check(clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, bytes, c.data(), 0, nullptr, nullptr),
             "read");
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
  };
  once();
  const auto start = clock_type::now();
  for (int i = 0; i < iterations; ++i) once();
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return seconds;
}
#endif

#if defined(__CUDACC__)
void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

double time_direct_cuda(const inputs& in, int n, int iterations, std::vector<double>& c) {
  const std::size_t bytes = std::size_t(n) * n * sizeof(double);
  const dim3 grid(n / 16, n / 16), block(16, 16);
  auto once = [&] {
    double *da, *db, *dc;
    cuda_check(cudaMalloc(&da, bytes), "cudaMalloc");
    cuda_check(cudaMalloc(&db, bytes), "cudaMalloc");
    cuda_check(cudaMalloc(&dc, bytes), "cudaMalloc");
    cuda_check(cudaMemcpy(da, in.a.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_check(cudaMemcpy(db, in.b.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    roam_cuda_dgemm_tiled<<<grid, block>>>(da, db, dc, n);
    cuda_check(cudaGetLastError(), "launch");
    cuda_check(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
  };
  once();
  const auto start = clock_type::now();
  for (int i = 0; i < iterations; ++i) once();
  return std::chrono::duration<double>(clock_type::now() - start).count();
}
#endif

void check_sizes(const std::vector<int>& sizes) {
  for (int n : sizes)
    if (n <= 0 || n % 16 != 0)
      throw std::invalid_argument("sizes must be positive multiples of 16");
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend;  // empty: CUDA when a GPU is there, else OpenCL
  std::vector<int> sizes = {64, 128, 256, 512, 1024};
  int iterations = 100;
  bool json = false;
  roam_bench::options("hetero_dgemm")
      .add("--backend", backend, "opencl, cuda or host (default: cuda with a GPU, else opencl)")
      .add("--sizes", sizes, "matrix orders, multiples of 16")
      .add("--iterations", iterations, "rounds per size and measurement")
      .flag("--json", json, "end with the results as one JSON line")
      .parse(argc, argv);
  check_sizes(sizes);
  if (iterations < 1) {
    std::fprintf(stderr, "hetero_dgemm: --iterations must be at least 1\n");
    return 2;
  }
  if (backend.empty()) {  // default: CUDA when a GPU is there, else OpenCL
    roam::device_discovery_options probe;
    probe.backends = "cuda";
    backend = roam::backend_built(roam::backend::cuda) && !roam::discover_devices(probe).empty()
                  ? "cuda"
                  : "opencl";
  }
  auto options = roam::hetero_options::from_environment();  // ROAM_HETERO_* apply too
  options.backends = backend;
  roam::hetero_runtime runtime(options);
  std::printf("hetero_dgemm: %s (%s), %d iterations per size\n", backend.c_str(),
              runtime.devices().front()->info().name.c_str(), iterations);
  std::printf("%8s %12s %12s %8s\n", "n", "roam s", "direct s", "ratio");
  std::vector<double> roam_s, direct_s, ratio;
  for (int n : sizes) {
    const auto in = make_inputs(n);
    std::vector<double> c_roam(std::size_t(n) * n), c_direct(std::size_t(n) * n);
    double direct = 0;
    double roam_time = 0;
    // Alternate the two sides, best of three each, so drifting machine load hits both alike.
    double best_roam = 1e300, best_direct = 1e300;
    for (int repeat = 0; repeat < 3; ++repeat) {
      roam_time = time_roam(in, n, iterations, c_roam);
      if (backend == "opencl") {
#if defined(ROAM_BENCH_OPENCL)
        direct = time_direct_opencl(in, n, iterations, c_direct);
#else
        std::fprintf(stderr, "hetero_dgemm: built without OpenCL\n");
        return 2;
#endif
      } else if (backend == "cuda") {
#if defined(__CUDACC__)
        direct = time_direct_cuda(in, n, iterations, c_direct);
#else
        std::fprintf(stderr, "hetero_dgemm: built without CUDA\n");
        return 2;
#endif
      } else {
        std::fprintf(stderr, "hetero_dgemm: no direct version for backend '%s'\n", backend.c_str());
        return 2;
      }
      best_roam = std::min(best_roam, roam_time);
      best_direct = std::min(best_direct, direct);
    }
    check(in, c_roam, n, "roam");
    check(in, c_direct, n, "direct");
    roam_s.push_back(best_roam);
    direct_s.push_back(best_direct);
    ratio.push_back(best_direct / best_roam);
    std::printf("%8d %12.4f %12.4f %8.3f\n", n, best_roam, best_direct, best_direct / best_roam);
    std::fflush(stdout);
  }
  if (json) {
    std::printf(
        "{\"bench\":\"hetero_dgemm\",\"backend\":\"%s\",\"sizes\":%s,\"roam_s\":%s,"
        "\"direct_s\":%s,\"ratio\":%s}\n",
        backend.c_str(), roam_bench::array(sizes).c_str(), roam_bench::array(roam_s).c_str(),
        roam_bench::array(direct_s).c_str(), roam_bench::array(ratio).c_str());
  }
  return 0;
}
