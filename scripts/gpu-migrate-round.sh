#!/usr/bin/env bash
# One device call for coalesce::mpi on GPU memory (issue 51's GPU rows), from binaries built on
# the build machine and carried in build/mcarry: the MPI GPU tests at 1, 2 and 4 ranks, memcheck
# over the migration tests at 2 ranks, then migrate_gpu (2 ranks; one GPU is shared by both when
# only one is lent) for the library as carried and, when build/mcarry/migrate_gpu_base exists,
# the library before the change, interleaved (new, base, new, base), then the new one at 4 ranks.
#   usage: scripts/gpu-migrate-round.sh   (carry ["build/mcarry"]; logs under $OUT)
#   TEST_RANKS="" skips the tests and memcheck; MIGRATE_ARGS replaces migrate_gpu's arguments.
set -uo pipefail
out=${OUT:-$PWD/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/build/mcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
t0=$SECONDS
B=build/mcarry
for ranks in ${TEST_RANKS-1 2 4}; do
  timeout 150 mpirun -n $ranks $B/coalesce_mpi_gpu_tests > "$out/mpi_gpu_tests_$ranks.log" 2>&1
  echo "mpi gpu tests, $ranks rank(s): rc $? ($((SECONDS - t0)) s)"
  grep -E "test cases|ERROR|FAILED" "$out/mpi_gpu_tests_$ranks.log" | sort | uniq -c | head -6
done
[ -n "${TEST_RANKS-x}" ] && timeout 150 mpirun -n 2 compute-sanitizer --tool memcheck --error-exitcode 3 $B/coalesce_mpi_gpu_tests \
  --test-case="*migrat*" > "$out/memcheck_migrate.log" 2>&1
echo "memcheck, migration tests at 2 ranks: rc $? ($((SECONDS - t0)) s)"
grep -E "test cases|ERROR SUMMARY" "$out/memcheck_migrate.log" | sort | uniq -c
args=${MIGRATE_ARGS:---n-per-rank 1048576 --steps 21 --warmup 4}
for run in 1 2; do
  for which in migrate_gpu migrate_gpu_base; do
    [ -x $B/$which ] || continue
    timeout 120 mpirun -n 2 $B/$which $args > "$out/${which}_run$run.txt" 2>&1
    echo "$which run $run: rc $? ($((SECONDS - t0)) s)"
    grep -E "^\| migrate|SKIPPED|failed|lost" "$out/${which}_run$run.txt"
  done
done
timeout 120 mpirun -n 4 $B/migrate_gpu $args > "$out/migrate_gpu_4ranks.txt" 2>&1
echo "migrate_gpu at 4 ranks: rc $? ($((SECONDS - t0)) s)"
grep -E "^\| migrate|SKIPPED|failed|lost" "$out/migrate_gpu_4ranks.txt"
echo "done ($((SECONDS - t0)) s)"
