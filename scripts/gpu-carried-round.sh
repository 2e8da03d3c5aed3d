#!/usr/bin/env bash
# One device call that does the most important part first and stops starting parts near the call's
# limit (BUDGET seconds, default 520): the carried neighbor_build (4M), the previous one
# (build/carry/neighbor_build_* if carried), the GPU suite, examples/lj_md over both formats
# (MD_STEPS steps, when set and carried), other states at 1M (STATES: lines of neighbor_build
# options), memcheck over the sort and pair cases, then both neighbor_builds again in the other order.
#   usage: scripts/gpu-carried-round.sh   (carry ["build/carry"]; logs under $OUT)
set -uo pipefail
source "$(dirname "$0")/carried-env.sh"
budget=${BUDGET:-520}
left() { [ $((SECONDS - t0)) -lt "$1" ]; }
base=$(ls build/carry/neighbor_build_* 2>/dev/null | head -1)
nb() {  # binary, log name
  timeout 130 "$1" ${NB_ARGS:-} > "$out/$2.txt" 2>&1
  echo "$2 rc $? ($((SECONDS - t0)) s)"
  grep -E "^one sort|^engine cluster_pairs \(half\) |^hand-written|^naive force|FAILED" "$out/$2.txt"
}
nb build/carry/neighbor_build nb_new_run1
[ -n "$base" ] && left $((budget - 300)) && nb "$base" nb_base_run1
if [ -x build/carry/coalesce_gpu_tests ] && left $((budget - 200)); then
  timeout 200 build/carry/coalesce_gpu_tests > "$out/gpu_tests.log" 2>&1
  echo "gpu tests rc $? ($((SECONDS - t0)) s)"
  grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -8
fi
if [ -x build/carry/lj_md ] && [ -n "${MD_STEPS:-}" ]; then  # the example's drift and step time per format
  for format in cluster_pairs padded_columns; do
    left $((budget - 120)) || continue
    timeout 60 build/carry/lj_md --cells 30 --steps "$MD_STEPS" --thermo 1000 --format $format > "$out/lj_md_$format.txt" 2>&1
    echo "lj_md $format rc $? ($((SECONDS - t0)) s)"
    tail -4 "$out/lj_md_$format.txt"
  done
fi
while read -r state; do
  [ -n "$state" ] && left $((budget - 60)) || continue
  name=$(echo "$state" | tr -c 'a-z0-9.\n' '_')
  timeout 60 build/carry/neighbor_build --n 1048576 --runs 5 $state > "$out/nb_1m_$name.txt" 2>&1
  echo "state $state rc $? ($((SECONDS - t0)) s)"
  grep -E "^hand-written|^engine|^naive force|^neighbor_build:" "$out/nb_1m_$name.txt" | head -14
done <<< "${STATES:-}"
if [ -x build/carry/coalesce_gpu_tests ] && left $((budget - 90)); then
  timeout 90 compute-sanitizer --tool memcheck build/carry/coalesce_gpu_tests \
    --test-case="${MEMCHECK_CASES:-*sort_by_key*,*cluster*pair*}" > "$out/memcheck.log" 2>&1
  echo "memcheck rc $? ($((SECONDS - t0)) s)"
  grep -E "test cases|ERROR SUMMARY" "$out/memcheck.log" | tail -3
fi
[ -n "$base" ] && left $((budget - 130)) && nb "$base" nb_base_run2
left $((budget - 130)) && nb build/carry/neighbor_build nb_new_run2
echo "done ($((SECONDS - t0)) s)"
