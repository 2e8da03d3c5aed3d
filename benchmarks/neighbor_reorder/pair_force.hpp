// The neighbour sample's particle and its pair-force body, shared by the sample's kernels (on
// every layout, on the GPU) and by the layout advisor, which counts the same body's accesses on
// the CPU (tests/advisor_test.cpp, coalesce-explore advise).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <coalesce/coalesce.hpp>

#include "common/particle.hpp"

namespace neighbor_reorder {

using bench::Particle;
using bench::vec3;

COALESCE_HOST_DEVICE inline float wrap(float d, float box) { return d - box * ::nearbyintf(d / box); }  // minimum image

// The Lennard-Jones-like pair term, shared by the library kernel and the hand-written float4 one
// so that both do the same arithmetic in the same order (bit-identical forces).
COALESCE_HOST_DEVICE inline float pair_scale(float dx, float dy, float dz, float mass_j) {
  float const r2 = std::max(dx * dx + dy * dy + dz * dz, 0.09f);
  float const inv_r2 = 1.0f / r2;                       // one division per pair: the kernel should be bound by memory
  float const s6 = 0.0156f * inv_r2 * inv_r2 * inv_r2;  // sigma = 0.5
  return 24.0f * s6 * (2.0f * s6 - 1.0f) * inv_r2 * mass_j;
}

// The force on particle i from its neighbours in a column-major list (entry k of particle i at
// k * n + i, count[i] of them), for particles in any layout (v: a view, or a counting view).
// Index: the list's and the counts' type: a raw pointer on the GPU, analysis::counted in the
// advisor's count (so the list's own loads are counted too).
template <class View, class Index = std::uint32_t const*>
COALESCE_HOST_DEVICE inline vec3 pair_force(View const& v, Index const& nbr, Index const& count, std::size_t n, float L,
                                            std::size_t i) {
  vec3 const p = v[i][&Particle::pos];
  float fx = 0, fy = 0, fz = 0;
  std::uint32_t const m = count[i];
  for (std::uint32_t k = 0; k < m; ++k) {
    std::uint32_t const j = nbr[k * n + i];
    vec3 const q = v[j][&Particle::pos];
    float const dx = wrap(p.x - q.x, L), dy = wrap(p.y - q.y, L), dz = wrap(p.z - q.z, L);
    float const scale = pair_scale(dx, dy, dz, v[j][&Particle::mass]);
    fx += scale * dx;
    fy += scale * dy;
    fz += scale * dz;
  }
  return vec3{fx, fy, fz};
}

}  // namespace neighbor_reorder
