// The heterogeneous framework (part A of issue 7): device API, kernels written once, MSI
// coherence, dependencies, eviction, scheduling. Each test makes its own hetero_runtime on the
// backends named by ROAM_TEST_BACKENDS (ctest runs this binary once per backend set); the host
// backend alone is made to copy like a discrete device, so every set has a device with memory
// of its own and coherence is exercised everywhere.
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"  // fail_next_host_copies, the library's test hook
#include "roam/hetero.hpp"
#include "test_kernels.hpp"

namespace {

std::string test_backends() {
  const char* v = std::getenv("ROAM_TEST_BACKENDS");
  return v != nullptr ? v : "host";
}

roam::hetero_options test_options() {
  roam::hetero_options options;
  options.backends = test_backends();
  options.host_separate_memory = options.backends == "host";
  options.host_threads = 2;
  // ctest also runs the suite with ROAM_HETERO_DISPATCH=engine, the engine thread doing it all.
  options.dispatch_on_callers = roam::hetero_options::from_environment().dispatch_on_callers;
  return options;
}

/// The host backend with memory of its own: the device whose copies fail_next_host_copies can
/// make fail and whose memory cap_host_device_memory can cap (the failure tests' device).
roam::hetero_options failing_copies_options() {
  auto options = test_options();
  options.backends = "host";
  options.host_separate_memory = true;
  return options;
}

/// The first device with memory of its own (there is one in every tested backend set).
int discrete_device(const roam::hetero_runtime& rt) {
  for (auto* d : rt.devices())
    if (!d->info().shares_host_memory) return d->info().index;
  ADD_FAILURE() << "no device with memory of its own among " << test_backends();
  return 0;
}

std::vector<unsigned> iota(std::size_t n, unsigned first = 0) {
  std::vector<unsigned> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

/// x[i] += 1 for the first n elements, on device `device` (where the scheduler puts it when
/// negative), and waits for it.
void increment_and_wait(roam::hetero_object<unsigned>& x, int n, int device = -1) {
  roam::hetero_task task(increment, roam::launch_dims::linear(n), roam::inout(x), n);
  if (device >= 0) task.on_device(device);
  task.submit().wait();
}

/// y = x for n elements, on device `device`, and waits for it.
void copy_and_wait(roam::hetero_object<unsigned>& y, const roam::hetero_object<unsigned>& x, int n,
                   int device) {
  roam::hetero_task(copy_into, roam::launch_dims::linear(n), roam::out(y), roam::in(x), n)
      .on_device(device)
      .submit()
      .wait();
}

// ---- the device API ---------------------------------------------------------------------

TEST(DeviceApi, CopiesAndLaunchesChainThroughEvents) {
  roam::hetero_runtime rt(test_options());
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    const int n = 1000;
    auto input = iota(n, 5);
    std::vector<unsigned> output(n, 0);
    auto buffer = d->allocate(n * sizeof(unsigned));
    auto in = d->copy_to_device(roam::device_queue::host_to_device(), buffer, 0, input.data(),
                                n * sizeof(unsigned), {});
    const roam::kernel_argument arguments[] = {roam::kernel_argument::of_buffer(buffer),
                                               roam::kernel_argument::of_value(n)};
    auto ran = d->launch(roam::device_queue::compute(0), increment,
                         roam::launch_dims::linear(n, 64), arguments, 0, std::span(&in, 1));
    auto out = d->copy_to_host(roam::device_queue::device_to_host(), output.data(), buffer, 0,
                               n * sizeof(unsigned), std::span(&ran, 1));
    out.wait();
    EXPECT_TRUE(in.ready());
    EXPECT_TRUE(ran.ready());
    for (int i = 0; i < n; ++i) ASSERT_EQ(output[i], input[i] + 1) << i;
    d->release(buffer);
  }
}

// The host backend runs a small copy or launch whose inputs are ready on the issuing thread (a
// pool thread's wake-up costs more than such work); one that waits for a pending operation runs
// after it, as every operation does.
TEST(DeviceApi, TheHostBackendRunsSmallReadyOperationsAtOnce) {
  roam::hetero_runtime rt(failing_copies_options());
  auto* d = rt.devices().front();
  ASSERT_EQ(d->info().backend, roam::backend::host);
  const int n = 256;
  const auto bytes = n * sizeof(unsigned);
  auto input = iota(n, 1);
  auto buffer = d->allocate(bytes);
  auto in =
      d->copy_to_device(roam::device_queue::host_to_device(), buffer, 0, input.data(), bytes, {});
  EXPECT_TRUE(in.ready());
  const roam::kernel_argument arguments[] = {roam::kernel_argument::of_buffer(buffer),
                                             roam::kernel_argument::of_value(n)};
  auto small = d->launch(roam::device_queue::compute(0), increment,
                         roam::launch_dims::linear(n, 64), arguments, 0, {});
  EXPECT_TRUE(small.ready());
  // Over a million work-items (all but n idle): the pool runs it, in strips.
  auto large = d->launch(roam::device_queue::compute(1), increment,
                         roam::launch_dims::linear(std::size_t{1} << 20, 64), arguments, 0, {});
  std::vector<unsigned> output(n, 0);
  auto out = d->copy_to_host(roam::device_queue::device_to_host(), output.data(), buffer, 0, bytes,
                             std::span(&large, 1));
  out.wait();
  EXPECT_TRUE(large.ready());
  for (int i = 0; i < n; ++i) ASSERT_EQ(output[i], input[i] + 2) << i;
  d->release(buffer);
}

// A small launch of several groups is done when launch() returns even where the pool has
// threads to spare: no group of it is handed to a pool thread that could still be running it.
// Each group sleeps, so a group given away would finish after the caller's last one.
TEST(DeviceApi, ASmallLaunchOfSeveralGroupsRunsWholeOnTheIssuingThread) {
  auto options = failing_copies_options();
  options.host_threads = 4;
  roam::hetero_runtime rt(options);
  auto* d = rt.devices().front();
  ASSERT_EQ(d->info().backend, roam::backend::host);
  const roam::kernel slow_groups{
      "slow_groups",
      [](void* const* /*arguments*/, roam::kernel_ids* /*ids*/, char* /*local*/) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      },
      nullptr, nullptr, nullptr};
  for (int round = 0; round < 3; ++round) {
    auto launched = d->launch(roam::device_queue::compute(0), slow_groups,
                              roam::launch_dims::linear(256, 32), {}, 0, {});
    EXPECT_TRUE(launched.ready()) << "round " << round;
    launched.wait();
  }
}

TEST(DeviceApi, RejectsBadRequestsWithClearErrors) {
  roam::hetero_runtime rt(test_options());
  auto* d = rt.devices().front();
  EXPECT_THROW((void)d->allocate(0), roam::device_error);
  roam::kernel no_forms{"no_forms", nullptr, nullptr, nullptr, nullptr};
  auto buffer = d->allocate(64);
  try {
    (void)d->launch(roam::device_queue::compute(0), no_forms, roam::launch_dims::linear(1), {}, 0,
                    {});
    FAIL() << "a kernel without this backend's form was launched";
  } catch (const roam::device_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_forms"), std::string::npos) << e.what();
  }
  d->release(buffer);
  EXPECT_THROW(roam::hetero_options o; o.backends = "host,fpga";
               roam::hetero_runtime second(o), roam::device_error);
}

TEST(DeviceApi, CopiesOnTheDeviceMoveTheRangeAsked) {
  roam::hetero_runtime rt(test_options());
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    const std::size_t n = 1000;
    const auto bytes = n * sizeof(unsigned);
    auto input = iota(n, 3);
    std::vector<unsigned> output(n, 0);
    auto from = d->allocate(bytes);
    auto to = d->allocate(bytes);
    auto zeros =
        d->copy_to_device(roam::device_queue::host_to_device(), to, 0, output.data(), bytes, {});
    auto in = d->copy_to_device(roam::device_queue::host_to_device(), from, 0, input.data(), bytes,
                                std::span(&zeros, 1));
    // Elements [100, 600) of `from` to [200, 700) of `to`.
    auto moved =
        d->copy_on_device(roam::device_queue::compute(0), to, 200 * sizeof(unsigned), from,
                          100 * sizeof(unsigned), 500 * sizeof(unsigned), std::span(&in, 1));
    d->copy_to_host(roam::device_queue::device_to_host(), output.data(), to, 0, bytes,
                    std::span(&moved, 1))
        .wait();
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned expected = i >= 200 && i < 700 ? input[i - 100] : 0u;
      ASSERT_EQ(output[i], expected) << i;
    }
    EXPECT_THROW(
        (void)d->copy_on_device(roam::device_queue::compute(0), to, bytes - 4, from, 0, 8, {}),
        roam::device_error);
    d->release(from);
    d->release(to);
  }
}

