#!/usr/bin/env bash
# compute-sanitizer over the GPU tests and the samples' small runs, on the H200 machine:
# memcheck (out-of-bounds and misaligned accesses, leaks), racecheck and synccheck (shared
# memory and barriers: the tiled copy kernels), initcheck (reads of device memory nothing wrote).
# Each tool's full log goes to $out/sanitize.log; the summary lines are printed.
#   usage: scripts/gpu-sanitize.sh <build dir> <out dir>
set -uo pipefail
build=$1
out=$2
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[[ -n $sanitizer ]] || { echo "gpu-sanitize: compute-sanitizer not found"; exit 1; }
log=$out/sanitize.log
: > "$log"
status=0
samples=$build/samples
gpu_tests=$build/tests/gpu/coalesce_gpu_tests
cpu_tests=$build/tests/coalesce_tests
# neighbor_reorder in its --layouts mode: its default mode measures a ceiling by copying the raw
# bytes of a soa allocation, padding between columns included, which initcheck rightly reports.
small_samples=("$samples/particle_integrator/particle_integrator --n 100000 --runs 1"
               "$samples/neighbor_reorder/neighbor_reorder --layouts --n 100000 --runs 1"
               "$samples/convert_legacy/convert_legacy --side 12 --steps 2")
check() {  # tool, seconds, command...
  local tool=$1 seconds=$2
  shift 2
  local t0=$SECONDS
  echo "=== $tool: $*" >> "$log"
  timeout "$seconds" "$sanitizer" --tool "$tool" --error-exitcode 9 --print-limit 20 "$@" >> "$log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | tail -1)
  case $rc in
    0) echo "sanitize $tool ok ($((SECONDS - t0)) s): $(basename "$1") ${summary}" ;;
    124) echo "sanitize $tool TIMEOUT after ${seconds} s: $*"; status=1 ;;
    *) echo "sanitize $tool FAILED (rc $rc, $((SECONDS - t0)) s): $* ${summary}"; status=1 ;;
  esac
}
# memcheck sees every GPU test; the other tools skip the one case that sorts a million
# elements 42 times (same kernels as the smaller cases), so that all of it fits one device call.
heavy='GPU sort_by_key equals the host path*'
# --report-api-errors no: the tests provoke failing CUDA calls on purpose (an allocation larger
# than the GPU, a copy to an address that is not GPU memory) and check coalesce's error for them.
check memcheck 240 --leak-check full --report-api-errors no "$gpu_tests"
for tool in initcheck racecheck synccheck; do
  check "$tool" 150 "$gpu_tests" "--test-case-exclude=$heavy"
done
check memcheck 120 "$cpu_tests"
check initcheck 120 "$cpu_tests"
for s in "${small_samples[@]}"; do
  # shellcheck disable=SC2086  # the sample's arguments split on purpose
  check memcheck 60 $s
  # shellcheck disable=SC2086
  check initcheck 60 $s
done
exit $status
