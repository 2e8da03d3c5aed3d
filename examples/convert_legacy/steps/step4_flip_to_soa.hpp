// Step 4: the storage flipped to structure-of-arrays: one type changed.
#pragma once
#include "../legacy_runtime.hpp"

namespace step4 {
using namespace legacy;

inline result run(world const& w, int steps, float dt, bench::kernel_timer& timer) {
  std::size_t const n = w.particles.size(), k = w.per_particle;
  float const box = w.box;
  coalesce::device_vector<Particle, coalesce::soa> particles(w.particles);  // AoS records in
  device_array<std::uint32_t> neighbors(w.neighbors);
  device_array<float> energy(n);
  auto v = particles.view();
  std::uint32_t const* nbr = neighbors.data();
  float* e = energy.data();

  for (int s = 0; s < steps; ++s) {
    timer.time("forces (gather)", [&] {
      launch(n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
        vec3 const xi = v[i][&Particle::pos];
        vec3 f{0.0f, 0.0f, 0.0f};
        for (std::size_t m = 0; m < k; ++m) {
          vec3 const xj = v[nbr[i * k + m]][&Particle::pos];
          float const dx = min_image(xj.x - xi.x, box), dy = min_image(xj.y - xi.y, box),
                      dz = min_image(xj.z - xi.z, box);
          float const weight = 1.0f / (dx * dx + dy * dy + dz * dz + 0.01f);
          f.x += dx * weight;
          f.y += dy * weight;
          f.z += dz * weight;
        }
        v[i][&Particle::force] = f;
      });
    });
    timer.time("integrate", [&] {
      launch(n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
        auto r = v[i];
        vec3 const f = r[&Particle::force];
        float const mass = r[&Particle::mass];
        vec3 u = r[&Particle::vel];
        u.x += f.x * dt / mass;
        u.y += f.y * dt / mass;
        u.z += f.z * dt / mass;
        r[&Particle::vel] = u;
        vec3 x = r[&Particle::pos];
        x.x += u.x * dt;
        x.y += u.y * dt;
        x.z += u.z * dt;
        r[&Particle::pos] = x;
      });
    });
    timer.time("boundary", [&] {
      launch(n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
        auto [x, y, z] = v[i][&Particle::pos];
        x = wrap(x, box);
        y = wrap(y, box);
        z = wrap(z, box);
      });
    });
    timer.time("kinetic energy", [&] {
      launch(n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
        vec3 const u = v[i][&Particle::vel];
        e[i] = 0.5f * v[i][&Particle::mass] * (u.x * u.x + u.y * u.y + u.z * u.z);
      });
    });
  }
  std::vector<Particle> out(n);
  particles.copy_to(out);  // AoS records out, for the legacy output code
  return {out, sum(energy.download())};
}

}  // namespace step4
