#!/usr/bin/env bash
# One device call that checks a session's GPU work in the time a call allows: build everything
# (CUDA, Release, sm_90), run the GPU tests and the CPU tests on GPU memory, then neighbor_build at
# 4M (the pair engine's rows) and lj_md at 1M. Logs under $OUT; a short table last.
#   usage: scripts/gpu-session.sh [build] [tests] [bench] [sass] [profile]   (none: the first three)
# After it, on the same warm machine: scripts/gpu-sanitize.sh build-gpu "$OUT" (the sanitizers).
set -uo pipefail
what=" ${*:-build tests bench} "
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
  # BUILD_TARGETS="a b": only those (a call's 600 s), else everything.
  cmake --build build-gpu -j 16 ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k 0 > "$out/build.log" 2>&1 || { grep -E "error" -A3 "$out/build.log" | head -60; exit 1; }
  echo "built in $((SECONDS - t0)) s"
fi
if wants tests; then
  build-gpu/tests/gpu/coalesce_gpu_tests > "$out/gpu_tests.log" 2>&1 || status=1
  grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -20
  build-gpu/tests/coalesce_tests > "$out/cpu_tests_on_gpu.log" 2>&1 || status=1
  grep -E "ERROR|FAILED|test cases|assertions" "$out/cpu_tests_on_gpu.log" | tail -20
  echo "tests done $((SECONDS - t0)) s"
fi
if wants bench; then
  build-gpu/benchmarks/neighbor_build/neighbor_build > "$out/neighbor_build_4m.txt" 2>&1 || status=1
  grep -E "^hand-written|^library padded_columns|FAILED|DIFFERENT|lists identical|box_fixed" "$out/neighbor_build_4m.txt"
  grep -E -A6 "^pair engine" "$out/neighbor_build_4m.txt"
  for format in cluster_pairs padded_columns; do  # 1,048,576 atoms (64^3 fcc cells), 1000 steps
    build-gpu/examples/lj_md/lj_md --cells 64 --steps 1000 --thermo 250 --format $format > "$out/md_$format.txt" 2>&1 || status=1
    grep -E "^lj_md|^time per step|^energy drift|FAILED" "$out/md_$format.txt"
  done
  echo "bench done $((SECONDS - t0)) s"
fi
if wants sass; then
  # The cluster-pair loops' machine code (engine and hand-written), to count instructions per entry.
  cuobjdump -sass build-gpu/benchmarks/neighbor_build/neighbor_build |
    awk '/Function :/ { keep = ($0 ~ /staged_warps|hand_cluster_pair_force|hand_stack_force/) } keep' > "$out/cluster_loops.sass"
  grep -c "Function :" "$out/cluster_loops.sass"
fi
if wants profile; then
  # Where the cluster-pair build and the force pass spend their time, kernel by kernel (1M atoms):
  # duration, instructions issued, issue activity, for the build's steps, the engine's loop and the
  # hand-written cluster-pair kernel (averages over the launches profiled).
  export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
  kernels='assign_kernel|cell_bounds|gather_points|column_counts|slots_kernel|boxes_kernel|count_kernel_warp|fill_kernel_warp|staged_warps|hand_cluster_pair_force|hand_stack_force|run_staged_cluster_pairs'
  ncu --kernel-name-base mangled --kernel-name "regex:$kernels" --launch-count 150 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active \
    --print-summary per-kernel build-gpu/benchmarks/neighbor_build/neighbor_build --n 1048576 --runs 1 > "$out/profile.txt" 2>&1 || status=1
  grep -E "for_each_index_kernel|_kernel|hand_cluster|gpu__time_duration|smsp__inst_executed|issue_active|warps_active" "$out/profile.txt" | cut -c1-160 | tail -80
  echo "profile done $((SECONDS - t0)) s"
fi
exit $status
