#!/usr/bin/env bash
# Nsight Compute's memory and stall counters for every copy and conversion kernel of one
# particle_integrator run (--runs 1): the copy ceiling's float4 kernel beside the tile, the
# one-record-per-thread kernel, the run kernels and the column kernels, in launch order, so a
# conversion's gap to the ceiling can be read as bytes moved (DRAM and L2 sectors) or as time
# the warps spent waiting (barrier, long scoreboard, throttles). Writes ncu_conversions.csv.
#   benchmarks/particle_integrator/ncu_conversions.sh [BUILD_DIR] [OUT_DIR]   # from the repository root
set -euo pipefail
build=${1:-build-gpu}
out=${2:-.}
exe=$build/benchmarks/particle_integrator/particle_integrator
[[ -x $exe ]] || { echo "ncu_conversions: $exe not found; build with -DCOALESCE_ENABLE_CUDA=ON first" >&2; exit 2; }
command -v ncu > /dev/null || { echo "ncu_conversions: ncu is not on PATH" >&2; exit 2; }
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread
metrics+=,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
kernels='regex:copy_float4|tiled_copy|record_per_thread|transpose_run|copy_run|copy_columns_kernel|quad_columns|word_columns|word_shape|number_columns|convert_columns_kernel'
ncu --clock-control none --kernel-name-base function --kernel-name "$kernels" --launch-count 250 --print-units base \
  --metrics "$metrics" --csv "$exe" --runs 1 --conversions-only > "$out/ncu_conversions.csv" 2> "$out/ncu_conversions.err" || {
  tail -20 "$out/ncu_conversions.err" >&2
  exit 2
}
# One line per launch: kernel, time, GB read and written, L2 sectors, stalls per issue.
awk '
  /^"/ {
    line = $0; sub(/^"/, "", line); sub(/"[ \r]*$/, "", line)
    n = split(line, f, /","/)
    if (!have) { for (i = 1; i <= n; ++i) { if (f[i] == "ID") id = i; if (f[i] == "Kernel Name") k = i
                 if (f[i] == "Metric Name") m = i; if (f[i] == "Metric Value") v = i }
                 have = 1; next }
    value = f[v]; gsub(/,/, "", value)
    if (!(f[id] in name)) { order[++count] = f[id]; name[f[id]] = f[k] }
    val[f[id], f[m]] = value
  }
  END {
    printf "%-4s %-26s %9s %7s %7s %9s %9s %6s %6s %6s %6s %6s %5s\n", "id", "kernel", "us", "GB rd", "GB wr",
      "L2 rd", "L2 wr", "bar", "lsb", "lgthr", "drain", "mio", "occ%"
    for (c = 1; c <= count; ++c) {
      i = order[c]
      printf "%-4s %-26s %9.1f %7.3f %7.3f %9.3g %9.3g %6.2f %6.2f %6.2f %6.2f %6.2f %5.1f\n", i, substr(name[i], 1, 26),
        val[i, "gpu__time_duration.sum"] / 1e3, val[i, "dram__bytes_read.sum"] / 1e9, val[i, "dram__bytes_write.sum"] / 1e9,
        val[i, "lts__t_sectors_srcunit_tex_op_read.sum"], val[i, "lts__t_sectors_srcunit_tex_op_write.sum"],
        val[i, "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"],
        val[i, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"],
        val[i, "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"],
        val[i, "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio"],
        val[i, "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"],
        val[i, "sm__warps_active.avg.pct_of_peak_sustained_active"]
    }
  }' "$out/ncu_conversions.csv"
