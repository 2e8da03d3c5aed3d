#!/usr/bin/env bash
# Compares coalesce::analysis's predictions with Nsight Compute's counts, kernel by kernel, for
# the deterministic patterns of coalesce_ncu_patterns: L1 sectors per request (the warp model;
# agree within 1 %), and the whole kernel's L2 sectors and DRAM bytes read (the advisor's cache
# model, analysis::predict_loads; agree within 15 %).
#
#   examples/explore/ncu_compare.sh [BUILD_DIR]     # default build-gpu; run from the repo root
#
# Needs: a CUDA build (COALESCE_ENABLE_CUDA=ON) with samples, `ncu` on PATH, permission to read
# GPU performance counters. Prints a table and exits 0 when every kernel agrees, 1 when any
# differs, 2 when something could not run.
set -euo pipefail

build=${1:-build-gpu}
patterns=$build/examples/explore/coalesce_ncu_patterns
explore=$build/examples/explore/coalesce-explore
for exe in "$patterns" "$explore"; do
  if [[ ! -x $exe ]]; then
    echo "ncu_compare: $exe not found; build with -DCOALESCE_ENABLE_CUDA=ON into $build first" >&2
    exit 2
  fi
done
if ! command -v ncu > /dev/null; then
  echo "ncu_compare: ncu (Nsight Compute CLI) is not on PATH" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The patterns and the explorer arguments that predict each (the program is the one list).
"$patterns" --list --dump-index "$work" > "$work/list.txt"

metrics=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum
if ! ncu --clock-control none --print-kernel-base function --metrics "$metrics" --csv \
     "$patterns" --dump-index "$work" > "$work/ncu.csv" 2> "$work/ncu.err"; then
  echo "ncu_compare: ncu failed:" >&2
  cat "$work/ncu.err" "$work/ncu.csv" >&2
  exit 2
fi

# ncu's CSV: every field quoted; numbers may carry thousands separators. Columns are found by
# their header names, which differ between ncu versions. Output: kernel sectors requests l2 dram.
awk '
  /^"/ {
    line = $0
    sub(/^"/, "", line); sub(/"[ \r]*$/, "", line)
    n = split(line, f, /","/)
    if (!have_header) {
      for (i = 1; i <= n; ++i) { if (f[i] == "Kernel Name") k = i; if (f[i] == "Metric Name") m = i; if (f[i] == "Metric Value") v = i }
      if (k && m && v) have_header = 1
      next
    }
    name = f[k]; sub(/\(.*/, "", name); sub(/<.*/, "", name); sub(/^.* /, "", name); sub(/^.*::/, "", name)
    value = f[v]; gsub(/,/, "", value)
    if (f[m] ~ /l1tex__t_sectors_pipe_lsu_mem_global_op_ld/) sectors[name] += value
    if (f[m] ~ /l1tex__t_requests_pipe_lsu_mem_global_op_ld/) requests[name] += value
    if (f[m] ~ /lts__t_sectors_srcunit_tex_op_read/) l2[name] += value
    if (f[m] ~ /dram__bytes_read/) dram[name] += value
    if (!(name in seen)) { seen[name] = 1; order[++count] = name }
  }
  END {
    if (!have_header) { print "no CSV header in ncu output" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= count; ++i) print order[i], sectors[order[i]] + 0, requests[order[i]] + 0, l2[order[i]] + 0, dram[order[i]] + 0
  }' "$work/ncu.csv" > "$work/measured.txt" || { echo "ncu_compare: could not read ncu's CSV:" >&2; head -20 "$work/ncu.csv" >&2; exit 2; }

# Keep ncu's own output where the caller wants it (NCU_RAW_DIR), to check the parsing above.
[[ -n ${NCU_RAW_DIR:-} ]] && cp "$work/ncu.csv" "$NCU_RAW_DIR/ncu_raw.csv"

differ=0
# within PERCENT of the prediction: "agree", else "DIFFER"
verdict() { awk -v m="$1" -v p="$2" -v pct="$3" 'BEGIN { d = m - p; if (d < 0) d = -d; print (d <= pct / 100 * p ? "agree" : "DIFFER") }'; }
printf '%-18s %10s %10s %8s | %12s %12s %7s | %12s %12s %7s\n' kernel "ncu s/req" predicted L1 "ncu L2 sect" predicted L2 "ncu DRAM B" predicted DRAM
while IFS='|' read -r name args; do
  row=$(awk -v n="$name" '$1 == n' "$work/measured.txt")
  if [[ -z $row ]]; then
    printf '%-18s %s\n' "$name" "NOT PROFILED"
    differ=1
    continue
  fi
  read -r _ sectors requests l2 dram <<< "$row"
  if [[ $requests == 0 ]]; then
    printf '%-18s %s\n' "$name" "NO REQUESTS"
    differ=1
    continue
  fi
  # shellcheck disable=SC2086  # args is a list of explorer options
  json=$("$explore" $args --json)
  field() { grep -o "\"$1\":[0-9.e+-]*" <<< "$json" | head -1 | cut -d: -f2; }
  predicted=$(field predicted_ncu_sectors_per_request)
  predicted_l2=$(field l2_sectors)
  predicted_dram=$(field dram_read_bytes)
  measured=$(awk -v s="$sectors" -v r="$requests" 'BEGIN { printf "%.3f", s / r }')
  v1=$(verdict "$measured" "$predicted" 1)
  v2=$(verdict "$l2" "$predicted_l2" 15)
  v3=$(verdict "$dram" "$predicted_dram" 15)
  [[ $v1 == agree && $v2 == agree && $v3 == agree ]] || differ=1
  printf '%-18s %10s %10.3f %8s | %12s %12s %7s | %12s %12s %7s\n' "$name" "$measured" "$predicted" "$v1" \
    "$l2" "$predicted_l2" "$v2" "$dram" "$predicted_dram" "$v3"
done < "$work/list.txt"

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 || true)
echo "GPU: ${gpu:-unknown}; $(ncu --version | tail -1); $(date -u +%Y-%m-%d)"
echo "levels: L1 sectors per request of global loads (l1tex__t_*_pipe_lsu_mem_global_op_ld, within 1 %);"
echo "  L2 sectors read (lts__t_sectors_srcunit_tex_op_read) and DRAM bytes read (dram__bytes_read) of the"
echo "  whole kernel, caches flushed before it by ncu (within 15 %); the kernels' stores are not counted"
exit $differ
