#!/usr/bin/env bash
# Kernel by kernel, where the carried neighbor_build spends its GPU time (ncu, clocks left alone):
# duration, instructions, issue activity, DRAM bytes and registers of every launch of one run at
# --n (default 4M), as CSV under $OUT. NCU_KERNELS (a regex) profiles only those kernels, with
# their warp stall reasons too (ncu's WarpStateStats section), matched against the kernels' function
# names, or NCU_NAME_BASE=mangled to tell template instances apart (the engine's loop, staging and
# store passes are all for_each_index_kernel: NCU_KERNELS='staged_warps|stage_cluster_slots|store_slot').
#   usage: scripts/gpu-profile-carried.sh [n]   (carry ["build/carry"])
set -uo pipefail
source "$(dirname "$0")/carried-env.sh"
export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
n=${1:-4194304}
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
filter=()
if [ -n "${NCU_KERNELS:-}" ]; then
  filter=(--kernel-name-base "${NCU_NAME_BASE:-function}" --kernel-name "regex:$NCU_KERNELS" --launch-count ${NCU_LAUNCHES:-4}
          --section WarpStateStats --section SchedulerStats)
fi
timeout 480 ncu --clock-control none --csv --print-units base --metrics "$metrics" "${filter[@]}" \
  --log-file "$out/ncu_neighbor_build.csv" \
  build/carry/neighbor_build --n "$n" --runs 1 > "$out/neighbor_build_profiled.txt" 2>&1
echo "ncu rc $? ($((SECONDS - t0)) s), $(wc -l < "$out/ncu_neighbor_build.csv") lines"
tail -3 "$out/neighbor_build_profiled.txt"