/// Runs `launch`, which must throw a device_error whose message contains each of `parts`.
template <class Launch>
void expect_rejected(Launch&& launch, std::initializer_list<const char*> parts) {
  try {
    launch();
    ADD_FAILURE() << "accepted; expected an error saying " << *parts.begin();
  } catch (const roam::device_error& e) {
    for (const char* part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// Arguments are checked against the kernel's parameters where the task is submitted (or the
// device launch made), on every backend alike: without the check the host backend read past
// the arguments or took a scalar for a pointer, and OpenCL failed with a bare error code.
TEST(DeviceApi, ArgumentsThatDoNotMatchTheKernelAreRejected) {
  roam::hetero_runtime rt(test_options());
  const int n = 64;
  roam::hetero_object<unsigned> x(iota(n));
  roam::hetero_object<std::uint16_t> wrong_elements(n);
  // Elements that are a whole number of the pointer's (interleaved pairs) are accepted.
  roam::hetero_object<std::array<unsigned, 2>> pairs(n / 2, std::array<unsigned, 2>{4u, 5u});
  const auto dims = roam::launch_dims::linear(n);
  auto submit = [](roam::hetero_task task) { task.submit(); };
  expect_rejected([&] { submit(roam::hetero_task(increment, dims, roam::inout(x))); },
                  {"'increment'", "takes 2 arguments", "given 1"});
  expect_rejected(
      [&] { submit(roam::hetero_task(increment, dims, roam::inout(x), std::size_t{n})); },
      {"argument 2", "an integer of 4 bytes", "a scalar of 8 bytes"});
  expect_rejected([&] { submit(roam::hetero_task(increment, dims, 7, n)); },
                  {"argument 1", "pointer to device memory", "a scalar of 4 bytes"});
  expect_rejected(
      [&] { submit(roam::hetero_task(increment, dims, roam::inout(wrong_elements), n)); },
      {"argument 1", "elements of 4 bytes", "an object (elements of 2 bytes)"});
  roam::hetero_task(increment, dims, roam::inout(pairs), n).submit().wait();
  EXPECT_EQ(pairs.to_vector()[n / 2 - 1], (std::array<unsigned, 2>{5u, 6u}));
  expect_rejected([&] { submit(roam::hetero_task(fill, dims, roam::out(x), 2.0F, n)); },
                  {"argument 2", "an integer of 4 bytes", "a floating-point scalar of 4 bytes"});
  expect_rejected([] { (void)roam::launch_dims::linear(10, 0); }, {"work-group size of 0"});
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    auto buffer = d->allocate(n * sizeof(unsigned));
    const roam::kernel_argument too_few[] = {roam::kernel_argument::of_buffer(buffer)};
    expect_rejected(
        [&] { (void)d->launch(roam::device_queue::compute(0), increment, dims, too_few, 0, {}); },
        {"'increment'", "takes 2 arguments"});
    d->release(buffer);
  }
  // The rejected tasks left nothing behind: the object is as it was and takes a correct task.
  increment_and_wait(x, n);
  auto view = x.request(roam::data_access::read).get();
  for (int i = 0; i < n; ++i) ASSERT_EQ(view[i], static_cast<unsigned>(i) + 1) << i;
  x.release();
}

TEST(DeviceApi, OneRuntimeAtATime) {
  roam::hetero_runtime rt(test_options());
  EXPECT_THROW(roam::hetero_runtime second(test_options()), roam::device_error);
  EXPECT_EQ(&roam::hetero_runtime::current(), &rt);
}

// ---- kernels written once ------------------------------------------------------------------

// `top -H`, gdb and perf tell the engine's thread apart by its name.
TEST(DeviceApi, TheEngineThreadIsNamed) {
  auto threads = [] {
    std::map<std::string, std::string> names;  // thread id -> name
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::getline(comm, names[task.path().filename().string()]);
    }
    return names;
  };
  const auto before = threads();
  roam::hetero_runtime rt(test_options());
  int started = 0;  // threads of this runtime named for the engine
  for (const auto& [id, name] : threads())
    if (!before.contains(id) && name == "roam-hetero") ++started;
  EXPECT_EQ(started, 1);
}

TEST(KernelsWrittenOnce, GiveIdenticalResultsOnEveryDevice) {
  roam::hetero_runtime rt(test_options());
  const int n = 4096;
  std::mt19937 random(7);
  std::vector<unsigned> x(n), y(n);
  for (auto& v : x) v = random();
  for (auto& v : y) v = random();
  std::vector<unsigned> expected(n);
  for (int i = 0; i < n; ++i) expected[i] = y[i] * 2654435761u + x[i] + 12345u;

  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    roam::hetero_object<unsigned> xs{std::span<const unsigned>(x)};
    roam::hetero_object<unsigned> ys{std::span<const unsigned>(y)};
    roam::hetero_task t(mix_into, roam::launch_dims::linear(n, 128), roam::inout(ys), roam::in(xs),
                        2654435761u, 12345u, n);
    t.on_device(d->info().index).submit().wait();
    EXPECT_EQ(t.device(), d->info().index);
    EXPECT_EQ(ys.to_vector(), expected);
  }
}

TEST(KernelsWrittenOnce, LocalMemoryAndParallelRegions) {
  roam::hetero_runtime rt(test_options());
  const int n = 64 * 20;
  auto values = iota(n, 1);
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    roam::hetero_object<unsigned> x{std::span<const unsigned>(values)};
    roam::hetero_object<unsigned> sums(20);
    roam::hetero_task s(group_sums, roam::launch_dims::linear(n, 64), roam::in(x), roam::out(sums),
                        n);
    s.local_memory(64 * sizeof(unsigned)).on_device(d->info().index).submit();
    roam::hetero_task r(reverse_groups, roam::launch_dims::linear(n, 64), roam::inout(x));
    r.on_device(d->info().index).submit();
    r.wait();
    auto got = sums.to_vector();
    for (int g = 0; g < 20; ++g) {
      unsigned expected = 0;
      for (int i = 0; i < 64; ++i) expected += values[g * 64 + i];
      EXPECT_EQ(got[g], expected) << g;
    }
    auto reversed = x.to_vector();
    for (int g = 0; g < 20; ++g)
      for (int i = 0; i < 64; ++i) ASSERT_EQ(reversed[g * 64 + i], values[g * 64 + 63 - i]);
  }
}

TEST(KernelsWrittenOnce, IdsInTwoDimensions) {
  roam::hetero_runtime rt(test_options());
  constexpr int width = 32;
  constexpr int height = 16;
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    roam::hetero_object<unsigned> out(std::size_t{width} * height);
    roam::launch_dims dims;
    dims.groups = {4, 2, 1};
    dims.local = {8, 8, 1};
    roam::hetero_task(record_ids, dims, roam::out(out), width)
        .on_device(d->info().index)
        .submit()
        .wait();
    auto got = out.to_vector();
    for (unsigned gy = 0; gy < 16; ++gy)
      for (unsigned gx = 0; gx < 32; ++gx)
        ASSERT_EQ(got[gy * width + gx], (gx << 24) | (gy << 16) | ((gx / 8) << 8) | (gy % 8))
            << gx << "," << gy;
  }
}

TEST(KernelsWrittenOnce, IdsAndGroupCountsInThreeDimensions) {
  roam::hetero_runtime rt(test_options());
  constexpr unsigned nx = 8, ny = 6, nz = 4;
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    roam::hetero_object<unsigned> out(std::size_t{nx} * ny * nz);
    roam::launch_dims dims;
    dims.groups = {2, 3, 2};
    dims.local = {4, 2, 2};
    roam::hetero_task(record_ids_3d, dims, roam::out(out), int{nx}, int{ny})
        .on_device(d->info().index)
        .submit()
        .wait();
    auto got = out.to_vector();
    for (unsigned z = 0; z < nz; ++z)
      for (unsigned y = 0; y < ny; ++y)
        for (unsigned x = 0; x < nx; ++x) {
          const unsigned expected =
              (x << 24) | (y << 16) | (z << 8) | ((z % 2) << 6) | (2u << 4) | (3u << 2) | 2u;
          ASSERT_EQ(got[(z * ny + y) * nx + x], expected) << x << "," << y << "," << z;
        }
  }
}

/// The host form of a kernel filled by hand: x[i] += Added for i < n, over one work-group.
template <unsigned Added>
void add_on_host(void* const* arguments, roam::kernel_ids* ids, char* /*local*/) {
  auto* x = *static_cast<unsigned* const*>(arguments[0]);
  const int n = *static_cast<const int*>(arguments[1]);
  for (std::uint32_t l = 0; l < ids->local_size[0]; ++l) {
    const auto i = static_cast<int>(ids->group_id[0] * ids->local_size[0] + l);
    if (i < n) x[i] += Added;
  }
}

// A kernel given per backend (a host function and a complete OpenCL source). Two made one after
// the other at the same address run their own code: the OpenCL backend's program cache must
// not hand the second the first's program. A complete OpenCL source has no parameter for
// dynamic local memory, and asking for some is an error, not ignored.
TEST(KernelsWrittenOnce, KernelsFilledByHandRunTheirOwnForms) {
  roam::hetero_runtime rt(test_options());
  struct form {
    unsigned added;
    roam::host_kernel_function host;
    const char* opencl;
  };
  const form forms[] = {{7, &add_on_host<7>,
                         "__kernel void add_value(__global unsigned* x, int n) {"
                         "  int i = get_global_id(0); if (i < n) x[i] += 7u; }"},
                        {9, &add_on_host<9>,
                         "__kernel void add_value(__global unsigned* x, int n) {"
                         "  int i = get_global_id(0); if (i < n) x[i] += 9u; }"}};
  int ran = 0;
  for (auto* d : rt.devices()) {
    if (d->info().backend == roam::backend::cuda) continue;  // no CUDA form is given
    SCOPED_TRACE(d->info().name);
    std::optional<roam::kernel> k;
    for (const auto& f : forms) {
      k.emplace(roam::kernel{"add_value", f.host, nullptr, f.opencl, nullptr});
      roam::hetero_object<unsigned> x(64, 1u);
      roam::hetero_task(*k, roam::launch_dims::linear(64, 16), roam::inout(x), 64)
          .on_device(d->info().index)
          .submit()
          .wait();
      EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 1u + f.added));
      ++ran;
    }
    if (d->info().backend == roam::backend::opencl) {
      roam::hetero_object<unsigned> x(64, 1u);
      expect_rejected(
          [&] {
            roam::hetero_task(*k, roam::launch_dims::linear(64, 16), roam::inout(x), 64)
                .local_memory(64)
                .on_device(d->info().index)
                .submit()
                .wait();
          },
          {"no device can run kernel 'add_value'", "complete OpenCL source"});
    }
  }
  EXPECT_GT(ran, 0);
}

TEST(KernelsWrittenOnce, DoublePrecisionDgemm) {
  roam::hetero_runtime rt(test_options());
  constexpr int n = 48;
  constexpr std::size_t elements = std::size_t{n} * n;
  std::vector<double> a(elements), b(elements), expected(elements, 0.0);
  std::mt19937 random(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& v : a) v = u(random);
  for (auto& v : b) v = u(random);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) expected[i * n + j] += a[i * n + k] * b[k * n + j];
  for (auto* d : rt.devices()) {
    SCOPED_TRACE(d->info().name);
    roam::hetero_object<double> as{std::span<const double>(a)}, bs{std::span<const double>(b)};
    roam::hetero_object<double> cs(elements);
    roam::hetero_task(naive_dgemm, roam::launch_dims::grid2d(n, n, 16), roam::in(as), roam::in(bs),
                      roam::out(cs), n)
        .on_device(d->info().index)
        .submit()
        .wait();
    auto c = cs.to_vector();
    for (std::size_t i = 0; i < elements; ++i) ASSERT_NEAR(c[i], expected[i], 1e-12) << i;
  }
}

