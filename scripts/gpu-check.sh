#!/usr/bin/env bash
# The one batch for the H200 machine: build (CUDA, Release, sm_90), run every test, then the
# benchmarks, leaving logs and JSON under $OUT. Run from the repository root after
# ../shared/tools/stage-gpu-deps, with .deps carried.   usage: scripts/gpu-check.sh [tests|bench|all]
set -uo pipefail
what=${1:-all}
out=${OUT:-$PWD/out}
mkdir -p "$out"
export CMAKE_PREFIX_PATH=$PWD/.deps
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.txt"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOALESCE_ENABLE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j 16 > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -40; exit 1; }
status=0
if [[ $what == all || $what == tests ]]; then
  (cd build-gpu && ctest --output-on-failure -j 4 --timeout 300) > "$out/ctest.log" 2>&1 || status=1
  tail -25 "$out/ctest.log"
fi
if [[ $what == all || $what == bench ]]; then
  for sample in build-gpu/samples/*/; do :; done
  ./build-gpu/samples/particle_integrator/particle_integrator --json "$out/integrator.json" 2>&1 | tee "$out/integrator.txt" || status=1
  if [[ -x scripts/gpu-bench-extra.sh ]]; then scripts/gpu-bench-extra.sh "$out" || status=1; fi
fi
exit $status
