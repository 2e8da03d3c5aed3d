#!/usr/bin/env bash
# Weak and strong scaling of examples/distributed_md over MPI ranks (docs/distributed.md).
#   usage: scripts/scaling.sh <build dir> [ranks...]      (default ranks: 1 2 4 8)
#   env: WEAK_PER_RANK (default 50000), STRONG_TOTAL (default 200000; 0: no strong scaling), STEPS
#   (20), REBUILD_EVERY (5), SAMPLE_ARGS (more options for the sample, e.g. --no-overlap)
# Prints per-step times (the slowest rank's; all steps, and the steady steps without a rebuild)
# and the efficiency against one rank: weak = t1 / tN, strong = t1 / (N tN). Every run also
# checks that particles are conserved. In CUDA builds each rank takes one GPU of its node.
set -euo pipefail
build=$1
shift
ranks=("${@:-1 2 4 8}")
read -r -a ranks <<< "${ranks[*]}"
sample=$build/examples/distributed_md/distributed_md
[[ -x $sample ]] || { echo "scaling: $sample not found (configure with MPI: COALESCE_ENABLE_MPI=ON)"; exit 1; }
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
weak=${WEAK_PER_RANK:-50000}
strong=${STRONG_TOTAL:-200000}
steps=${STEPS:-20}
every=${REBUILD_EVERY:-5}
read -r -a extra <<< "${SAMPLE_ARGS:-}"
# One run: prints "<ms per step> <ms per steady step>" (the sample's own lines stay in the log).
measure() {
  local log
  log=$(mpiexec -n "$1" "$sample" --n-per-rank "$2" --steps "$steps" --rebuild-every "$every" "${extra[@]}")
  echo "$log" >&2
  echo "$(sed -n 's/.*total \([0-9.]*\) |.*/\1/p' <<< "$log") $(sed -n 's/.*steady step.*: \([0-9.]*\) ms/\1/p' <<< "$log")"
}
# table <name> <per-rank count for n ranks as an awk expression of n> <efficiency expression>
table() {
  echo "$1"
  printf '%6s %12s %10s %14s %10s\n' ranks "ms/step" efficiency "steady ms" efficiency
  local t1="" s1="" n t s
  for n in "${ranks[@]}"; do
    read -r t s < <(measure "$n" "$(awk -v n="$n" "BEGIN { printf \"%d\", $2 }")")
    t1=${t1:-$t}
    s1=${s1:-$s}
    printf '%6s %12s %10s %14s %10s\n' "$n" "$t" "$(awk -v a="$t1" -v b="$t" -v n="$n" "BEGIN { printf \"%.2f\", $3 }")" \
      "$s" "$(awk -v a="$s1" -v b="$s" -v n="$n" "BEGIN { printf \"%.2f\", $3 }")"
  done
}
table "weak scaling: $weak particles per rank, $steps steps, rebuild every $every ${SAMPLE_ARGS:-}" "$weak" "a / b"
if [[ $strong -gt 0 ]]; then
  table "strong scaling: $strong particles in all ${SAMPLE_ARGS:-}" "$strong / n" "a / (n * b)"
fi
