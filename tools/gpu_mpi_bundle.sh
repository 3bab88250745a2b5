#!/usr/bin/env bash
# Prepares, on this (Debian) machine, what the multi-rank GPU benchmarks need on a GPU machine
# that has CUDA but no MPI, Boost or hwloc: the benchmarks and the mobile-object tests built
# here with the CUDA backend (nvcc must be installed here), and Debian's Open MPI with every
# shared library it and the programs load, as one archive. tools/gpu_mpi_run.sh unpacks it
# there and runs them.
#   tools/gpu_mpi_bundle.sh [CUDA_ARCH]        (default 90: Hopper)
# Output in .device/ (ignored by git; name it in the device tool's `carry`):
#   .device/bin/      the benchmark programs and hetero_mobile_test
#   .device/mpi-rt.tar.gz   files to add under / (existing files there are kept)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
programs=(bench/bench_jacobi3d bench/bench_hetero_pingpong tests/hetero_mobile/hetero_mobile_test)

cmake -S . -B build/gpu-full -G Ninja -DCMAKE_BUILD_TYPE=Release -DROAM_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DROAM_GPU_TESTS=OFF -Wno-dev >/dev/null
cmake --build build/gpu-full --target "${programs[@]##*/}" | tail -1

mkdir -p .device/bin
for p in "${programs[@]}"; do cp build/gpu-full/"$p" .device/bin/; done

# Open MPI's launcher, libraries, plugins and help texts (plugins are loaded with dlopen, so
# ldd of the programs alone would miss them), then the closure of every library they load.
# The C/C++ runtime itself stays out: the GPU machine's own (newer) one serves.
files=$(mktemp)
dpkg -L openmpi-bin openmpi-common libopenmpi3 libpmix2 |
  grep -v -E '^/usr/share/(doc|man|lintian)/' | while read -r f; do [ -f "$f" ] && echo "$f"; done >"$files"
elves=$(mktemp)
{ cat "$files"; printf '%s\n' "${programs[@]/#/build/gpu-full/}"; } |
  while read -r f; do file -L "$f" | grep -q ELF && echo "$f"; done >"$elves"
xargs -a "$elves" ldd 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so' |
  while read -r lib; do
    echo "$lib"
    readlink -f "$lib"
  done >>"$files"
sort -u "$files" | sed 's|^/lib/|/usr/lib/|' | sort -u >"$files.sorted"
tar -czf .device/mpi-rt.tar.gz -C / --files-from=<(sed 's|^/||' "$files.sorted")
rm -f "$files" "$files.sorted" "$elves"
du -sh .device/mpi-rt.tar.gz .device/bin
