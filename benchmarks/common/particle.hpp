// The particle of the benchmarks (and of the examples that reuse their kernels): 32 bytes, a
// position and a velocity as vec3, a mass and an id. One definition, so that every benchmark's
// layouts, byte counts and baselines speak about the same record.
#pragma once
#include <cstdint>

namespace bench {  // named: reflection needs types with linkage

struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};
static_assert(sizeof(Particle) == 32);

}  // namespace bench
