#!/usr/bin/env bash
# Nsight Compute's L1, L2 and DRAM counters for the pair kernel on every layout, random and
# Hilbert order (neighbor_reorder --layouts): what the advisor's L2-sector and DRAM predictions
# are held against (docs/analysis.md). Writes the raw CSV and a summary, one line per launch in
# launch order (float4, soa, aos, aosoa<32>, split<pos>, split<pos, mass>, float4 again; random
# order first, then Hilbert order), to OUT_DIR.
#   benchmarks/neighbor_reorder/ncu_layouts.sh [BUILD_DIR] [OUT_DIR]   # from the repository root
set -euo pipefail
build=${1:-build-gpu}
out=${2:-.}
exe=$build/benchmarks/neighbor_reorder/neighbor_reorder
[[ -x $exe ]] || { echo "ncu_layouts: $exe not found; build with -DCOALESCE_ENABLE_CUDA=ON first" >&2; exit 2; }
command -v ncu > /dev/null || { echo "ncu_layouts: ncu is not on PATH" >&2; exit 2; }
metrics=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
# --runs 1: one warm-up and one timed launch per layout; the pair kernels are the launches whose
# demangled name holds pair_kernel (the float4 baseline's and the library's).
ncu --clock-control none --kernel-name-base demangled --kernel-name regex:pair_kernel --metrics "$metrics" --csv \
  "$exe" --layouts --runs 1 > "$out/ncu_layouts.csv" 2> "$out/ncu_layouts.err" || {
  cat "$out/ncu_layouts.err" >&2
  exit 2
}
awk '
  /^"/ {
    line = $0; sub(/^"/, "", line); sub(/"[ \r]*$/, "", line)
    n = split(line, f, /","/)
    if (!have) { for (i = 1; i <= n; ++i) { if (f[i] == "ID") id = i; if (f[i] == "Kernel Name") k = i;
                   if (f[i] == "Metric Name") m = i; if (f[i] == "Metric Value") v = i }
                 if (id && k && m && v) have = 1; next }
    value = f[v]; gsub(/,/, "", value)
    key = f[id]
    if (!(key in seen)) { seen[key] = 1; order[++count] = key; name[key] = f[k] }
    val[key, f[m]] = value
  }
  END {
    printf "%-4s %-40s %12s %12s %12s %12s %12s %12s %10s\n", "id", "kernel", "l1 req", "l1 sect", "l2 rd sect", "l2 wr sect", "dram rd B", "dram wr B", "ns"
    for (i = 1; i <= count; ++i) {
      key = order[i]; kn = name[key]; sub(/\(.*/, "", kn); if (length(kn) > 40) kn = substr(kn, length(kn) - 39)
      printf "%-4s %-40s %12s %12s %12s %12s %12s %12s %10s\n", key, kn,
        val[key, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"], val[key, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"],
        val[key, "lts__t_sectors_srcunit_tex_op_read.sum"], val[key, "lts__t_sectors_srcunit_tex_op_write.sum"],
        val[key, "dram__bytes_read.sum"], val[key, "dram__bytes_write.sum"], val[key, "gpu__time_duration.sum"]
    }
  }' "$out/ncu_layouts.csv" | tee "$out/ncu_layouts.txt"
