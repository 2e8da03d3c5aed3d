#!/usr/bin/env bash
# The one batch for the H200 machine: build (CUDA, Release, sm_90), run every test, then the
# benchmarks, leaving logs under $OUT (at most 8 files come back from a device run: gpu.txt,
# ctest.log, sanitize.log, bench.txt, integrator.json, layouts.json, streams.json, ncu.txt, and build.log on failure). Run from
# the repository root after ../shared/tools/stage-gpu-deps, with .deps carried.
#   usage: scripts/gpu-check.sh [tests|sanitize|bench|ncu|md|all]...   (all = tests + sanitize + bench + ncu)
# md: examples/distributed_md on this machine's first GPU (one rank, 1M particles; md.txt): the
# rebuild's parts and its share of all steps, at a fixed rebuild interval and by the displacement
# criterion, and the sample's CTest checks (forces bit-identical at 1, 2 and 4 ranks).
set -uo pipefail
what=" ${*:-all} "
wants() { [[ $what == *" all "* || $what == *" $1 "* ]]; }
out=${OUT:-$PWD/out}
mkdir -p "$out"
logs=$(mktemp -d)
export CMAKE_PREFIX_PATH=$PWD/.deps
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.txt"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOALESCE_ENABLE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" > "$logs/configure.log" 2>&1 || { cp "$logs/configure.log" "$out/"; tail -30 "$logs/configure.log"; exit 1; }
cmake --build build-gpu -j 16 -- -k 0 > "$logs/build.log" 2>&1 || { cp "$logs/build.log" "$out/"; grep -E "error" "$logs/build.log" | head -40; exit 1; }
status=0
if wants tests; then
  (cd build-gpu && ctest --output-on-failure -j 4 --timeout 300) > "$out/ctest.log" 2>&1 || status=1
  tail -25 "$out/ctest.log"
fi
if wants sanitize; then
  scripts/gpu-sanitize.sh build-gpu "$out" || status=1
fi
if wants bench; then
  benchmarks=build-gpu/benchmarks examples=build-gpu/examples
  bench=$out/bench.txt
  : > "$bench"
  run_sample() { echo "=== $*" >> "$bench"; "$@" >> "$bench" 2>&1 || { echo "FAILED: $*" >> "$bench"; status=1; }; }
  run_sample $benchmarks/particle_integrator/particle_integrator --json "$out/integrator.json"
  run_sample $benchmarks/neighbor_reorder/neighbor_reorder --layouts --json "$out/layouts.json"
  run_sample $examples/convert_legacy/convert_legacy
  run_sample $benchmarks/neighbor_reorder/neighbor_reorder
  run_sample $benchmarks/neighbor_reorder/neighbor_reorder --bench
  run_sample $benchmarks/reorder_streams/reorder_streams --json "$out/streams.json"
  run_sample $benchmarks/neighbor_build/neighbor_build
  grep -E "^(step|drift_x|convert|ceiling) |^(random|hilbert) order|FAILED|DIFFERENT|x hand-written|x bare|x one alone|x eager|x sum|^library |^hand-written \\(|^ceiling: writing|^clusters:|lists identical|^half list|^rebuild for CUDA graphs|^one sort for|^  positions |^  error vs|^  run to run|^vel as half" "$bench"
fi
if wants ncu; then
  # Nsight Compute's sector counts against coalesce::analysis's predictions (docs/analysis.md).
  export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
  examples/explore/ncu_compare.sh build-gpu > "$out/ncu.txt" 2>&1 || status=1
  cat "$out/ncu.txt"
  # L1, L2 and DRAM counters of the neighbour kernel on every layout (the advisor's cache model is
  # held against the copy in tests/data by tests/advisor_test.cpp).
  benchmarks/neighbor_reorder/ncu_layouts.sh build-gpu "$out" || status=1
  # The cluster format's shared-memory tile: no bank conflicts.
  benchmarks/neighbor_build/ncu_tile.sh build-gpu "$out" || status=1
fi
if [[ $what == *" md "* ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  md=$out/md.txt sample=build-gpu/examples/distributed_md/distributed_md
  : > "$md"
  (cd build-gpu && ctest -R distributed --output-on-failure --timeout 300) >> "$md" 2>&1 || status=1
  for every in 10 0; do
    for args in "" "--no-overlap"; do
      echo "=== distributed_md --n-per-rank 1000000 --steps 100 --rebuild-every $every $args" >> "$md"
      mpirun -np 1 $sample --n-per-rank 1000000 --steps 100 --rebuild-every $every $args >> "$md" 2>&1 || status=1
    done
  done
  cat "$md"
fi
exit $status
