#!/usr/bin/env bash
# The pair engine's batch for the H200 machine (issue: cluster-pair lists and compute_pairs): build
# the GPU tests and neighbor_build only, run the GPU tests, compute-sanitizer over the engine's and
# the lists' tests, then neighbor_build at 4M (its engine rows) and 1M. Logs under $OUT. Run from
# the repository root after ../shared/tools/stage-gpu-deps, with .deps carried.
#   usage: scripts/gpu-pairs.sh [build] [tests] [sanitize] [bench]   (none: all four)
set -uo pipefail
what=" ${*:-build tests sanitize bench} "
wants() { [[ $what == *" $1 "* ]]; }
out=${OUT:-$PWD/out}
mkdir -p "$out"
export CMAKE_PREFIX_PATH=$PWD/.deps
status=0
t0=$SECONDS
if wants build; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.txt"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOALESCE_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  cmake --build build-gpu -j 16 --target coalesce_gpu_tests neighbor_build lj_md -- -k 0 > "$out/build.log" 2>&1 ||
    { grep -E "error" -A3 "$out/build.log" | head -60; exit 1; }
  echo "built in $((SECONDS - t0)) s"
fi
gpu_tests=build-gpu/tests/gpu/coalesce_gpu_tests
if wants tests; then
  $gpu_tests > "$out/gpu_tests.log" 2>&1 || status=1
  grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -20
  echo "tests done $((SECONDS - t0)) s"
fi
if wants sanitize; then
  filter='*compute_pairs*,*cluster_pairs*,*traversal*'
  for tool in memcheck racecheck synccheck initcheck; do
    timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 10 $gpu_tests -tc="$filter" \
      > "$out/sanitize_$tool.log" 2>&1
    rc=$?
    echo "sanitize $tool rc $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize_$tool.log" | tail -1) $(grep -E 'test cases' "$out/sanitize_$tool.log")"
    ((rc == 0)) || status=1
  done
  echo "sanitize done $((SECONDS - t0)) s"
fi
if wants bench; then
  nb=build-gpu/benchmarks/neighbor_build/neighbor_build
  $nb > "$out/bench_4m.txt" 2>&1 || status=1
  $nb --n 1048576 > "$out/bench_1m.txt" 2>&1 || status=1
  grep -E -A6 "^pair engine" "$out/bench_4m.txt"
  grep -E "^hand-written|^library padded_columns|FAILED|DIFFERENT|lists identical" "$out/bench_4m.txt"
  grep -E -A6 "^pair engine" "$out/bench_1m.txt"
  md=build-gpu/examples/lj_md/lj_md
  for format in cluster_pairs padded_columns; do  # 1,048,576 atoms (64^3 fcc cells), 1000 steps
    $md --cells 64 --steps 1000 --thermo 250 --format $format > "$out/md_$format.txt" 2>&1 || status=1
    grep -E "^lj_md|^time per step|^energy drift|FAILED" "$out/md_$format.txt"
  done
  echo "bench done $((SECONDS - t0)) s"
fi
exit $status
