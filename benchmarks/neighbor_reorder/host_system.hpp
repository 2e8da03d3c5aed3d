// A small neighbour system built on the host: a periodic box of n particles at density 5 (about
// 21 neighbours within the cutoff 1; other densities on request) in random storage order, and its
// column-major neighbour list (32 slots by default, per-particle counts). For the layout advisor, which counts pair_force over it
// (tests/advisor_test.cpp, coalesce-explore --advise); the sample builds its own on the device.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "pair_force.hpp"

namespace neighbor_reorder {

struct host_system {
  std::vector<Particle> particles;
  std::vector<std::uint32_t> list, counts;  // entry k of particle i at list[k * n + i]
  std::size_t n = 0;
  float box = 0;
  std::size_t slots = 32;
};

inline host_system make_host_system(std::size_t n, unsigned seed = 12, double density = 5.0, std::size_t slots = 32) {
  host_system s;
  s.n = n;
  s.slots = slots;
  s.box = static_cast<float>(std::cbrt(static_cast<double>(n) / density));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, s.box);
  for (std::size_t i = 0; i < n; ++i)
    s.particles.push_back({{u(rng), u(rng), u(rng)}, {0, 0, 0}, 1.0f, static_cast<std::uint32_t>(i)});
  int const g = std::max(1, static_cast<int>(s.box));  // cells at least 1 wide
  std::vector<std::vector<std::uint32_t>> cells(static_cast<std::size_t>(g) * g * g);
  auto cell_of = [&](float x) { return std::min(g - 1, static_cast<int>(x / s.box * static_cast<float>(g))); };
  for (std::size_t i = 0; i < n; ++i) {
    auto const& p = s.particles[i].pos;
    cells[static_cast<std::size_t>((cell_of(p.z) * g + cell_of(p.y)) * g + cell_of(p.x))].push_back(
        static_cast<std::uint32_t>(i));
  }
  s.list.assign(s.slots * n, 0);
  s.counts.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    auto const& p = s.particles[i].pos;
    int const cx = cell_of(p.x), cy = cell_of(p.y), cz = cell_of(p.z);
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int const c = (((cz + dz + g) % g) * g + (cy + dy + g) % g) * g + (cx + dx + g) % g;
          for (std::uint32_t j : cells[static_cast<std::size_t>(c)]) {
            if (j == i || s.counts[i] == s.slots) continue;
            auto const& q = s.particles[j].pos;
            float const ex = wrap(p.x - q.x, s.box), ey = wrap(p.y - q.y, s.box), ez = wrap(p.z - q.z, s.box);
            if (ex * ex + ey * ey + ez * ez < 1.0f) s.list[s.counts[i]++ * n + i] = j;
          }
        }
  }
  return s;
}

// The integrator's x += v * dt on this Particle, as a body over any view (the advisor counts it
// beside pair_force: tests/advisor_test.cpp, coalesce-explore --advise).
template <class View> void integrate_one(View const& v, std::size_t i, float dt) {
  auto [pos, vel, mass, id] = v[i];
  vec3 p = pos;
  vec3 const u = vel;
  p.x += u.x * dt;
  p.y += u.y * dt;
  p.z += u.z * dt;
  pos = p;
  (void)mass;
  (void)id;
}

// The same system after coalesce's Hilbert reorder (host memory): particles sorted, list remapped.
inline host_system hilbert_ordered(host_system s) {
  coalesce::host_vector<Particle> v(s.particles);
  coalesce::reorder_plan plan;
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {s.box, s.box, s.box}};
  coalesce::sort_by_key(v, coalesce::hilbert_keys(v, &Particle::pos, box, plan), plan);
  coalesce::remap(coalesce::host_neighbor_list<std::uint32_t>{.indices = s.list.data(),
                                                              .particles = s.n,
                                                              .max_neighbors = s.slots,
                                                              .order = coalesce::neighbor_order::column_major,
                                                              .counts = s.counts.data()},
                  plan);
  v.copy_to(s.particles);
  return s;
}

}  // namespace neighbor_reorder
