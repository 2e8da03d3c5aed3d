#!/usr/bin/env bash
# The 2-GPU batch (device kind nvidia-h200-x2; also runs on one GPU, ranks sharing it): builds as
# scripts/gpu-check.sh does, then coalesce::mpi on GPU memory: the MPI tests and the distributed
# sample through ctest (staged transport), the GPU-memory MPI tests again with GPU pointers handed
# to MPI, and benchmarks/halo_exchange at 2 ranks with both transports. GPU pointers need UCX's CUDA
# transports: run ../shared/tools/stage-mpi here first and carry .mpi with .deps (without .mpi only
# the staged runs happen, and the log says so). Then weak scaling of examples/distributed_md over 1
# and 2 GPUs, both transports, overlapped and not. Logs under $OUT: mpi.txt (summary, with every
# sample run's own lines), mpi-ctest.log.
#   usage: scripts/gpu-mpi.sh
set -uo pipefail
out=${OUT:-$PWD/out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
summary=$out/mpi.txt
scripts/gpu-check.sh build > "$summary" 2>&1 || { cat "$summary"; exit 1; }
b=build-gpu
status=0
(cd $b && ctest -R "mpi_|distributed|consumer.mpi" --output-on-failure --timeout 300) > "$out/mpi-ctest.log" 2>&1 || status=1
tail -15 "$out/mpi-ctest.log" >> "$summary"
run() { echo "=== $*" >> "$summary"; "$@" >> "$summary" 2>&1 || { echo "FAILED: $*" >> "$summary"; status=1; }; }
run mpirun -np 2 $b/benchmarks/halo_exchange/halo_exchange --transport staged
# Weak scaling of the distributed sample, one GPU per rank, the forward overlapped with the
# interior forces and not (the scaling tables go to the summary, each run's own lines to the log).
weak() {
  [[ ${SCALING:-1} == 0 ]] && { echo "NOT RUN: weak scaling (SCALING=0)" >> "$summary"; return; }
  run env WEAK_PER_RANK="${WEAK_PER_RANK:-1000000}" STRONG_TOTAL=0 STEPS=40 REBUILD_EVERY=20 SAMPLE_ARGS="$*" scripts/scaling.sh $b 1 2
}
weak
weak --no-overlap
# compute-sanitizer over the GPU-memory MPI tests, one rank (a singleton MPI process).
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in memcheck initcheck; do
  run "$sanitizer" --tool $tool --error-exitcode 9 $b/tests/mpi/coalesce_mpi_gpu_tests
done
if [[ -f .mpi/ucx-cu13/lib/libucp.so.0 ]]; then
  # As ../shared/tools/stage-mpi documents: UCX with CUDA transports, point-to-point on GPU pointers.
  export LD_LIBRARY_PATH=$PWD/.mpi/ucx-cu13/lib:${LD_LIBRARY_PATH:-} OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any
  for ranks in 1 2; do
    run env COALESCE_MPI_DEVICE_POINTERS=1 mpirun -np $ranks $b/tests/mpi/coalesce_mpi_gpu_tests
  done
  run mpirun -np 2 $b/benchmarks/halo_exchange/halo_exchange --transport both
  run env COALESCE_MPI_DEVICE_POINTERS=1 mpirun -np 2 $b/examples/distributed_md/distributed_md --n-per-rank 20000 --steps 6 --rebuild-every 3 --check
  export COALESCE_MPI_DEVICE_POINTERS=1
  weak
  weak --no-overlap
else
  echo "NOT RUN: GPU pointers to MPI (.mpi/ not carried; run ../shared/tools/stage-mpi)" >> "$summary"
fi
grep -E "tests passed|tests failed|test cases|FAILED|NOT RUN|x copy|GB/s|halo_exchange:|overlap|ERROR SUMMARY|scaling|^ +[12] |bit-identical" "$summary"
exit $status
