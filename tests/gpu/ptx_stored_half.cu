// Compiled to PTX only (never run): a step through velocities stored as half (coalesce::stored_as)
// must load each stored velocity with one 16-bit load and one cvt.f32.f16, as a hand-written half
// kernel does: no byte-wise loads, no branch on the format (it is a constant once inlined), both
// through a structured binding and through member pointers. tests/gpu/check_ptx.cmake greps it.
#include <coalesce/coalesce.hpp>

namespace ptx_check_stored {
struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
};
using vel_half = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::half>>;

__global__ void step_by_binding(coalesce::view<Particle, vel_half> v, float dt) {
  std::size_t const i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= v.size()) return;
  auto [pos, vel] = v[i];
  vec3 const u = vel;
  vec3 p = pos;
  p.x += u.x * dt;
  p.y += u.y * dt;
  p.z += u.z * dt;
  pos = p;
}

__global__ void drift_by_member_pointer(coalesce::view<Particle, vel_half> v, float dt) {
  std::size_t const i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= v.size()) return;
  auto r = v[i];
  r[&Particle::pos][&vec3::x] += r[&Particle::vel][&vec3::x] * dt;
}
}  // namespace ptx_check_stored
