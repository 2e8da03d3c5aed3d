#!/usr/bin/env bash
# Runs binaries built on the development machine (no build on the device: a call's device time goes
# to running). build/carry holds neighbor_build, coalesce_gpu_tests and the libraries they load
# (libcudart, libstdc++ and libgcc_s of the build machine): pass carry ["build/carry"].
#   usage: scripts/gpu-carried.sh   (logs under $OUT; a short table last)
# The sanitizer over the carried GPU tests (no CPU tests, no samples):
#   LD_LIBRARY_PATH=$PWD/build/carry/lib SANITIZE_GPU_TESTS=build/carry/coalesce_gpu_tests SANITIZE_CPU_TESTS= \
#     SANITIZE_SAMPLES=0 SANITIZE_TOOLS="memcheck initcheck" scripts/gpu-sanitize.sh build/carry $OUT
set -uo pipefail
source "$(dirname "$0")/carried-env.sh"
build/carry/neighbor_build ${NB_ARGS:-} > "$out/neighbor_build.txt" 2>&1  # NB_ARGS: e.g. --n 1048576 --runs 3
echo "neighbor_build rc $? ($((SECONDS - t0)) s)"
grep -E "^hand-written|FAILED|lists identical|error while loading" "$out/neighbor_build.txt" | head -6
grep -E -A18 "^pair engine" "$out/neighbor_build.txt"
timeout ${TEST_SECONDS:-240} build/carry/coalesce_gpu_tests > "$out/gpu_tests.log" 2>&1
echo "gpu tests rc $? ($((SECONDS - t0)) s)"
grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -12
cuobjdump -sass build/carry/neighbor_build |
  awk '/Function :/ { keep = ($0 ~ /staged_warps|hand_cluster_pair_force|hand_stack_force/) } keep' \
    > "$out/cluster_loops.sass" 2>/dev/null
echo "sass $(grep -c 'Function :' "$out/cluster_loops.sass") functions ($((SECONDS - t0)) s)"