// ---- coherence -------------------------------------------------------------------------------

// The thesis' Fig. 38: o1 holds 7 on the CPU and the GPU; a GPU task writes 0 (the CPU copy is
// invalidated); before a CPU reader runs, the CPU copy is refreshed from the GPU.
TEST(Coherence, ThesisFigure38) {
  roam::hetero_runtime rt(test_options());
  const int gpu = discrete_device(rt);
  roam::hetero_object<unsigned> o1(256, 7u);
  EXPECT_EQ(o1.state_on_host(), roam::coherence::modified);
  EXPECT_EQ(o1.state_on(gpu), roam::coherence::invalid);

  roam::hetero_object<unsigned> sums(4);
  roam::hetero_task(group_sums, roam::launch_dims::linear(256, 64), roam::in(o1), roam::out(sums),
                    256)
      .local_memory(64 * sizeof(unsigned))
      .on_device(gpu)
      .submit()
      .wait();
  EXPECT_EQ(o1.state_on_host(), roam::coherence::shared);
  EXPECT_EQ(o1.state_on(gpu), roam::coherence::shared);
  auto before = rt.statistics();

  roam::hetero_task(fill, roam::launch_dims::linear(256, 64), roam::out(o1), 0u, 256)
      .on_device(gpu)
      .submit()
      .wait();  // t0
  EXPECT_EQ(o1.state_on(gpu), roam::coherence::modified);
  EXPECT_EQ(o1.state_on_host(), roam::coherence::invalid);
  auto after_write = rt.statistics();
  EXPECT_EQ(after_write.copies_to_device, before.copies_to_device)
      << "an out() argument moved data";

  auto view = o1.request(roam::data_access::read).get();  // t1, a CPU reader
  for (unsigned v : view) ASSERT_EQ(v, 0u);
  o1.release();
  EXPECT_EQ(o1.state_on_host(), roam::coherence::shared);
  EXPECT_EQ(o1.state_on(gpu), roam::coherence::shared);
  auto after_read = rt.statistics();
  EXPECT_EQ(after_read.copies_to_host, after_write.copies_to_host + 1);
  EXPECT_EQ(after_read.bytes_to_host, after_write.bytes_to_host + 256 * sizeof(unsigned));

  // A second read needs no transfer: both copies are Shared.
  (void)o1.to_vector();
  EXPECT_EQ(rt.statistics().copies_to_host, after_read.copies_to_host);
  // A host write invalidates the device copy; the next device reader fetches it again.
  auto w = o1.request(roam::data_access::read_write).get();
  w[0] = 41;
  o1.release();
  EXPECT_EQ(o1.state_on(gpu), roam::coherence::invalid);
  roam::hetero_task(increment, roam::launch_dims::linear(256, 64), roam::inout(o1), 256)
      .on_device(gpu)
      .submit()
      .wait();
  EXPECT_EQ(rt.statistics().copies_to_device, after_read.copies_to_device + 1);
  EXPECT_EQ(o1.to_vector()[0], 42u);
}

// state_on() may be called from any thread while tasks change the states (the ThreadSanitizer
// run checks that the read is synchronized with the engine's writes).
TEST(Coherence, StatesMayBeReadWhileTasksChangeThem) {
  roam::hetero_runtime rt(test_options());
  const int d = discrete_device(rt);
  const int n = 256;
  roam::hetero_object<unsigned> x(n, 0u);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread watcher([&] {
    while (!done.load()) {
      const auto device = x.state_on(d);
      const auto host = x.state_on_host();
      // Never two Modified copies, whatever the moment.
      EXPECT_FALSE(device == roam::coherence::modified && host == roam::coherence::modified);
      reads.fetch_add(1);
    }
  });
  for (int i = 0; i < 50; ++i) {
    roam::hetero_task(increment, roam::launch_dims::linear(n), roam::inout(x), n)
        .on_device(d)
        .submit();
    if (i % 10 == 9) {
      EXPECT_EQ(x.to_vector()[0], static_cast<unsigned>(i + 1));
    }
  }
  rt.wait_all();
  while (reads.load() == 0) std::this_thread::yield();
  done = true;
  watcher.join();
  EXPECT_EQ(x.state_on(d), roam::coherence::shared);
  EXPECT_EQ(x.state_on_host(), roam::coherence::shared);
}

// A moved-from handle is empty: no data, size 0, Invalid everywhere; calls that need data
// throw instead of dereferencing nothing.
TEST(Coherence, AMovedFromObjectIsEmpty) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(10, 1u);
  roam::hetero_object<unsigned> y(std::move(x));
  EXPECT_FALSE(x);  // NOLINT(bugprone-use-after-move): what a moved-from handle does is tested
  EXPECT_EQ(x.size(), 0u);
  EXPECT_EQ(x.state_on_host(), roam::coherence::invalid);
  EXPECT_EQ(x.state_on(0), roam::coherence::invalid);
  EXPECT_THROW(x.release(), roam::device_error);
  EXPECT_THROW((void)x.request(roam::data_access::read), roam::device_error);
  EXPECT_THROW(
      roam::hetero_task(increment, roam::launch_dims::linear(10), roam::inout(x), 10).submit(),
      roam::device_error);
  EXPECT_EQ(y.size(), 10u);
  EXPECT_EQ(y.to_vector(), std::vector<unsigned>(10, 1u));
  roam::hetero_object<unsigned> z;
  z = std::move(y);
  EXPECT_EQ(y.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(z.to_vector(), std::vector<unsigned>(10, 1u));
}

TEST(Coherence, SharedHostMemoryNeedsNoCopies) {
  roam::hetero_options options;
  options.backends = "host";
  options.host_threads = 2;
  roam::hetero_runtime rt(options);
  ASSERT_TRUE(rt.devices().front()->info().shares_host_memory);
  roam::hetero_object<unsigned> x(1000, 1u);
  for (int i = 0; i < 5; ++i)
    roam::hetero_task(increment, roam::launch_dims::linear(1000), roam::inout(x), 1000).submit();
  auto v = x.to_vector();
  EXPECT_EQ(v, std::vector<unsigned>(1000, 6u));
  EXPECT_EQ(rt.statistics().copies_to_device, 0u);
  EXPECT_EQ(rt.statistics().copies_to_host, 0u);
}

// Random task sequences over several objects and every device, checked against the same
// sequence replayed on plain host vectors.
TEST(Coherence, RandomSequencesMatchAHostReplay) {
  roam::hetero_runtime rt(test_options());
  const int devices = static_cast<int>(rt.devices().size());
  const int n = 300;
  const int objects = 5;
  std::mt19937 random(2024);
  std::vector<std::vector<unsigned>> replay;
  std::vector<roam::hetero_object<unsigned>> data;
  for (int o = 0; o < objects; ++o) {
    replay.push_back(iota(n, 100u * o));
    data.emplace_back(std::span<const unsigned>(replay.back()));
  }
  for (int step = 0; step < 300; ++step) {
    const int kind = static_cast<int>(random() % 10);
    const int y = static_cast<int>(random() % objects);
    const int x = static_cast<int>(random() % objects);
    const int device = static_cast<int>(random() % devices);
    if (kind < 6 && x != y) {
      const unsigned a = random() | 1u;
      const unsigned k = random();
      roam::hetero_task(mix_into, roam::launch_dims::linear(n, 64), roam::inout(data[y]),
                        roam::in(data[x]), a, k, n)
          .on_device(device)
          .submit();
      for (int i = 0; i < n; ++i) replay[y][i] = replay[y][i] * a + replay[x][i] + k;
    } else if (kind < 7) {
      const unsigned value = random();
      roam::hetero_task(fill, roam::launch_dims::linear(n, 64), roam::out(data[y]), value, n)
          .on_device(device)
          .submit();
      std::fill(replay[y].begin(), replay[y].end(), value);
    } else if (kind < 8) {
      auto view = data[y].request(roam::data_access::read_write).get();
      ASSERT_TRUE(std::equal(view.begin(), view.end(), replay[y].begin())) << "step " << step;
      view[step % n] ^= 0x5a5a5a5au;
      replay[y][step % n] ^= 0x5a5a5a5au;
      data[y].release();
    } else if (kind < 9) {
      auto view = data[y].request(roam::data_access::read).get();
      ASSERT_TRUE(std::equal(view.begin(), view.end(), replay[y].begin())) << "step " << step;
      data[y].release();
    } else if (step % 3 != 2) {  // a range: read (waited for) or write (not waited for)
      const auto first = static_cast<std::ptrdiff_t>(random() % n);
      const auto count = static_cast<std::size_t>(random() % (n - first) + 1);
      const auto at = static_cast<std::size_t>(first);
      std::vector<unsigned> part(count);
      if (step % 3 == 0) {
        data[y].read_range(at, std::span(part)).wait();
        ASSERT_TRUE(std::equal(part.begin(), part.end(), replay[y].begin() + first)) << step;
      } else {
        for (auto& v : part) v = random();
        (void)data[y].write_range(at, std::span<const unsigned>(part));
        std::copy(part.begin(), part.end(), replay[y].begin() + first);
      }
    } else {
      data[y].remove_from_devices();
    }
  }
  rt.wait_all();
  for (int o = 0; o < objects; ++o) EXPECT_EQ(data[o].to_vector(), replay[o]) << "object " << o;
}

// ---- range copies ------------------------------------------------------------------------------

