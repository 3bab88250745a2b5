#include "hetero_mobile_kernels.hpp"

ROAM_KERNEL(jacobi_step,
            (roam_global const double* in, roam_global double* out, int nx, int ny, int nz), {
              const int g = (int)roam_global_id(0);
              if (g >= nx * ny * nz) return;
              const int plane = nx * ny;
              const int i = g % nx;
              const int j = (g / nx) % ny;
              const int c = g + plane;
              if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
                out[c] = in[c];
                return;
              }
              out[c] = (in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx] + in[c - plane] +
                        in[c + plane]) *
                       (1.0 / 6.0);
            })

ROAM_KERNEL(bounce_increment, (roam_global unsigned* x, int n), {
  const int i = (int)roam_global_id(0);
  if (i < n) x[i] += 1u;
})

ROAM_KERNEL(copy_elements,
            (roam_global const double* from, roam_global double* to, int from_first, int to_first,
             int count),
            {
              const int i = (int)roam_global_id(0);
              if (i < count) to[to_first + i] = from[from_first + i];
            })
