#!/usr/bin/env bash
# Nsight Compute's shared-memory counters for the cluster format's force kernel (the warp tile of
# coalesce/neighbors/cluster_tile.hpp): bank conflicts per shared load and store instruction, and
# wavefronts per instruction (the hardware's own count: 2 for a broadcast 16-byte load on the
# H200, about 2 for a warp's 512-byte store). The points are stored and read without conflicts;
# the bodies' reads of the candidates' indices conflict two-way where two lanes read slots 32
# apart (64 indices in 32 banks), about 6 % of the shared loads in the LJ benchmark. Fails when
# conflicts exceed 10 % of the shared instructions. Writes ncu_tile.csv and prints a summary.
#   benchmarks/neighbor_build/ncu_tile.sh [BUILD_DIR] [OUT_DIR] [PARTICLES]   # from the repository root
set -euo pipefail
build=${1:-build-gpu}
out=${2:-.}
n=${3:-1048576}
exe=$build/benchmarks/neighbor_build/neighbor_build
[[ -x $exe ]] || { echo "ncu_tile: $exe not found; build with -DCOALESCE_ENABLE_CUDA=ON first" >&2; exit 2; }
command -v ncu > /dev/null || { echo "ncu_tile: ncu is not on PATH" >&2; exit 2; }
metrics=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
metrics+=,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed.sum
metrics+=,gpu__time_duration.sum
# The library's force kernel over the cluster list: the launch whose demangled name holds both
# library_force and clusters (the build's own kernels hold neither together). One launch.
ncu --clock-control none --kernel-name-base demangled --kernel-name 'regex:library_force.*clusters' --launch-count 1 --print-units base \
  --metrics "$metrics" --csv "$exe" --n "$n" --runs 1 > "$out/ncu_tile.csv" 2> "$out/ncu_tile.err" || {
  cat "$out/ncu_tile.err" >&2
  exit 2
}
awk '
  /^"/ {
    line = $0; sub(/^"/, "", line); sub(/"[ \r]*$/, "", line)
    n = split(line, f, /","/)
    if (!have) { for (i = 1; i <= n; ++i) { if (f[i] == "Metric Name") m = i; if (f[i] == "Metric Value") v = i }
                 if (m && v) have = 1; next }
    value = f[v]; gsub(/,/, "", value); val[f[m]] = value
  }
  END {
    ld = val["smsp__inst_executed_op_shared_ld.sum"]; st = val["smsp__inst_executed_op_shared_st.sum"]
    if (ld == "" || ld == 0) { print "ncu_tile: no shared-memory loads counted (was the cluster kernel profiled?)"; exit 1 }
    ldw = val["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] / ld
    stw = st > 0 ? val["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] / st : 0
    printf "cluster tile: %.1f %% of shared instructions had a bank conflict; ", 100 * (val["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] + val["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]) / (ld + st)
    printf "cluster tile: %s shared loads, %.3f wavefronts each, %s bank conflicts; %s shared stores, %.3f wavefronts each, %s bank conflicts; %s instructions; %.3f ms\n",
      ld, ldw, val["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"], st, stw,
      val["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"], val["smsp__inst_executed.sum"],
      val["gpu__time_duration.sum"] / 1e6
    conflicts = val["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] + val["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]
    if (conflicts > 0.10 * (ld + st)) { print "ncu_tile: FAILED, the tile has bank conflicts"; exit 1 }
  }' "$out/ncu_tile.csv"
