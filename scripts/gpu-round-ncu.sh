#!/usr/bin/env bash
# One device call: the carried neighbor_build at 4M, the GPU suite, memcheck over MEMCHECK_CASES,
# Nsight Compute over the engine's cluster-pair kernels (staging, loop, store: mangled names) and
# the hand-written cluster kernel, then (SECOND_RUN set) neighbor_build again.
#   usage: scripts/gpu-round-ncu.sh   (carry ["build/carry"]; logs under $OUT)
set -uo pipefail
source "$(dirname "$0")/carried-env.sh"
export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
nb() {
  timeout 130 build/carry/neighbor_build > "$out/$1.txt" 2>&1
  echo "$1 rc $? ($((SECONDS - t0)) s)"
  grep -E "^engine cluster_pairs|^hand-written cluster|^naive force|rebuild for CUDA graphs \(cluster|FAILED|identical" "$out/$1.txt"
}
nb nb_run1
timeout 150 build/carry/coalesce_gpu_tests > "$out/gpu_tests.log" 2>&1
echo "gpu tests rc $? ($((SECONDS - t0)) s)"; grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -8
timeout 120 compute-sanitizer --tool memcheck build/carry/coalesce_gpu_tests --test-case="${MEMCHECK_CASES:-*fixed*}" > "$out/memcheck.log" 2>&1
echo "memcheck rc $? ($((SECONDS - t0)) s)"; grep -E "test cases|ERROR SUMMARY" "$out/memcheck.log" | tail -3
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,dram__bytes.sum
timeout 240 ncu --clock-control none --csv --print-units base --metrics "$metrics" \
  --kernel-name-base mangled --kernel-name "regex:staged_warps|stage_cluster_slots|store_slot|hand_cluster_pair_force" \
  --launch-count ${NCU_LAUNCHES:-60} --section WarpStateStats \
  --log-file "$out/ncu_engine.csv" build/carry/neighbor_build --runs 1 > "$out/ncu_run.txt" 2>&1
echo "ncu rc $? ($((SECONDS - t0)) s), $(wc -l < "$out/ncu_engine.csv") lines"
[ -n "${SECOND_RUN:-}" ] && nb nb_run2
echo "done ($((SECONDS - t0)) s)"
