#pragma once
// Device kernels of the benchmarks that move device data between mobile objects (jacobi3d,
// hetero_pingpong). They live in their own file, compiled by nvcc when the CUDA backend is built,
// so that the benchmarks themselves (MPI, Boost, cereal) stay plain C++.
#include <roam/hetero/kernel.hpp>

// The 7-point Jacobi stencil over the nz interior planes of a block of nx * ny planes stored
// with one halo plane on each side; points on the x and y faces keep their values.
// Arguments: (const double* in, double* out, int nx, int ny, int nz).
ROAM_DECLARE_KERNEL(jacobi_step);
// x[i] += 1 for i < n. Arguments: (unsigned* x, int n).
ROAM_DECLARE_KERNEL(bounce_increment);
// to[to_first + i] = from[from_first + i] for i < count: a halo plane copied between two blocks'
// grids on one device. Arguments: (const double* from, double* to, int from_first, int to_first,
// int count).
ROAM_DECLARE_KERNEL(copy_elements);
