// Compiled to PTX only (never run): a neighbour gather of whole positions. With positions packed
// by a split layout (a vec3 padded to 16 bytes) each gathered position must be ONE 16-byte
// vector load (ld.global.v4), both through a structured binding and through a member pointer;
// tests/gpu/check_ptx.cmake greps this file's PTX for it.
#include <cstdint>

#include <coalesce/coalesce.hpp>

namespace ptx_check {
struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};
using packed = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;

__global__ void gather_by_member_pointer(coalesce::view<Particle const, packed> v, std::uint32_t const* nbr, float* out,
                                         std::size_t n) {
  std::size_t const i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  vec3 const p = v[nbr[i]][&Particle::pos];
  out[i] = p.x + p.y + p.z;
}

__global__ void gather_by_binding(coalesce::view<Particle const, packed> v, std::uint32_t const* nbr, float* out,
                                  std::size_t n) {
  std::size_t const i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  auto [pos, vel, mass, id] = v[nbr[i]];
  vec3 const p = pos;
  out[i] = p.x + p.y + p.z;
}
}  // namespace ptx_check
