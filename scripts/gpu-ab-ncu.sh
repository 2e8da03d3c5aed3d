#!/usr/bin/env bash
# One device call: two neighbor_build binaries interleaved (A = build/carry/neighbor_build, B =
# build/carry/neighbor_build_b: A B B A at --n ${N:-4194304}), then Nsight Compute over A's
# forces-only cluster-pair kernels (the engine's half loop with the LJ law, the hand-written
# kernel): time, instructions, issue activity, occupancy and the warps' stall reasons, as CSV.
#   usage: scripts/gpu-ab-ncu.sh   (carry ["build/carry"]; logs under $OUT)
set -uo pipefail
source "$(dirname "$0")/carried-env.sh"
export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
n=${N:-4194304}
nb() {  # binary, log name
  timeout 130 "$1" --n "$n" > "$out/$2.txt" 2>&1
  echo "$2 rc $? ($((SECONDS - t0)) s)"
  grep -E "^engine cluster_pairs \(half\)|^hand-written cluster|^naive force|FAILED" "$out/$2.txt"
}
nb build/carry/neighbor_build a_run1
nb build/carry/neighbor_build_b b_run1
nb build/carry/neighbor_build_b b_run2
nb build/carry/neighbor_build a_run2
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,sm__cycles_elapsed.avg.per_second
timeout 300 ncu --clock-control none --csv --print-units base --metrics "$metrics" \
  --kernel-name-base demangled --kernel-name "regex:hand_cluster_pair_force|staged_warps<false, false.*lennard_jones[,>]" \
  --launch-count ${NCU_LAUNCHES:-3} --section WarpStateStats --section SchedulerStats --section Occupancy \
  --log-file "$out/ncu_cluster_loops.csv" build/carry/neighbor_build --n "$n" --runs 1 > "$out/ncu_run.txt" 2>&1
echo "ncu rc $? ($((SECONDS - t0)) s), $(wc -l < "$out/ncu_cluster_loops.csv") lines"
grep -E "gpu__time_duration|inst_executed|issue_active|warps_active|cycles_elapsed|registers" "$out/ncu_cluster_loops.csv" | awk -F'","' '{print substr($5,1,40), $(NF-2), $NF}' | head -24
echo "done ($((SECONDS - t0)) s)"
