// The records of the cpu_kernels benchmark: plain structs, untouched by the library.
#pragma once

namespace cpu_kernels {

struct vec3 {
  float x, y, z;
};

// 6 fields, 24 bytes: the integrator step reads all 6 and writes 3.
struct particle6 {
  vec3 pos;
  vec3 vel;
};

// 16 fields, 64 bytes (one cache line): drift_x reads 2 of them and writes 1.
struct particle16 {
  vec3 pos;
  vec3 vel;
  vec3 force;
  float mass, charge, radius, potential, density, pressure, energy;
};
static_assert(sizeof(particle6) == 24 && sizeof(particle16) == 64);

// Fields in member order, as the raw baselines index them: pos.x = 0 ... vel.x = 3 ...
template <class T> inline constexpr int fields_of = sizeof(T) / sizeof(float);

}  // namespace cpu_kernels
