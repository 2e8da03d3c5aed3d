// The Lennard-Jones liquid of the neighbour-list benchmarks (neighbor_build on the GPU,
// neighbor_build_cpu on the CPU): a jittered simple cubic lattice at reduced density 0.8442 (no
// overlaps: finite forces), shuffled into a random order as a code that never sorted has it; other
// densities for the benchmarks' other states.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace bench {

struct lj_lattice {
  std::vector<std::array<float, 3>> positions;
  float length = 0;  // the periodic box's edge
};

inline lj_lattice make_lj_lattice(std::size_t n, double density = 0.8442) {
  lj_lattice out;
  int const side = static_cast<int>(std::ceil(std::cbrt(static_cast<double>(n))));
  float const spacing = static_cast<float>(std::cbrt(1.0 / density));
  out.length = side * spacing;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> jitter(-0.1f * spacing, 0.1f * spacing);
  out.positions.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    int const x = static_cast<int>(i % side), y = static_cast<int>((i / side) % side),
              z = static_cast<int>(i / (std::size_t(side) * side));
    out.positions[i] = {(x + 0.5f) * spacing + jitter(rng), (y + 0.5f) * spacing + jitter(rng),
                        (z + 0.5f) * spacing + jitter(rng)};
  }
  std::shuffle(out.positions.begin(), out.positions.end(), rng);
  return out;
}

}  // namespace bench
