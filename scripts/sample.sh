#!/usr/bin/env bash
# Builds and runs the particle-integrator sample: on the GPU when one is visible (CUDA build),
# on all CPU cores otherwise. Writes build/sample/integrator.json and, where matplotlib can be
# had, build/sample/integrator.png.   usage: scripts/sample.sh [sample options, e.g. --n 1000000]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cuda=OFF
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then cuda=ON; fi
mkdir -p build  # a fresh clone has none yet; the configure log goes there
cmake -S . -B build/sample -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOALESCE_ENABLE_CUDA=$cuda \
  -DCOALESCE_BUILD_TESTS=OFF >build/sample.configure.log 2>&1 || { cat build/sample.configure.log; exit 1; }
cmake --build build/sample --target particle_integrator -j "$(nproc)"
build/sample/benchmarks/particle_integrator/particle_integrator --json build/sample/integrator.json "$@"
python=python3
if ! $python -c 'import matplotlib' 2>/dev/null; then
  if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    python=/usr/bin/python3
  elif scripts/install-deps.sh python3-matplotlib >/dev/null 2>&1 && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    python=/usr/bin/python3
  else
    echo "no matplotlib: skipping the plot (the table above and the JSON have the figures)"
    exit 0
  fi
fi
$python benchmarks/particle_integrator/plot.py build/sample/integrator.json build/sample/integrator.png
