#!/usr/bin/env bash
# On a GPU machine, with .device/ prepared by tools/gpu_mpi_bundle.sh: adds Open MPI and the
# libraries the benchmarks need under / (files already there are kept), then runs the
# mobile-object tests and the multi-rank heterogeneous benchmarks on the CUDA backend, two ranks
# sharing the GPU.
#   tools/gpu_mpi_run.sh [OUTDIR] [-- extra jacobi3d arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-out}
shift || true
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
tar -xzf .device/mpi-rt.tar.gz --skip-old-files -C /
ldconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpirun=(/usr/bin/orterun -n 2 --bind-to none)
nvidia-smi -L
# The tests as ctest runs them on host and OpenCL: one worker per node, 2 virtual nodes in one
# process, then 2 ranks.
ROAM_THREADS=1 ROAM_TEST_BACKENDS=cuda ROAM_NODES=2 ROAM_TRANSPORT=inproc \
  .device/bin/hetero_mobile_test 2>&1 | tee "$out/hetero_mobile_inproc_cuda.log" | tail -3
ROAM_THREADS=1 ROAM_TEST_BACKENDS=cuda "${mpirun[@]}" .device/bin/hetero_mobile_test 2>&1 |
  tee "$out/hetero_mobile_mpi_cuda.log" | tail -3
"${mpirun[@]}" .device/bin/bench_jacobi3d --backend cuda --json "$@" 2>&1 | tee "$out/jacobi3d_cuda.log"
"${mpirun[@]}" .device/bin/bench_hetero_pingpong --backend cuda --json 2>&1 |
  tee "$out/hetero_pingpong_cuda.log"