TEST(RangeCopies, ReadAPartStraightFromTheDeviceWithoutChangingStates) {
  roam::hetero_runtime rt(test_options());
  const int gpu = discrete_device(rt);
  roam::hetero_object<unsigned> x(1000, 0u);
  const auto before = rt.statistics();
  roam::hetero_task(fill, roam::launch_dims::linear(1000, 64), roam::out(x), 5u, 1000)
      .on_device(gpu)
      .submit();
  roam::hetero_task(increment, roam::launch_dims::linear(1000, 64), roam::inout(x), 1000)
      .on_device(gpu)
      .submit();
  std::vector<unsigned> part(10, 0u);
  const auto read = x.read_range(100, std::span(part));  // after the increment
  // A later writer waits for the read: the read sees 6, never 9.
  roam::hetero_task(fill, roam::launch_dims::linear(1000, 64), roam::out(x), 9u, 1000)
      .on_device(gpu)
      .submit();
  read.wait();
  EXPECT_EQ(part, std::vector<unsigned>(10, 6u));
  rt.wait_all();
  EXPECT_EQ(x.state_on(gpu), roam::coherence::modified);
  EXPECT_EQ(x.state_on_host(), roam::coherence::invalid) << "the read fetched the whole object";
  const auto after = rt.statistics();
  EXPECT_EQ(after.copies_to_host, before.copies_to_host);
  EXPECT_EQ(after.copies_to_device, before.copies_to_device);
  EXPECT_EQ(after.range_transfers, before.range_transfers + 1);
  EXPECT_EQ(after.range_bytes, before.range_bytes + 10 * sizeof(unsigned));
  x.read_range(990, std::span(part)).wait();
  EXPECT_EQ(part, std::vector<unsigned>(10, 9u));
}

TEST(RangeCopies, WriteAPartIntoEveryValidCopy) {
  roam::hetero_runtime rt(test_options());
  const int gpu = discrete_device(rt);
  roam::hetero_object<unsigned> x(1000, 1u);
  roam::hetero_task(increment, roam::launch_dims::linear(1000, 64), roam::inout(x), 1000)
      .on_device(gpu)
      .submit()
      .wait();  // x = 2, valid on the device only
  const auto before = rt.statistics();
  const std::vector<unsigned> sevens(3, 7u);
  (void)x.write_range(10, std::span(sevens));
  // Ordered before the next task, and the object stays on the device.
  roam::hetero_task(increment, roam::launch_dims::linear(1000, 64), roam::inout(x), 1000)
      .on_device(gpu)
      .submit()
      .wait();
  EXPECT_EQ(x.state_on(gpu), roam::coherence::modified);
  EXPECT_EQ(x.state_on_host(), roam::coherence::invalid);
  auto middle = rt.statistics();
  EXPECT_EQ(middle.copies_to_device, before.copies_to_device) << "the write moved the object";
  EXPECT_EQ(middle.copies_to_host, before.copies_to_host);
  EXPECT_EQ(middle.range_transfers, before.range_transfers + 1);
  auto expected = std::vector<unsigned>(1000, 3u);
  std::fill(expected.begin() + 10, expected.begin() + 13, 8u);
  EXPECT_EQ(x.to_vector(), expected);  // both copies Shared from here on

  // Shared on the host and the device: both take the bytes, both stay valid.
  middle = rt.statistics();
  const std::vector<unsigned> hundred{100u};
  const auto write = x.write_range(999, std::span(hundred));
  EXPECT_EQ(x.to_vector()[999], 100u) << "a later host read came before the write";
  write.wait();
  EXPECT_EQ(x.state_on_host(), roam::coherence::shared);
  EXPECT_EQ(x.state_on(gpu), roam::coherence::shared);
  EXPECT_EQ(rt.statistics().copies_to_host, middle.copies_to_host);
  roam::hetero_task(increment, roam::launch_dims::linear(1000, 64), roam::inout(x), 1000)
      .on_device(gpu)
      .submit();  // reads the device's copy, which must hold the write too
  EXPECT_EQ(x.to_vector()[999], 101u);
  EXPECT_EQ(rt.statistics().copies_to_device, middle.copies_to_device);
}

/// A contiguous range of unsigned that owns its elements and counts its destructions, noting
/// one on a backend's own thread: neither the thread that made it nor the engine thread.
struct counted_values {
  std::vector<unsigned> values;
  std::shared_ptr<std::atomic<int>> destroyed;
  std::shared_ptr<std::atomic<bool>> on_a_backend_thread = std::make_shared<std::atomic<bool>>();
  std::thread::id creator = std::this_thread::get_id();
  counted_values(std::size_t n, unsigned v, std::shared_ptr<std::atomic<int>> counter)
      : values(n, v), destroyed(std::move(counter)) {}
  counted_values(counted_values&& other) noexcept = default;
  counted_values(const counted_values&) = delete;
  counted_values& operator=(const counted_values&) = delete;
  counted_values& operator=(counted_values&&) = delete;
  ~counted_values() {
    if (!destroyed) return;  // moved from
    ++*destroyed;
    std::array<char, 16> name{};
    pthread_getname_np(pthread_self(), name.data(), name.size());
    if (std::this_thread::get_id() != creator && std::string(name.data()) != "roam-hetero")
      *on_a_backend_thread = true;
  }
  unsigned* begin() { return values.data(); }
  unsigned* end() { return values.data() + values.size(); }
  const unsigned* begin() const { return values.data(); }
  const unsigned* end() const { return values.data() + values.size(); }
};

}  // namespace

// A container of the application's own, declared as owning its elements (opt-in).
template <>
inline constexpr bool roam::owns_contiguous_elements<counted_values> = true;

namespace {

TEST(RangeCopies, AWriteTakesItsSourceOverAndStagesOnlyWhereADeviceNeedsIt) {
  roam::hetero_runtime rt(test_options());
  const int gpu = discrete_device(rt);
  // CUDA copies asynchronously only from page-locked memory; the host and OpenCL backends from
  // any memory.
  const bool pageable_staged = rt.devices()[gpu]->info().backend == roam::backend::cuda;
  roam::hetero_object<unsigned> x(1000, 1u);
  roam::hetero_task(increment, roam::launch_dims::linear(1000, 64), roam::inout(x), 1000)
      .on_device(gpu)
      .submit()
      .wait();  // x = 2, valid on the device only
  auto before = rt.statistics();

  // A span is copied before the call returns, so its memory may change at once.
  std::vector<unsigned> sevens(3, 7u);
  const auto span_write = x.write_range(10, std::span(sevens));
  std::fill(sevens.begin(), sevens.end(), 0u);
  span_write.wait();
  EXPECT_EQ(rt.statistics().staged_range_copies, before.staged_range_copies + 1);

  // A source taken over is kept until the transfer is done, then destroyed, never copied where
  // the device copies from its memory directly.
  auto destroyed = std::make_shared<std::atomic<int>>(0);
  counted_values nines(5, 9u, destroyed);
  const auto backend_thread = nines.on_a_backend_thread;
  const auto write = x.write_range(20, std::move(nines));
  write.wait();
  rt.wait_all();  // the spent source is dropped by then
  EXPECT_EQ(destroyed->load(), 1) << "the source taken over outlived its write";
  EXPECT_FALSE(backend_thread->load()) << "a backend's thread ran the application's destructor";
  EXPECT_EQ(rt.statistics().staged_range_copies,
            before.staged_range_copies + (pageable_staged ? 2 : 1));
  EXPECT_EQ(x.state_on(gpu), roam::coherence::modified) << "the write moved the object";
  EXPECT_EQ(rt.statistics().copies_to_device, before.copies_to_device);

  // A view is copied at once even as an rvalue (it owns nothing), and a range outside the
  // object leaves the source with the caller.
  before = rt.statistics();
  roam::hetero_object<unsigned> y(3, 4u);
  const auto view_write = x.write_range(600, y.request(roam::data_access::read).get());
  y.release();
  view_write.wait();
  EXPECT_EQ(rt.statistics().staged_range_copies, before.staged_range_copies + 1);
  std::vector<unsigned> kept(5, 1u);
  EXPECT_THROW((void)x.write_range(998, std::move(kept)), std::out_of_range);
  // NOLINTNEXTLINE(bugprone-use-after-move): the call must not have taken it
  EXPECT_EQ(kept.size(), 5u) << "a failed call consumed its source";

  // Reads land in pageable memory directly except on CUDA.
  before = rt.statistics();
  std::vector<unsigned> part(12, 0u);
  x.read_range(10, std::span(part)).wait();
  EXPECT_EQ(rt.statistics().staged_range_copies,
            before.staged_range_copies + (pageable_staged ? 1 : 0));
  std::vector<unsigned> expected{7, 7, 7, 2, 2, 2, 2, 2, 2, 2, 9, 9};
  EXPECT_EQ(part, expected);

  // Memory locked for the devices: CUDA then copies straight into and out of it as well.
  constexpr std::size_t page = 4096;
  auto* locked = static_cast<unsigned*>(std::aligned_alloc(page, page));
  ASSERT_NE(locked, nullptr);
  const bool did_lock = roam::lock_host_memory(locked, page);
  EXPECT_EQ(did_lock, pageable_staged) << "locking is for CUDA devices only";
  before = rt.statistics();
  x.read_range(10, std::span(locked, 12)).wait();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), locked));
  EXPECT_EQ(rt.statistics().staged_range_copies, before.staged_range_copies);
  if (did_lock) roam::unlock_host_memory(locked);
  std::free(locked);
  auto all = x.to_vector();
  EXPECT_EQ(std::count(all.begin(), all.end(), 2u), 1000 - 11);
  EXPECT_EQ(all[601], 4u);
}

TEST(RangeCopies, OrderWithHeldRequestsAndCheckBounds) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(64, 1u);
  auto held = x.request(roam::data_access::read_write).get();
  const std::vector<unsigned> twos(4, 2u);
  std::vector<unsigned> part(4, 0u);
  const auto write = x.write_range(0, std::span(twos));
  const auto read = x.read_range(0, std::span(part));
  EXPECT_FALSE(write.ready()) << "a range write ran while the host held write access";
  EXPECT_FALSE(read.ready());
  held[0] = 40u;  // overwritten by the range write, which comes after
  held[5] = 50u;  // kept
  x.release();
  read.wait();
  EXPECT_TRUE(write.ready());
  EXPECT_EQ(part, twos);
  EXPECT_EQ(x.to_vector()[5], 50u);

  EXPECT_THROW((void)x.read_range(61, std::span(part)), std::out_of_range);
  EXPECT_THROW((void)x.write_range(65, std::span(twos).first(0)), std::out_of_range);
  try {
    (void)x.write_range(62, std::span(twos));
    FAIL() << "a write past the end was accepted";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("elements [62, 66) of an object of 64 elements"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(x.read_range(64, std::span(part).first(0)).ready()) << "an empty range waited";
  EXPECT_THROW((void)roam::hetero_object<unsigned>().read_range(0, std::span(part)),
               roam::device_error);
}

// ---- dependencies ------------------------------------------------------------------------------

TEST(Dependencies, TasksDoneWaitsForReadersAsWellAsWriters) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(64, 1u);
  roam::hetero_object<unsigned> sums(1);
  EXPECT_TRUE(x.tasks_done().ready()) << "nothing submitted yet";
  (void)sums.request(roam::data_access::read).get();  // holds the reader's output back
  roam::hetero_task reader(group_sums, roam::launch_dims::linear(64, 64), roam::in(x),
                           roam::out(sums), 64);
  reader.local_memory(64 * sizeof(unsigned)).submit();
  // x is only read, and its reader cannot start before sums is released.
  const auto settled = x.tasks_done();
  EXPECT_FALSE(settled.ready());
  sums.release();
  settled.wait();
  EXPECT_TRUE(reader.done());
  EXPECT_EQ(sums.to_vector()[0], 64u);
}

