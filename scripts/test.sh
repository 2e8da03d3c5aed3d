#!/usr/bin/env bash
# Builds coalesce and runs every test that this machine can run:
#   1. CPU build (device = OpenMP): all CPU tests, compile-fail tests, consumer projects, samples,
#      coalesce::mpi at 1, 2 and 4 ranks
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. CUDA build for sm_90 when nvcc is present. With a visible GPU: everything, and every test
#      runs. Without one (CI): only what the CPU builds cannot check (library, GPU tests, PTX
#      checks, header examples under nvcc, consumer projects); the GPU tests report themselves
#      SKIPPED (never passed). Host tests and samples, which would only skip, are not compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The folders are the layers: no include runs up them, none goes round in a circle.
python3 scripts/check_layers.py
# docs/performance.md is generated from docs/measurements/current.json: a hand edit fails here.
python3 scripts/perf_reference.py --check
# One style (.clang-format): a file the formatter would change fails here.
scripts/check_format.sh
jobs=$(nproc)
run_suite() {  # name, cmake options...
  local dir=build/$1
  shift
  echo "=== $dir: configure $*"
  cmake -S . -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  echo "=== $dir: build"
  cmake --build "$dir" -j "$jobs"
  echo "=== $dir: test"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900
}
mkdir -p build
# Debug (assertions, bounds checks) without full debug information: less compile time (-g0 saves
# 12-18 % of a test file's). -Og: the CPU suite ran in 161 s instead of 298 s at -O0 (2 cores,
# 2026-12-05; the list tests' brute-force oracles and the advisor's cache replay 4-7x faster) for
# 6 % more build time; assertions and bounds checks stay. The sanitizers keep -O0 (clang 14 at -O1
# doubled their compile time) and line tables (-g1), so their reports name file and line; rebuild
# with -g to step through a failure.
no_debug_info="-DCMAKE_CXX_FLAGS_DEBUG=-g0 -Og"
line_tables=-DCMAKE_CXX_FLAGS_DEBUG=-g1
run_suite cpu -DCMAKE_BUILD_TYPE=Debug "$no_debug_info" -DCOALESCE_ENABLE_CUDA=OFF
# Without MPI: Open MPI's own allocations at exit would read as leaks to LeakSanitizer.
# With clang 14 (install-deps.sh): the instrumented tests compile in half GCC's time (14 against 27
# CPU minutes, 2026-12-05), and a second compiler checks the headers.
run_suite sanitize -DCMAKE_BUILD_TYPE=Debug "$line_tables" -DCOALESCE_ENABLE_CUDA=OFF -DCOALESCE_SANITIZE=ON -DCOALESCE_BUILD_SAMPLES=OFF \
  -DCOALESCE_ENABLE_MPI=OFF -DCMAKE_CXX_COMPILER=clang++-14
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_scope=(-DCOALESCE_BUILD_HOST_TESTS=ON -DCOALESCE_BUILD_SAMPLES=ON)
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "=== no GPU visible: the CUDA build compiles the library, GPU tests, PTX checks, header examples and consumers only"
    echo "=== (the add_subdirectory consumer, a second compile of the library, ran in the CPU build)"
    cuda_scope=(-DCOALESCE_BUILD_HOST_TESTS=OFF -DCOALESCE_BUILD_SAMPLES=OFF -DCOALESCE_TEST_SUBDIRECTORY_CONSUMER=OFF)
  fi
  run_suite cuda -DCMAKE_BUILD_TYPE=Release -DCOALESCE_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${cuda_scope[@]}"
else
  echo "=== SKIPPED: no nvcc on this machine, the CUDA build was not compiled"
fi
echo "=== all test suites finished"
