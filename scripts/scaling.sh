#!/usr/bin/env bash
# Weak and strong scaling of samples/distributed_md over MPI ranks (docs/distributed.md).
#   usage: scripts/scaling.sh <build dir> [ranks...]      (default ranks: 1 2 4 8)
#   env: WEAK_PER_RANK (default 50000), STRONG_TOTAL (default 200000), STEPS (20), REBUILD_EVERY (5)
# Prints per-step times (the slowest rank's) and the efficiency against one rank: weak = t1 / tN,
# strong = t1 / (N tN). Every run also checks that particles are conserved.
set -euo pipefail
build=$1
shift
ranks=("${@:-1 2 4 8}")
read -r -a ranks <<< "${ranks[*]}"
sample=$build/samples/distributed_md/distributed_md
[[ -x $sample ]] || { echo "scaling: $sample not found (configure with MPI: COALESCE_ENABLE_MPI=ON)"; exit 1; }
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
weak=${WEAK_PER_RANK:-50000}
strong=${STRONG_TOTAL:-200000}
steps=${STEPS:-20}
every=${REBUILD_EVERY:-5}
step_ms() { sed -n 's/.*total \([0-9.]*\) |.*/\1/p'; }
echo "weak scaling: $weak particles per rank, $steps steps, rebuild every $every"
printf '%6s %12s %10s\n' ranks "ms/step" efficiency
t1=""
for n in "${ranks[@]}"; do
  t=$(mpiexec -n "$n" "$sample" --n-per-rank "$weak" --steps "$steps" --rebuild-every "$every" | step_ms)
  t1=${t1:-$t}
  printf '%6s %12s %10s\n' "$n" "$t" "$(awk -v a="$t1" -v b="$t" 'BEGIN { printf "%.2f", a / b }')"
done
echo "strong scaling: $strong particles in all"
printf '%6s %12s %10s\n' ranks "ms/step" efficiency
t1=""
for n in "${ranks[@]}"; do
  t=$(mpiexec -n "$n" "$sample" --n-per-rank $((strong / n)) --steps "$steps" --rebuild-every "$every" | step_ms)
  t1=${t1:-$t}
  printf '%6s %12s %10s\n' "$n" "$t" "$(awk -v a="$t1" -v b="$t" -v n="$n" 'BEGIN { printf "%.2f", a / (n * b) }')"
done
