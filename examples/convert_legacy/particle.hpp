// The legacy program's particle type and its input: a jittered lattice of particles stored in
// random order, each with a neighbour list of the 26 surrounding lattice sites (row-major,
// 26 entries per particle). Shared by every step of the migration, unchanged.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace legacy {

struct vec3 {
  float x, y, z;
};

// 48 bytes, as the legacy code declared it.
struct Particle {
  vec3 pos;
  vec3 vel;
  vec3 force;
  float mass;
  float charge;
  std::int32_t id;
};

struct world {
  std::vector<Particle> particles;       // in storage order (random)
  std::vector<std::uint32_t> neighbors;  // neighbors[i * per_particle + k]: storage indices
  std::size_t per_particle = 26;
  float box = 0;
};

inline world make_world(std::size_t side, std::uint32_t seed = 7) {
  std::size_t const n = side * side * side;
  world w;
  w.box = static_cast<float>(side);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> jitter(-0.2f, 0.2f), speed(-1.0f, 1.0f), mass(0.5f, 2.0f);
  // site s lives at storage index slot[s]: a random storage order, as after many steps
  std::vector<std::uint32_t> slot(n);
  std::iota(slot.begin(), slot.end(), 0u);
  std::shuffle(slot.begin(), slot.end(), rng);
  w.particles.resize(n);
  for (std::size_t s = 0; s < n; ++s) {
    std::size_t const a = s % side, b = (s / side) % side, c = s / (side * side);
    Particle& p = w.particles[slot[s]];
    p.pos = {a + 0.5f + jitter(rng), b + 0.5f + jitter(rng), c + 0.5f + jitter(rng)};
    p.vel = {speed(rng), speed(rng), speed(rng)};
    p.force = {0, 0, 0};
    p.mass = mass(rng);
    p.charge = (s % 2) ? 1.0f : -1.0f;
    p.id = static_cast<std::int32_t>(s);
  }
  w.neighbors.resize(n * w.per_particle);
  auto wrap = [&](std::size_t v, int d) {
    return (v + side + static_cast<std::size_t>(d + static_cast<int>(side))) % side;
  };
  for (std::size_t s = 0; s < n; ++s) {
    std::size_t const a = s % side, b = (s / side) % side, c = s / (side * side);
    std::size_t k = 0;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (dx == 0 && dy == 0 && dz == 0) continue;
          std::size_t const t = wrap(a, dx) + side * (wrap(b, dy) + side * wrap(c, dz));
          w.neighbors[slot[s] * w.per_particle + k++] = slot[t];
        }
  }
  return w;
}

}  // namespace legacy
