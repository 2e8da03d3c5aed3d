#!/usr/bin/env bash
# One device call over the carried binaries (scripts/gpu-carried.sh says how they are built): the
# whole GPU test suite, then compute-sanitizer's memcheck over it, then Nsight Compute's launch and
# occupancy figures of the engine's cluster-pair loop against the hand-written cluster kernel
# (1M atoms). Logs under $OUT.
set -uo pipefail
out=${OUT:-$PWD/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/build/carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$SECONDS
timeout ${TEST_SECONDS:-200} build/carry/coalesce_gpu_tests > "$out/gpu_tests.log" 2>&1
echo "gpu tests rc $? ($((SECONDS - t0)) s)"
grep -E "ERROR|FAILED|CRASH|test cases|assertions" "$out/gpu_tests.log" | tail -8
if [[ ${SANITIZE:-1} == 1 ]]; then
  SANITIZE_GPU_TESTS=build/carry/coalesce_gpu_tests SANITIZE_CPU_TESTS= SANITIZE_SAMPLES=0 \
    SANITIZE_TOOLS="${SANITIZE_TOOLS:-memcheck}" timeout ${SANITIZE_SECONDS:-300} scripts/gpu-sanitize.sh build/carry "$out"
  echo "sanitize rc $? ($((SECONDS - t0)) s)"
fi
if [[ ${PROFILE:-1} == 1 ]] && command -v ncu > /dev/null; then
  timeout 120 ncu --kernel-name regex:'hand_cluster_pair_force|staged_warps' --launch-count 4 \
    --section LaunchStats --section Occupancy --section SpeedOfLight \
    build/carry/neighbor_build --n 1048576 --runs 1 > "$out/ncu.txt" 2>&1
  echo "ncu rc $? ($((SECONDS - t0)) s)"
  grep -E "hand_cluster_pair_force|staged_warps|Registers Per|Achieved Occupancy|Duration|Block Size" "$out/ncu.txt" |
    cut -c1-160 | head -40
fi