TEST(Dependencies, WritersWaitForHeldReadersAndReadersRunTogether) {
  roam::hetero_runtime rt(test_options());
  const int d = discrete_device(rt);
  roam::hetero_object<unsigned> x(64, 1u);
  roam::hetero_object<unsigned> sums(1);
  auto held = x.request(roam::data_access::read).get();  // a reader that stays until release
  ASSERT_EQ(held[0], 1u);
  roam::hetero_task reader(group_sums, roam::launch_dims::linear(64, 64), roam::in(x),
                           roam::out(sums), 64);
  reader.local_memory(64 * sizeof(unsigned)).on_device(d).submit();
  reader.wait();  // read-read: runs while the host still reads
  roam::hetero_task writer(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
  writer.on_device(d).submit();
  roam::hetero_task later_reader(group_sums, roam::launch_dims::linear(64, 64), roam::in(x),
                                 roam::out(sums), 64);
  later_reader.local_memory(64 * sizeof(unsigned)).on_device(d).submit();
  // Neither can finish while the host's read access is held: the writer waits for it, and the
  // later reader waits for the writer.
  EXPECT_FALSE(writer.done());
  EXPECT_FALSE(later_reader.done());
  x.release();
  later_reader.wait();
  EXPECT_TRUE(writer.done());
  EXPECT_EQ(sums.to_vector()[0], 64u * 2);
}

TEST(Dependencies, HeldWriterBlocksReadersUntilRelease) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(64, 1u);
  auto held = x.request(roam::data_access::write).get();
  std::fill(held.begin(), held.end(), 5u);
  roam::hetero_object<unsigned> sums(1);
  roam::hetero_task reader(group_sums, roam::launch_dims::linear(64, 64), roam::in(x),
                           roam::out(sums), 64);
  reader.local_memory(64 * sizeof(unsigned)).submit();
  EXPECT_FALSE(reader.done());
  x.release();
  reader.wait();
  EXPECT_EQ(sums.to_vector()[0], 5u * 64);
}

TEST(Dependencies, ExplicitAndDisabledImplicit) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(64, 1u);
  roam::hetero_object<unsigned> y(64, 1u);
  auto held = x.request(roam::data_access::read).get();
  roam::hetero_task blocked(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
  blocked.submit();
  // y is disjoint from x, but the explicit dependency makes it wait for `blocked`.
  roam::hetero_task after(increment, roam::launch_dims::linear(64), roam::inout(y), 64);
  after.add_dependency(blocked).submit();
  // Opted out of implicit dependencies: writes x while the host still reads it, before the
  // increment submitted earlier.
  roam::hetero_task unordered(fill, roam::launch_dims::linear(64), roam::out(x), 9u, 64);
  unordered.implicit_dependencies(false).submit();
  unordered.wait();
  EXPECT_FALSE(blocked.done());
  EXPECT_FALSE(after.done());
  (void)held;
  x.release();
  after.wait();
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 10u));
  EXPECT_EQ(y.to_vector(), std::vector<unsigned>(64, 2u));
}

// hetero_options::implicit_dependencies = false turns inference off for every task: a writer
// runs while the host still holds a read of its object.
TEST(Dependencies, TheRuntimesOptionTurnsImplicitDependenciesOffForAll) {
  auto options = test_options();
  options.implicit_dependencies = false;
  roam::hetero_runtime rt(options);
  roam::hetero_object<unsigned> x(64, 1u);
  auto held = x.request(roam::data_access::read).get();
  roam::hetero_task writer(fill, roam::launch_dims::linear(64), roam::out(x), 5u, 64);
  writer.submit().wait();  // would wait for the release with inference on (and hang here)
  (void)held;
  x.release();
  // Explicit dependencies still order tasks.
  roam::hetero_task first(fill, roam::launch_dims::linear(64), roam::out(x), 8u, 64);
  roam::hetero_task second(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
  first.submit();
  second.add_dependency(first).submit().wait();
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 9u));
}

// A dependency must be submitted before a task names it: one never submitted would leave the
// task waiting for ever, and two tasks naming each other would wait for each other.
TEST(Dependencies, ADependencyNotYetSubmittedIsRejected) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(64, 1u);
  roam::hetero_task first(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
  roam::hetero_task second(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
  expect_rejected([&] { second.add_dependency(first); }, {"submit `other` first"});
  // Nothing was registered: both still run, in order once `first` is submitted.
  first.submit();
  second.add_dependency(first).submit().wait();
  rt.wait_all();
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 3u));
}

TEST(Dependencies, WriteChainsSerializeAcrossDevices) {
  roam::hetero_runtime rt(test_options());
  const int devices = static_cast<int>(rt.devices().size());
  roam::hetero_object<unsigned> x(1000, 0u);
  for (int i = 0; i < 40; ++i) {
    roam::hetero_task(increment, roam::launch_dims::linear(1000), roam::inout(x), 1000)
        .on_device(i % devices)
        .submit();
  }
  rt.wait_all();
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(1000, 40u));
}

// Hundreds of unfinished tasks on one object: the engine's per-object lists (users, for
// tasks_done, and readers since the last writer) prune themselves only once they have doubled,
// and a dependency named twice is recorded once. Neither may lose a task still waiting: here the
// first reader waits longest (its output is held), so it is the oldest entry of both lists.
TEST(Dependencies, LongQueuesOnOneObjectKeepEveryOrdering) {
  roam::hetero_runtime rt(test_options());
  constexpr int readers = 300;
  roam::hetero_object<unsigned> x(64, 1u);
  std::vector<roam::hetero_object<unsigned>> outputs(readers);
  std::vector<roam::hetero_task> reads;
  for (auto& y : outputs) {
    y = roam::hetero_object<unsigned>(64, 0u);
    (void)y.request(roam::data_access::write).get();  // the reader waits for its release
    reads.emplace_back(mix_into, roam::launch_dims::linear(64), roam::inout(y), roam::in(x), 0u, 0u,
                       64);  // y = x
    reads.back().submit();
  }
  roam::hetero_task writer(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
  writer.add_dependency(reads[1]).add_dependency(reads[2]).add_dependency(reads[1]).submit();
  const auto settled = x.tasks_done();
  for (int i = 1; i < readers; ++i) outputs[i].release();
  for (int i = 1; i < readers; ++i) reads[i].wait();
  EXPECT_FALSE(settled.ready()) << "tasks_done forgot the first reader";
  EXPECT_FALSE(writer.done()) << "the writer overtook the first reader";
  outputs[0].release();
  settled.wait();
  EXPECT_TRUE(writer.done());
  EXPECT_EQ(outputs[0].to_vector(), std::vector<unsigned>(64, 1u));
  for (int i = 1; i < readers; ++i)
    EXPECT_EQ(outputs[i].to_vector(), std::vector<unsigned>(64, 1u)) << "reader " << i;
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 2u));
}

// ---- memory ------------------------------------------------------------------------------------

TEST(Memory, EvictsLeastRecentlyUsedUnderASmallLimit) {
  auto options = test_options();
  options.memory_limit =
      std::size_t{3} * 4096 * sizeof(unsigned);  // room for three objects per device
  roam::hetero_runtime rt(options);
  const int d = discrete_device(rt);
  const int n = 4096;
  std::vector<roam::hetero_object<unsigned>> objects;
  objects.reserve(8);
  for (int i = 0; i < 8; ++i) objects.emplace_back(n, static_cast<unsigned>(i));
  for (int round = 0; round < 3; ++round)
    for (auto& o : objects)
      roam::hetero_task(increment, roam::launch_dims::linear(n), roam::inout(o), n)
          .on_device(d)
          .submit();
  rt.wait_all();
  const auto s = rt.statistics();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LE(s.device_bytes_in_use, options.memory_limit * rt.devices().size());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(objects[i].to_vector(), std::vector<unsigned>(n, i + 3u)) << "object " << i;
}

TEST(Memory, TheLeastRecentlyUsedCopyIsEvictedFirst) {
  auto options = test_options();
  options.memory_limit = std::size_t{3} * 4096 * sizeof(unsigned);  // three objects per device
  roam::hetero_runtime rt(options);
  const int d = discrete_device(rt);
  const int n = 4096;
  std::vector<roam::hetero_object<unsigned>> objects;
  objects.reserve(4);
  for (int i = 0; i < 4; ++i) objects.emplace_back(n, static_cast<unsigned>(i));
  auto use = [&](int i) { increment_and_wait(objects[i], n, d); };
  use(0);
  use(1);
  use(2);
  use(0);  // object 1 is now the least recently used: not the oldest allocation, object 0
  use(3);
  EXPECT_EQ(rt.statistics().evictions, 1u);
  EXPECT_EQ(objects[1].state_on(d), roam::coherence::invalid);
  for (int i : {0, 2, 3}) EXPECT_EQ(objects[i].state_on(d), roam::coherence::modified) << i;
  const std::array<unsigned, 4> expected{2, 2, 3, 4};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(objects[i].to_vector(), std::vector<unsigned>(n, expected[i])) << "object " << i;
}

