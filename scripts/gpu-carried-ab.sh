#!/usr/bin/env bash
# Same-run comparison of carried neighbor_build binaries (build/carry/neighbor_build and every
# build/carry/neighbor_build_* beside it, e.g. the commit before a change: run one after the other,
# twice, in alternating order), then the GPU suite, compute-sanitizer memcheck over the list,
# cluster and pair cases, and lj_md's NVE run on cluster_pairs and padded_columns: each part when
# its binary is carried (the carry holds 64 MiB: three neighbor_builds, or the tests and lj_md).
#   usage: scripts/gpu-carried-ab.sh   (carry ["build/carry"]; logs under $OUT)
set -uo pipefail
source "$(dirname "$0")/carried-env.sh"
binaries=($(ls build/carry/neighbor_build build/carry/neighbor_build_* 2>/dev/null))
for pass in 1 2; do
  [ ${#binaries[@]} -gt 0 ] || break
  for b in "${binaries[@]}"; do
    name=$(basename "$b")
    timeout 150 "$b" ${NB_ARGS:-} > "$out/${name}_run$pass.txt" 2>&1
    echo "$name run $pass rc $? ($((SECONDS - t0)) s)"
    grep -E "^engine cluster_pairs \(half\) |^hand-written cluster-pair kernel|^naive force|FAILED" "$out/${name}_run$pass.txt"
  done
  binaries=($(printf '%s\n' "${binaries[@]}" | tac))
done
if [ -x build/carry/coalesce_gpu_tests ]; then
  timeout ${TEST_SECONDS:-200} build/carry/coalesce_gpu_tests > "$out/gpu_tests.log" 2>&1
  echo "gpu tests rc $? ($((SECONDS - t0)) s)"
  grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -8
  timeout 150 compute-sanitizer --tool memcheck build/carry/coalesce_gpu_tests --test-case='*pair*,*cluster*,*list*' \
    > "$out/memcheck.log" 2>&1
  echo "memcheck rc $? ($((SECONDS - t0)) s)"
  grep -E "test cases|ERROR SUMMARY" "$out/memcheck.log" | tail -3
fi
if [ -x build/carry/lj_md ]; then
  for format in cluster_pairs padded_columns; do
    timeout 60 build/carry/lj_md --cells 30 --steps ${MD_STEPS:-10000} --thermo 1000 --format $format > "$out/lj_md_$format.txt" 2>&1
    echo "lj_md $format rc $? ($((SECONDS - t0)) s)"
    grep -E "^time per step|^energy drift|FAILED" "$out/lj_md_$format.txt"
  done
fi
