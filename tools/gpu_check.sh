#!/usr/bin/env bash
# Builds the heterogeneous framework alone (no MPI, Boost, cereal, hwloc needed) with the CUDA
# backend, runs its tests on every backend set the machine has, and the hetero_dgemm benchmark
# on CUDA. For a machine with an NVIDIA GPU; GoogleTest comes from its sources in .device/
# (copied from Debian's /usr/src/googletest) when the machine has no package for it.
#   tools/gpu_check.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-out}
mkdir -p "$out"
gtest=()
[ -d .device/googletest ] && gtest=(-DROAM_GTEST_SOURCE="$PWD/.device/googletest")
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DROAM_HETERO_ONLY=ON -DROAM_CUDA=ON \
  -DROAM_GPU_TESTS=ON -DROAM_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 "${gtest[@]}" -Wno-dev | tail -3
cmake --build build/gpu -j "$(nproc)" 2>&1 | tail -3
nvidia-smi -L
ctest --test-dir build/gpu --output-on-failure --timeout 150 2>&1 | tee "$out/ctest.log" | tail -15 || true
build/gpu/bench/bench_hetero_dgemm --backend cuda --json 2>&1 | tee "$out/hetero_dgemm_cuda.log"