// One host-backend thread with memory of its own: the thread that completes a task is the one
// that would run the write-back an eviction needs. Its drain must leave such evictions (and the
// range copies' objects still in use) to the engine thread instead of waiting for itself.
TEST(Memory, EvictionsNeverWaitOnTheThreadThatCompletes) {
  auto options = test_options();
  options.backends = "host";
  options.host_separate_memory = true;
  options.host_threads = 1;
  options.memory_limit = std::size_t{2} * 4096 * sizeof(unsigned);
  roam::hetero_runtime rt(options);
  const int n = 4096;
  std::vector<roam::hetero_object<unsigned>> objects;
  objects.reserve(6);
  for (int i = 0; i < 6; ++i) objects.emplace_back(n, static_cast<unsigned>(i));
  std::vector<unsigned> part(8);
  for (int round = 0; round < 4; ++round) {
    for (auto& o : objects) {
      roam::hetero_task(increment, roam::launch_dims::linear(n), roam::inout(o), n).submit();
      (void)o.read_range(100, std::span(part));  // keeps a reader on the device copy
    }
  }
  objects.back().remove_from_devices();
  rt.wait_all();
  EXPECT_GT(rt.statistics().evictions, 0u);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(objects[i].to_vector(), std::vector<unsigned>(n, i + 4u)) << "object " << i;
}

TEST(Errors, NothingStartsAfterTheRuntimeEnded) {
  roam::hetero_object<unsigned> survivor;
  {
    roam::hetero_runtime rt(test_options());
    survivor = roam::hetero_object<unsigned>(16, 1u);
  }
  std::vector<unsigned> part(4);
  EXPECT_THROW((void)survivor.read_range(0, std::span(part)), roam::device_error);
  EXPECT_THROW((void)survivor.request(roam::data_access::read), roam::device_error);
}

/// A scheduler plug-in that throws from push() (called inside submit(), on the caller's thread)
/// or from pop() (called by whichever thread drains the engine's work).
class broken_scheduler final : public roam::hetero_scheduler {
 public:
  explicit broken_scheduler(bool in_push) : in_push_(in_push) {}
  void push(std::uint64_t /*task*/, const roam::hetero_scheduler_context& /*context*/) override {
    if (in_push_) throw std::runtime_error("the test scheduler refused a task");
  }
  std::optional<roam::hetero_placement> pop(
      const roam::hetero_scheduler_context& /*context*/) override {
    if (!in_push_) throw std::runtime_error("the test scheduler broke");
    return std::nullopt;
  }

 private:
  bool in_push_;
};

/// Submits one task under `scheduler` and waits for it. An exception thrown back to the caller
/// is ignored here: the engine must not survive it with a task that never runs (the wait would
/// then hang, and the death test fail).
void run_one_task_under(std::shared_ptr<roam::hetero_scheduler> scheduler) {
  auto options = test_options();
  options.scheduler = std::move(scheduler);
  roam::hetero_runtime rt(options);
  roam::hetero_object<unsigned> x(64, 1u);
  try {
    roam::hetero_task(increment, roam::launch_dims::linear(64), roam::inout(x), 64).submit();
  } catch (...) {
  }
  x.tasks_done().wait();
}

// The engine's state cannot be trusted after an exception in its own work, so the process must
// end loudly rather than leave the task hanging.
TEST(ErrorsDeathTest, AnExceptionInTheEnginesWorkEndsTheProcessWithItsMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run_one_task_under(std::make_shared<broken_scheduler>(false)),
               "heterogeneous engine failed: the test scheduler broke");
}

// A failure while submit() registers the task would leave it registered with its objects but
// never runnable, and every later task on them waiting forever. It ends the process too.
TEST(ErrorsDeathTest, AFailureWhileSubmittingEndsTheProcessWithItsMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run_one_task_under(std::make_shared<broken_scheduler>(true)),
               "heterogeneous engine failed: the test scheduler refused a task");
}

TEST(Memory, AnObjectLargerThanTheDeviceFailsItsTask) {
  auto options = test_options();
  options.memory_limit = 1024;
  roam::hetero_runtime rt(options);
  const int d = discrete_device(rt);
  roam::hetero_object<unsigned> big(4096, 1u);
  roam::hetero_task t(increment, roam::launch_dims::linear(4096), roam::inout(big), 4096);
  t.on_device(d).submit();
  EXPECT_THROW(t.wait(), roam::out_of_device_memory);
  EXPECT_EQ(big.to_vector(), std::vector<unsigned>(4096, 1u));  // nothing lost
}

