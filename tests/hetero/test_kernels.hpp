#pragma once
// Kernels shared by the heterogeneous framework's tests, written once for every backend
// (test_kernels.cpp; compiled by nvcc when the CUDA backend is built).
#include "roam/hetero/kernel.hpp"

// y[i] = y[i] * a + x[i] + k, wrapping (unsigned): bit-identical on every backend.
ROAM_DECLARE_KERNEL(mix_into);
// x[i] = value
ROAM_DECLARE_KERNEL(fill);
// x[i] += 1
ROAM_DECLARE_KERNEL(increment);
// y[i] = x[i]
ROAM_DECLARE_KERNEL(copy_into);
// per-group sums of x into sums[group], through dynamic local memory and parallel regions
ROAM_DECLARE_KERNEL(group_sums);
// each group reverses its slice of x in place, through a static local array
ROAM_DECLARE_KERNEL(reverse_groups);
// c = a * b for n x n doubles, one item per element (2-D launch)
ROAM_DECLARE_KERNEL(naive_dgemm);
// out[i] = packed (global id x, global id y, group id x, local id y) for a 2-D launch
ROAM_DECLARE_KERNEL(record_ids);
// out[x, y, z] = packed (global ids x, y, z, local id z, group counts x, y, z) for a 3-D launch
ROAM_DECLARE_KERNEL(record_ids_3d);
