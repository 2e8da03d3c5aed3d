#include "step.hpp"

void step(coalesce::device_vector<particle>& d, float dt) {
  auto v = d.view();
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    auto [pos, vel, mass] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
    y += vy * dt;
    z += vz * dt;
    mass *= 0.5f;
  });
  coalesce::synchronize(coalesce::device{});
}