// Each object fits, but not both at once: the task fails with a clear error instead of waiting
// for memory that can never be freed (its own objects are never evicted for it).
TEST(Memory, ObjectsThatFitOnlyOneAtATimeFailTheirTask) {
  auto options = test_options();
  options.memory_limit = std::size_t{48} << 10;
  roam::hetero_runtime rt(options);
  const int d = discrete_device(rt);
  roam::hetero_object<unsigned> x(8192, 1u), y(8192, 2u);  // 32 KiB each
  roam::hetero_task t(mix_into, roam::launch_dims::linear(8192), roam::inout(y), roam::in(x), 1u,
                      0u, 8192);
  t.on_device(d).submit();
  try {
    t.wait();
    ADD_FAILURE() << "the task ran without room for both objects";
  } catch (const roam::out_of_device_memory& e) {
    EXPECT_NE(std::string(e.what()).find("2 objects need 65536 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(y.to_vector(), std::vector<unsigned>(8192, 2u));  // nothing lost
  // One at a time still works on that device.
  roam::hetero_task(increment, roam::launch_dims::linear(8192), roam::inout(x), 8192)
      .on_device(d)
      .submit()
      .wait();
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(8192, 2u));
}

TEST(Memory, DeviceCopiesAreFreedWithTheirObjects) {
  roam::hetero_runtime rt(test_options());
  const int d = discrete_device(rt);
  {
    roam::hetero_object<unsigned> x(10000, 1u);
    roam::hetero_task(increment, roam::launch_dims::linear(10000), roam::inout(x), 10000)
        .on_device(d)
        .submit();
    // The handle goes out of scope while its task may still run: the task keeps it alive.
  }
  rt.wait_all();
  EXPECT_EQ(rt.statistics().device_bytes_in_use, 0u);
}

TEST(Memory, RemoveFromDevicesKeepsTheData) {
  roam::hetero_runtime rt(test_options());
  const int d = discrete_device(rt);
  roam::hetero_object<unsigned> x(1000, 1u);
  roam::hetero_task(increment, roam::launch_dims::linear(1000), roam::inout(x), 1000)
      .on_device(d)
      .submit();
  // Its future is ready once the copy is freed and the data written back.
  x.remove_from_devices().wait();
  EXPECT_EQ(x.state_on(d), roam::coherence::invalid);
  EXPECT_EQ(x.state_on_host(), roam::coherence::modified);
  EXPECT_EQ(rt.statistics().device_bytes_in_use, 0u);
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(1000, 2u));
}

/// Makes the next `count` copies of the host device fail (fail_next_host_copies), and no more
/// once the test ends, whether or not they were used.
struct injected_copy_failures {
  explicit injected_copy_failures(unsigned count) { roam::detail::fail_next_host_copies(count); }
  ~injected_copy_failures() { roam::detail::fail_next_host_copies(0); }
  injected_copy_failures(const injected_copy_failures&) = delete;
  injected_copy_failures& operator=(const injected_copy_failures&) = delete;
};

/// Caps the host device's memory (cap_host_device_memory) for one test.
struct capped_host_device_memory {
  explicit capped_host_device_memory(std::size_t bytes) {
    roam::detail::cap_host_device_memory(bytes);
  }
  ~capped_host_device_memory() { roam::detail::cap_host_device_memory(0); }
  capped_host_device_memory(const capped_host_device_memory&) = delete;
  capped_host_device_memory& operator=(const capped_host_device_memory&) = delete;
};

// The device refuses an allocation although the framework's limit leaves room (another process
// holds the rest of its memory): the least recently used copy is evicted for it (this test
// hangs if the task waits for memory instead).
TEST(Memory, ADeviceThatRefusesWhileThePoolHasRoomGetsCopiesEvicted) {
  const int n = 4096;
  capped_host_device_memory cap(std::size_t{2} * n * sizeof(unsigned));  // two objects
  roam::hetero_runtime rt(failing_copies_options());
  std::vector<roam::hetero_object<unsigned>> objects;
  objects.reserve(3);
  for (int i = 0; i < 3; ++i) objects.emplace_back(n, static_cast<unsigned>(i));
  for (auto& o : objects) increment_and_wait(o, n);
  EXPECT_EQ(rt.statistics().evictions, 1u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(objects[i].to_vector(), std::vector<unsigned>(n, i + 1u)) << "object " << i;
}

// ... and when nothing is left to evict and no running task will free anything, the task fails
// with out_of_device_memory instead of waiting forever.
TEST(Memory, ADeviceThatRefusesWithNothingToEvictFailsTheTask) {
  const int n = 4096;
  capped_host_device_memory cap(std::size_t{n} * sizeof(unsigned) / 2);  // half an object
  roam::hetero_runtime rt(failing_copies_options());
  roam::hetero_object<unsigned> x(n, 1u);
  roam::hetero_task t(increment, roam::launch_dims::linear(n), roam::inout(x), n);
  t.submit();
  try {
    t.wait();
    ADD_FAILURE() << "the task ran on a device that refused its memory";
  } catch (const roam::out_of_device_memory& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
  EXPECT_EQ(x.to_vector(), std::vector<unsigned>(n, 1u));
}

// ---- errors and scheduling ----------------------------------------------------------------------

void throwing_host_kernel(void* const*, roam::kernel_ids*, char*) {
  throw std::runtime_error("kernel failed on purpose");
}

TEST(Errors, FailuresReachWait) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> x(10, 1u);
  roam::hetero_task no_device(increment, roam::launch_dims::linear(10), roam::inout(x), 10);
  no_device.on_device(99).submit();
  try {
    no_device.wait();
    FAIL() << "a task no device can run completed";
  } catch (const roam::device_error& e) {
    EXPECT_NE(std::string(e.what()).find("no device can run kernel 'increment'"), std::string::npos)
        << e.what();
  }
  roam::kernel throws{"throws", &throwing_host_kernel, nullptr, nullptr, nullptr};
  roam::hetero_task failing(throws, roam::launch_dims::linear(1), roam::inout(x));
  failing.on(roam::backend::host).submit();
  EXPECT_THROW(failing.wait(), std::runtime_error);
  // Later tasks on the object still run.
  roam::hetero_task(increment, roam::launch_dims::linear(10), roam::inout(x), 10).submit().wait();
  EXPECT_EQ(x.to_vector()[0], 2u);

  EXPECT_THROW(x.release(), roam::device_error);  // no request held
  roam::hetero_task twice(increment, roam::launch_dims::linear(10), roam::inout(x), 10);
  twice.submit();
  EXPECT_THROW(twice.submit(), roam::device_error);
  roam::hetero_task never(increment, roam::launch_dims::linear(10), roam::inout(x), 10);
  EXPECT_THROW(never.wait(), roam::device_error);
}

// A failure nobody waited for is not lost: wait_all() rethrows it (here, of a task whose handle
// was dropped after submit), once; one that a wait() rethrew is not reported again.
TEST(Errors, WaitAllRethrowsAFailureNoWaitSaw) {
  roam::hetero_runtime rt(failing_copies_options());  // the host backend: kernels can throw
  roam::hetero_object<unsigned> x(10, 1u);
  roam::kernel throws{"throws", &throwing_host_kernel, nullptr, nullptr, nullptr};
  roam::hetero_task(throws, roam::launch_dims::linear(1), roam::inout(x))
      .on(roam::backend::host)
      .submit();
  EXPECT_THROW(rt.wait_all(), std::runtime_error);
  EXPECT_NO_THROW(rt.wait_all());
  roam::hetero_task seen(throws, roam::launch_dims::linear(1), roam::inout(x));
  seen.on(roam::backend::host).submit();
  EXPECT_THROW(seen.wait(), std::runtime_error);
  EXPECT_NO_THROW(rt.wait_all());
  EXPECT_EQ(rt.statistics().tasks_failed, 2u);
}

// The failures still unseen when the runtime ends are reported on stderr (a destructor cannot
// throw them).
TEST(Errors, TheRuntimesEndReportsFailuresNobodySaw) {
  testing::internal::CaptureStderr();
  {
    roam::hetero_runtime rt(failing_copies_options());  // the host backend: kernels can throw
    roam::hetero_object<unsigned> x(10, 1u);
    roam::kernel throws{"throws", &throwing_host_kernel, nullptr, nullptr, nullptr};
    for (int i = 0; i < 2; ++i) {
      roam::hetero_task(throws, roam::launch_dims::linear(1), roam::inout(x))
          .on(roam::backend::host)
          .submit();
    }
  }
  const std::string reported = testing::internal::GetCapturedStderr();
  EXPECT_NE(reported.find("2 hetero task(s) failed"), std::string::npos) << reported;
  EXPECT_NE(reported.find("kernel failed on purpose"), std::string::npos) << reported;
}

// A device queue keeps its order after a failed operation, but the failure stays that
// operation's: the next ones on the queue (compute queues are used in turn) still run. The
// host backend's (only its kernels can be made to fail here).
TEST(Errors, AFailedKernelFailsOnlyItsOwnTask) {
  auto options = test_options();
  options.backends = "host";
  options.host_separate_memory = true;
  roam::hetero_runtime rt(options);
  roam::hetero_object<unsigned> x(10, 0u);
  roam::kernel throws{"throws", &throwing_host_kernel, nullptr, nullptr, nullptr};
  roam::hetero_task failing(throws, roam::launch_dims::linear(1), roam::inout(x));
  failing.submit();
  // A reader of the failed kernel's output gets it as it is (undefined in general), whether it
  // comes before or after the failure is seen: the failure is the kernel's task's to report.
  EXPECT_NO_THROW((void)x.to_vector());
  EXPECT_THROW(failing.wait(), std::runtime_error);
  for (int i = 0; i < 8; ++i) {
    roam::hetero_task later(increment, roam::launch_dims::linear(10), roam::inout(x), 10);
    later.submit();
    EXPECT_NO_THROW(later.wait()) << "task " << i << " after the failure";
  }
  EXPECT_EQ(x.to_vector()[0], 8u);
}

/// True when `f` throws a device_error naming the injected failure.
template <class F>
bool fails_with_injected_copy_error(F&& f) {
  try {
    f();
  } catch (const roam::device_error& e) {
    return std::string(e.what()).find("injected") != std::string::npos;
  }
  return false;
}

// A copy to the host fails: the request that needed it fails with the device's error, and the
// device's copy is still the valid one (nothing is lost); the next request copies again.
TEST(Errors, AFailedCopyToTheHostFailsItsRequestAndLosesNothing) {
  roam::hetero_runtime rt(failing_copies_options());
  const int d = discrete_device(rt);
  const int n = 1000;
  roam::hetero_object<unsigned> x(iota(n, 5));
  increment_and_wait(x, n);
  ASSERT_EQ(x.state_on(d), roam::coherence::modified);
  injected_copy_failures failures(1);
  EXPECT_TRUE(
      fails_with_injected_copy_error([&] { (void)x.request(roam::data_access::read).get(); }));
  EXPECT_EQ(x.state_on(d), roam::coherence::modified);
  EXPECT_EQ(x.state_on_host(), roam::coherence::invalid);
  EXPECT_EQ(x.to_vector(), iota(n, 6));
}

// remove_from_devices() whose copy back to the host fails: its future carries the error and the
// device keeps the only valid copy.
TEST(Errors, AFailedWriteBackLeavesTheCopyOnTheDevice) {
  roam::hetero_runtime rt(failing_copies_options());
  const int d = discrete_device(rt);
  const int n = 1000;
  roam::hetero_object<unsigned> x(iota(n, 5));
  increment_and_wait(x, n);
  injected_copy_failures failures(1);
  EXPECT_TRUE(fails_with_injected_copy_error([&] { x.remove_from_devices().wait(); }));
  EXPECT_EQ(x.state_on(d), roam::coherence::modified);
  EXPECT_EQ(x.to_vector(), iota(n, 6));
  x.remove_from_devices().wait();
  EXPECT_EQ(x.state_on(d), roam::coherence::invalid);
}

// An eviction's write-back fails: that copy stays on the device (still the valid one) and the
// next least recently used copy is evicted instead.
TEST(Errors, AFailedWriteBackDuringEvictionSkipsThatCopy) {
  const int n = 4096;
  auto options = failing_copies_options();
  options.memory_limit = std::size_t{2} * n * sizeof(unsigned);  // two objects
  roam::hetero_runtime rt(options);
  const int d = discrete_device(rt);
  std::vector<roam::hetero_object<unsigned>> objects;
  objects.reserve(3);
  for (int i = 0; i < 3; ++i) objects.emplace_back(n, static_cast<unsigned>(i));
  auto use = [&](int i) { increment_and_wait(objects[i], n); };
  use(0);
  use(1);
  {
    injected_copy_failures failures(1);  // object 0's write-back
    EXPECT_NO_THROW(use(2));
  }
  EXPECT_EQ(rt.statistics().evictions, 1u);
  EXPECT_EQ(objects[0].state_on(d), roam::coherence::modified);
  EXPECT_EQ(objects[1].state_on(d), roam::coherence::invalid);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(objects[i].to_vector(), std::vector<unsigned>(n, i + 1u)) << "object " << i;
}

// A copy to the device fails: the task that needed it fails, and the device's copy is not taken
// for valid afterwards: the next task copies again and sees the right data.
TEST(Errors, AFailedCopyToTheDeviceFailsItsTaskAndIsMadeAgain) {
  roam::hetero_runtime rt(failing_copies_options());
  const int d = discrete_device(rt);
  const int n = 1000;
  roam::hetero_object<unsigned> x(iota(n, 5));
  roam::hetero_object<unsigned> y(n);
  injected_copy_failures failures(1);
  roam::hetero_task first(copy_into, roam::launch_dims::linear(n), roam::out(y), roam::in(x), n);
  first.on_device(d).submit();
  EXPECT_TRUE(fails_with_injected_copy_error([&] { first.wait(); }));
  EXPECT_EQ(x.state_on(d), roam::coherence::invalid);
  EXPECT_EQ(x.state_on_host(), roam::coherence::modified);
  copy_and_wait(y, x, n, d);
  EXPECT_EQ(y.to_vector(), iota(n, 5));
}

// A range write reaches the host's copy but its transfer to the device fails: the device's copy
// is stale, so it is Invalid, and a kernel reading the object there sees the new bytes.
TEST(Errors, AFailedRangeWriteLeavesNoStaleCopy) {
  roam::hetero_runtime rt(failing_copies_options());
  const int d = discrete_device(rt);
  const int n = 1000;
  roam::hetero_object<unsigned> x(iota(n, 5));
  roam::hetero_object<unsigned> y(n);
  copy_and_wait(y, x, n, d);
  ASSERT_EQ(x.state_on(d), roam::coherence::shared);
  const std::vector<unsigned> part(10, 7u);
  injected_copy_failures failures(1);
  EXPECT_TRUE(fails_with_injected_copy_error([&] { x.write_range(20, std::span(part)).wait(); }));
  EXPECT_EQ(x.state_on(d), roam::coherence::invalid);
  EXPECT_EQ(x.state_on_host(), roam::coherence::modified);
  copy_and_wait(y, x, n, d);
  auto expected = iota(n, 5);
  std::fill_n(expected.begin() + 20, 10, 7u);
  EXPECT_EQ(y.to_vector(), expected);
}

/// Places every task on the last eligible device and records the thread each placement is made
/// on.
class last_device_scheduler final : public roam::hetero_scheduler {
 public:
  void push(std::uint64_t task, const roam::hetero_scheduler_context&) override {
    tasks_.push_back(task);
  }
  std::optional<roam::hetero_placement> pop(const roam::hetero_scheduler_context& c) override {
    if (tasks_.empty()) return std::nullopt;
    const auto task = tasks_.front();
    tasks_.pop_front();
    placed_on.push_back(std::this_thread::get_id());
    return roam::hetero_placement{task, c.eligible_devices(task).back()};
  }
  std::vector<std::thread::id> placed_on;

 private:
  std::deque<std::uint64_t> tasks_;
};

TEST(Scheduling, APluggedSchedulerPlacesTasks) {
  auto options = test_options();
  auto scheduler = std::make_shared<last_device_scheduler>();
  options.scheduler = scheduler;
  roam::hetero_runtime rt(options);
  roam::hetero_object<unsigned> x(100, 0u);
  roam::hetero_task t(increment, roam::launch_dims::linear(100), roam::inout(x), 100);
  t.submit().wait();
  EXPECT_EQ(t.device(), static_cast<int>(rt.devices().size()) - 1);
  EXPECT_EQ(scheduler->placed_on.size(), 1u);
}

TEST(Scheduling, TheSubmittingThreadDispatchesUnlessTheEngineThreadIsAsked) {
  for (const bool on_callers : {true, false}) {
    auto options = test_options();
    options.dispatch_on_callers = on_callers;
    auto scheduler = std::make_shared<last_device_scheduler>();
    options.scheduler = scheduler;
    roam::hetero_runtime rt(options);
    roam::hetero_object<unsigned> x(100, 0u);
    // Nothing else is in flight, so no drain is running when it is submitted.
    roam::hetero_task(increment, roam::launch_dims::linear(100), roam::inout(x), 100)
        .submit()
        .wait();
    ASSERT_EQ(scheduler->placed_on.size(), 1u);
    EXPECT_EQ(scheduler->placed_on.front() == std::this_thread::get_id(), on_callers)
        << (on_callers ? "the engine thread placed it" : "the caller placed it");
    EXPECT_EQ(x.to_vector(), std::vector<unsigned>(100, 1u));
  }
}

// .on(device_type) limits the task to devices of that type: a type no device in use has fails
// the task with an error saying so; a type some device has runs there.
TEST(Scheduling, ATargetTypeLimitsTheDevices) {
  roam::hetero_runtime rt(test_options());
  for (const auto type : {roam::device_type::cpu, roam::device_type::gpu}) {
    SCOPED_TRACE(roam::to_string(type));
    int of_type = -1;
    for (auto* d : rt.devices())
      if (d->info().type == type && of_type < 0) of_type = d->info().index;
    roam::hetero_object<unsigned> x(64, 1u);
    roam::hetero_task t(increment, roam::launch_dims::linear(64), roam::inout(x), 64);
    t.on(type).submit();
    if (of_type < 0) {
      expect_rejected([&] { t.wait(); }, {"no device can run kernel 'increment'"});
      EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 1u));
    } else {
      t.wait();
      EXPECT_EQ(rt.devices()[t.device()]->info().type, type);
      EXPECT_EQ(x.to_vector(), std::vector<unsigned>(64, 2u));
    }
  }
}

