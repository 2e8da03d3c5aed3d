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
benchmarks=$build/benchmarks examples=$build/examples
gpu_tests=$build/tests/gpu/coalesce_gpu_tests
cpu_tests=$build/tests/coalesce_tests
# neighbor_reorder in its --layouts mode: its default mode measures a ceiling by copying the raw
# bytes of a soa allocation, padding between columns included, which initcheck rightly reports.
small_samples=("$benchmarks/particle_integrator/particle_integrator --n 100000 --runs 1"
               "$benchmarks/neighbor_reorder/neighbor_reorder --layouts --n 100000 --runs 1"
               "$examples/convert_legacy/convert_legacy --side 12 --steps 2"
               "$benchmarks/neighbor_build/neighbor_build --n 30000 --runs 1")
check() {  # tool, seconds, command...
  local tool=$1 seconds=$2
  shift 2
  local t0=$SECONDS part
  part=$(mktemp)
  echo "=== $tool: $*" > "$part"
  timeout "$seconds" "$sanitizer" --tool "$tool" --error-exitcode 9 --print-limit 20 "$@" >> "$part" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$part" | tail -1)
  cat "$part" >> "$log"
  rm -f "$part"
  case $rc in
    0) echo "sanitize $tool ok ($((SECONDS - t0)) s): ${*: -3} ${summary}" ;;
    124) echo "sanitize $tool TIMEOUT after ${seconds} s: $*"; return 1 ;;
    *) echo "sanitize $tool FAILED (rc $rc, $((SECONDS - t0)) s): $* ${summary}"; return 1 ;;
  esac
}
# A doctest binary under one tool, its test cases cut into $shards ranges run side by side:
# the sanitizers' cost is mostly host-side, so shards make the whole suite fit one device call.
sharded() {  # tool, seconds, binary, tool options...
  local tool=$1 seconds=$2 binary=$3
  shift 3
  local cases
  cases=$("$binary" --count 2>/dev/null | grep -oE "passing the current filters: [0-9]+" | grep -oE "[0-9]+$")
  [[ -n $cases ]] || { echo "sanitize $tool: cannot count the test cases of $binary"; status=1; return; }
  local per=$(( (cases + shards - 1) / shards )) pids=() first
  for ((first = 1; first <= cases; first += per)); do
    check "$tool" "$seconds" "$@" "$binary" "--first=$first" "--last=$((first + per - 1))" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
}
shards=${SANITIZE_SHARDS:-6}
# SANITIZE_TOOLS picks tools for a quick re-check (default: all four).
tools=" ${SANITIZE_TOOLS:-memcheck initcheck racecheck synccheck} "
uses() { [[ $tools == *" $1 "* ]]; }
# --report-api-errors no: the tests provoke failing CUDA calls on purpose (an allocation larger
# than the GPU, a copy to an address that is not GPU memory) and check coalesce's error for them.
uses memcheck && sharded memcheck 300 "$gpu_tests" --leak-check full --report-api-errors no
for tool in initcheck racecheck synccheck; do
  uses "$tool" && sharded "$tool" 300 "$gpu_tests"
done
uses memcheck && sharded memcheck 300 "$cpu_tests"
uses initcheck && sharded initcheck 300 "$cpu_tests"
for s in "${small_samples[@]}"; do
  for tool in memcheck initcheck; do
    # shellcheck disable=SC2086  # the sample's arguments split on purpose
    if uses "$tool"; then check "$tool" 60 $s || status=1; fi
  done
done
exit $status
