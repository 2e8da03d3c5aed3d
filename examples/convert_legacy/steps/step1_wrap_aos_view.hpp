// Step 1: the same memory wrapped as a coalesce aos view (no copy); one kernel ported to it.
#pragma once
#include "../legacy_runtime.hpp"

namespace step1 {
using namespace legacy;

inline result run(world const& w, int steps, float dt, bench::kernel_timer& timer) {
  std::size_t const n = w.particles.size(), k = w.per_particle;
  float const box = w.box;
  device_array<Particle> particles(w.particles);
  device_array<std::uint32_t> neighbors(w.neighbors);
  device_array<float> energy(n);
  Particle* p = particles.data();
  coalesce::view<Particle, coalesce::aos> v(p, n);
  std::uint32_t const* nbr = neighbors.data();
  float* e = energy.data();

  for (int s = 0; s < steps; ++s) {
    timer.time("forces (gather)", [&] {
      launch(n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
        vec3 const xi = p[i].pos;
        vec3 f{0.0f, 0.0f, 0.0f};
        for (std::size_t m = 0; m < k; ++m) {
          vec3 const xj = p[nbr[i * k + m]].pos;
          float const dx = min_image(xj.x - xi.x, box), dy = min_image(xj.y - xi.y, box),
                      dz = min_image(xj.z - xi.z, box);
          float const weight = 1.0f / (dx * dx + dy * dy + dz * dz + 0.01f);
          f.x += dx * weight;
          f.y += dy * weight;
          f.z += dz * weight;
        }
        p[i].force = f;
      });
    });
    timer.time("integrate", [&] {
      launch(n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
        p[i].vel.x += p[i].force.x * dt / p[i].mass;
        p[i].vel.y += p[i].force.y * dt / p[i].mass;
        p[i].vel.z += p[i].force.z * dt / p[i].mass;
        p[i].pos.x += p[i].vel.x * dt;
        p[i].pos.y += p[i].vel.y * dt;
        p[i].pos.z += p[i].vel.z * dt;
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
        e[i] = 0.5f * p[i].mass * (p[i].vel.x * p[i].vel.x + p[i].vel.y * p[i].vel.y + p[i].vel.z * p[i].vel.z);
      });
    });
  }
  return {particles.download(), sum(energy.download())};
}

}  // namespace step1