// A task goes only to a device whose limits its launch fits (work-group size, dynamic local
// memory); when none does, it fails saying which limit. The device API checks the same.
TEST(Scheduling, ATaskGoesOnlyWhereItsGroupsFit) {
  roam::hetero_runtime rt(test_options());
  const std::uint32_t group = 8192;  // beyond OpenCL's usual 1024-4096 and CUDA's 1024
  roam::launch_dims dims;
  dims.local = {group, 1, 1};
  int fits = -1;
  for (auto* d : rt.devices()) {
    const auto limit = d->info().max_group_items;
    if (limit == 0 || limit >= group) {
      if (fits < 0) fits = d->info().index;
      continue;
    }
    auto buffer = d->allocate(group * sizeof(unsigned));
    const roam::kernel_argument arguments[] = {roam::kernel_argument::of_buffer(buffer),
                                               roam::kernel_argument::of_value(int{group})};
    expect_rejected(
        [&] { (void)d->launch(roam::device_queue::compute(0), increment, dims, arguments, 0, {}); },
        {"'increment' asks for work-groups of 8192 items", "takes at most"});
    d->release(buffer);
  }
  roam::hetero_object<unsigned> x(group, 1u);
  roam::hetero_task t(increment, dims, roam::inout(x), int{group});
  t.submit();
  if (fits >= 0) {
    t.wait();
    const auto limit = rt.devices()[t.device()]->info().max_group_items;
    EXPECT_TRUE(limit == 0 || limit >= group) << limit;
    EXPECT_EQ(x.to_vector(), std::vector<unsigned>(group, 2u));
  } else {
    expect_rejected([&] { t.wait(); }, {"no device can run kernel 'increment'", "takes at most"});
  }
  // Dynamic local memory beyond every limited device's: only unlimited devices are eligible.
  std::size_t most_local = 0;
  bool some_unlimited = false;
  for (auto* d : rt.devices()) {
    most_local = std::max(most_local, d->info().max_local_bytes);
    some_unlimited = some_unlimited || d->info().max_local_bytes == 0;
  }
  if (most_local > 0) {
    roam::hetero_object<unsigned> sums(4, 0u);
    roam::hetero_object<unsigned> y(256, 1u);
    roam::hetero_task big_local(group_sums, roam::launch_dims::linear(256, 64), roam::in(y),
                                roam::out(sums), 256);
    big_local.local_memory(most_local + 1).submit();
    if (some_unlimited) {
      big_local.wait();
      EXPECT_EQ(rt.devices()[big_local.device()]->info().max_local_bytes, 0u);
    } else {
      expect_rejected([&] { big_local.wait(); }, {"bytes of local memory per group"});
    }
  }
}

// Tasks that become runnable together and cost the same to move spread over the devices: the
// default scheduler fills a device's queues (device_depth) and then uses the next.
TEST(Scheduling, TheDefaultSpreadsReadyTasksOverTheDevices) {
  roam::hetero_runtime rt(test_options());
  roam::hetero_object<unsigned> gate(1, 0u);
  auto held = gate.request(roam::data_access::read_write).get();
  roam::hetero_task opener(increment, roam::launch_dims::linear(1), roam::inout(gate), 1);
  opener.submit();        // waits for the release below
  const int n = 1 << 16;  // large enough to go to the host backend's pool, not run inline
  std::vector<roam::hetero_object<unsigned>> data;
  std::vector<roam::hetero_task> tasks;
  for (int i = 0; i < 16; ++i) {
    data.emplace_back(n, 0u);
    tasks.emplace_back(increment, roam::launch_dims::linear(n), roam::inout(data.back()), n);
    tasks.back().add_dependency(opener).submit();
  }
  (void)held;
  gate.release();
  std::set<int> used;
  for (auto& t : tasks) {
    t.wait();
    used.insert(t.device());
  }
  EXPECT_EQ(used.size(), std::min<std::size_t>(rt.devices().size(), 2));
  for (auto& x : data) ASSERT_EQ(x.to_vector()[n - 1], 1u);
}

TEST(Scheduling, TheDefaultPrefersTheDeviceHoldingTheData) {
  roam::hetero_runtime rt(test_options());
  const int d = discrete_device(rt);
  roam::hetero_object<unsigned> x(100000, 0u);
  roam::hetero_task(fill, roam::launch_dims::linear(100000), roam::out(x), 3u, 100000)
      .on_device(d)
      .submit()
      .wait();
  // x is Modified on d only: any other device would need it moved.
  roam::hetero_task t(increment, roam::launch_dims::linear(100000), roam::inout(x), 100000);
  t.submit().wait();
  EXPECT_EQ(t.device(), d);
}

}  // namespace

namespace {
TEST(Errors, AnEndingRuntimeEndsHeldRequestsInsteadOfHanging) {
  std::unique_ptr<roam::hetero_task> waiting;
  {
    roam::hetero_runtime rt(test_options());
    roam::hetero_object<unsigned> x(16, 1u);
    auto view = x.request(roam::data_access::read_write).get();  // never released
    view[0] = 7;
    waiting = std::make_unique<roam::hetero_task>(increment, roam::launch_dims::linear(16),
                                                  roam::inout(x), 16);
    waiting->submit();
    EXPECT_FALSE(waiting->done());
  }
  EXPECT_TRUE(waiting->done());  // the runtime's end released the request, then ran the task
}
}  // namespace

namespace {
/// Sets an environment variable for one scope.
class scoped_environment {
 public:
  scoped_environment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    ::setenv(name, value, 1);
  }
  scoped_environment(const scoped_environment&) = delete;
  scoped_environment& operator=(const scoped_environment&) = delete;
  ~scoped_environment() {  // restores what ctest set (ROAM_HETERO_DISPATCH in one variant)
    if (previous_) {
      ::setenv(name_, previous_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

TEST(Configuration, TheEnvironmentSetsOptionsAndRejectsMalformedValues) {
  {
    scoped_environment backends("ROAM_HETERO_BACKENDS", "host");
    scoped_environment limit("ROAM_HETERO_MEMORY_LIMIT", "65536");
    scoped_environment memory("ROAM_HETERO_HOST_MEMORY", "separate");
    scoped_environment queues("ROAM_HETERO_QUEUES", "3");
    scoped_environment dispatch("ROAM_HETERO_DISPATCH", "engine");
    const auto options = roam::hetero_options::from_environment();
    EXPECT_FALSE(options.dispatch_on_callers);
    EXPECT_EQ(options.backends, "host");
    EXPECT_EQ(options.memory_limit, 65536u);
    EXPECT_TRUE(options.host_separate_memory);
    EXPECT_EQ(options.compute_queues, 3u);
    roam::hetero_runtime rt(options);
    EXPECT_EQ(rt.devices().front()->info().memory_bytes, 65536u);
    EXPECT_EQ(rt.devices().front()->compute_queue_count(), 3u);
  }
  {
    scoped_environment limit("ROAM_HETERO_MEMORY_LIMIT", "64k");
    EXPECT_THROW((void)roam::hetero_options::from_environment(), roam::device_error);
  }
  {
    scoped_environment memory("ROAM_HETERO_HOST_MEMORY", "pinned");
    EXPECT_THROW((void)roam::hetero_options::from_environment(), roam::device_error);
  }
  {
    scoped_environment queues("ROAM_HETERO_QUEUES", "0");
    EXPECT_THROW((void)roam::hetero_options::from_environment(), roam::device_error);
  }
  {
    scoped_environment dispatch("ROAM_HETERO_DISPATCH", "workers");
    EXPECT_THROW((void)roam::hetero_options::from_environment(), roam::device_error);
    scoped_environment callers("ROAM_HETERO_DISPATCH", "callers");
    EXPECT_TRUE(roam::hetero_options::from_environment().dispatch_on_callers);
  }
}
}  // namespace
