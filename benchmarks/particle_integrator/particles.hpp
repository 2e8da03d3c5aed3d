// The particle types of the integrator sample: plain structs, untouched by the library.
#pragma once
#include <array>
#include <cstdint>

namespace sample {

struct vec3 {
  float x, y, z;
};

// 24 bytes: the step reads 6 floats and writes 3 (36 bytes of traffic per particle).
struct particle {
  vec3 pos;
  vec3 vel;
};

// 64 bytes, 16 floats: drift_x reads 2 of them and writes 1, where AoS wastes the most.
struct fat_particle {
  vec3 pos;
  vec3 vel;
  vec3 force;
  float mass;
  float charge;
  float radius;
  std::array<float, 4> scratch;
};
static_assert(sizeof(fat_particle) == 64);

// A particle with small integer fields and a flag: under stored_as with bits<N> they share one
// 32-bit word (16 bytes stored per particle instead of 22).
struct tagged_particle {
  vec3 pos;
  std::uint32_t type;   // 0 .. 7
  std::int32_t charge;  // -8 .. 7
  std::uint8_t flags;   // 0 .. 31
  bool ghost;
};

// 16 KiB + 4 bytes: a histogram per record, 4097 columns under soa (the record with a long
// std::array member that conversions must move at copy speed, not one small copy per column).
struct histogram_record {
  std::uint32_t id;
  std::array<int, 4096> counts;
};

}  // namespace sample
