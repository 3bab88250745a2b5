#include "test_kernels.hpp"

ROAM_KERNEL(mix_into,
            (roam_global unsigned* y, roam_global const unsigned* x, unsigned a, unsigned k, int n),
            {
              const int i = (int)roam_global_id(0);
              if (i >= n) return;
              y[i] = y[i] * a + x[i] + k;
            })

ROAM_KERNEL(fill, (roam_global unsigned* x, unsigned value, int n), {
  const int i = (int)roam_global_id(0);
  if (i < n) x[i] = value;
})

ROAM_KERNEL(increment, (roam_global unsigned* x, int n), {
  const int i = (int)roam_global_id(0);
  if (i < n) x[i] += 1u;
})

ROAM_KERNEL(copy_into, (roam_global unsigned* y, roam_global const unsigned* x, int n), {
  const int i = (int)roam_global_id(0);
  if (i < n) y[i] = x[i];
})

ROAM_GROUP_KERNEL(group_sums, (roam_global const unsigned* x, roam_global unsigned* sums, int n),
                  {roam_parallel_region({
                    const int i = (int)roam_global_id(0);
                    roam_dynamic_local(unsigned)[roam_local_id(0)] = i < n ? x[i] : 0u;
                  }) roam_parallel_region({
                    if (roam_local_id(0) == 0) {
                      unsigned total = 0;
                      for (unsigned j = 0; j < roam_local_size(0); ++j)
                        total += roam_dynamic_local(unsigned)[j];
                      sums[roam_group_id(0)] = total;
                    }
                  })})

ROAM_GROUP_KERNEL(reverse_groups, (roam_global unsigned* x), {
  roam_local unsigned slice[64];
  roam_parallel_region({ slice[roam_local_id(0)] = x[roam_global_id(0)]; }) roam_parallel_region({
    const unsigned base = roam_group_id(0) * roam_local_size(0);
    x[base + roam_local_id(0)] = slice[roam_local_size(0) - 1 - roam_local_id(0)];
  })
})

ROAM_KERNEL(naive_dgemm,
            (roam_global const double* a, roam_global const double* b, roam_global double* c,
             int n),
            {
              const int column = (int)roam_global_id(0);
              const int row = (int)roam_global_id(1);
              if (row >= n || column >= n) return;
              double sum = 0.0;
              for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + column];
              c[row * n + column] = sum;
            })

ROAM_KERNEL(record_ids, (roam_global unsigned* out, int width), {
  const unsigned gx = roam_global_id(0);
  const unsigned gy = roam_global_id(1);
  out[gy * (unsigned)width + gx] =
      (gx << 24) | (gy << 16) | (roam_group_id(0) << 8) | roam_local_id(1);
})

ROAM_KERNEL(record_ids_3d, (roam_global unsigned* out, int nx, int ny), {
  const unsigned x = roam_global_id(0);
  const unsigned y = roam_global_id(1);
  const unsigned z = roam_global_id(2);
  out[(z * (unsigned)ny + y) * (unsigned)nx + x] =
      (x << 24) | (y << 16) | (z << 8) | (roam_local_id(2) << 6) | (roam_num_groups(0) << 4) |
      (roam_num_groups(1) << 2) | roam_num_groups(2);
})
