// The sample's kernels. The library versions are written once and run on every layout; the
// hand-written versions are what a careful programmer writes against raw pointers, and are
// the baseline the library is held against.
#pragma once
#include <cstddef>

#include <coalesce/coalesce.hpp>

#include "particles.hpp"

namespace sample {

// x += v * dt, written once for aos, soa and aosoa<W>: load position and velocity into
// registers, then store the position only (3 of 6 floats written).
// The body for element i: also what the layout advisor counts (a counting view as v).
template <class View> COALESCE_HOST_DEVICE inline void step_one(View const& v, std::size_t i, float dt) {
  auto [pos, vel] = v[i];
  vec3 const u = vel;
  vec3 p = pos;
  p.x += u.x * dt;
  p.y += u.y * dt;
  p.z += u.z * dt;
  pos = p;
}
template <class View> void step(View v, float dt) {
  coalesce::for_each_index(coalesce::device{}, v.size(),
                           [=] COALESCE_HOST_DEVICE(std::size_t i) { step_one(v, i, dt); });
}

// The same step through leaf references (x += vx * dt on bound references). Each store may
// alias the next load as far as the compiler knows, so loads wait for earlier stores.
template <class View> void step_bindings(View v, float dt) {
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    auto [pos, vel] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
    y += vy * dt;
    z += vz * dt;
  });
}

// Reads 2 of 16 fields of a 64-byte record and writes 1.
template <class View> COALESCE_HOST_DEVICE inline void drift_x_one(View const& v, std::size_t i, float dt) {
  auto r = v[i];
  r[&fat_particle::pos][&vec3::x] += r[&fat_particle::vel][&vec3::x] * dt;
}
template <class View> void drift_x(View v, float dt) {
  coalesce::for_each_index(coalesce::device{}, v.size(),
                           [=] COALESCE_HOST_DEVICE(std::size_t i) { drift_x_one(v, i, dt); });
}

// ------------------------------------------------------------------- hand-written baselines
struct soa_pointers {
  float *x, *y, *z, *vx, *vy, *vz;
};

void raw_soa_step(soa_pointers p, std::size_t n, float dt);
void raw_aos_step(particle* p, std::size_t n, float dt);
void raw_soa_drift_x(float* x, float const* vx, std::size_t n, float dt);
void raw_aos_drift_x(fat_particle* p, std::size_t n, float dt);
// AoS records to 6 columns, one record per thread (the naive conversion a user writes first).
void raw_aos_to_soa(particle const* in, soa_pointers out, std::size_t n);
// The ceiling: copy `bytes` bytes (read + write counted) the fastest plain way.
void copy_ceiling(void* dst, void const* src, std::size_t bytes);
// On the CPU, in-place updates pay no write-allocate; their ceiling is an in-place stream.
void in_place_ceiling(float* data, std::size_t count);

}  // namespace sample
