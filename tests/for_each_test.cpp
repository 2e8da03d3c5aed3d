// One loop source for every layout and space (CPU build: device loops run through OpenMP).
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

#if !COALESCE_WITH_CUDA  // with CUDA, device loops are GPU kernels: tests/gpu covers them
template <class Space, class V> void drift(V v, float dt) {
  coalesce::for_each_index(Space{}, v.size(), [=](std::size_t i) {
    auto [pos, vel, mass, id] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
    y += vy * dt;
    z += vz * dt;
  });
  coalesce::synchronize(Space{});
}

TEST_CASE_TEMPLATE("the same loop gives the same particles on every layout and space", Layout, coalesce::aos,
                   coalesce::soa, coalesce::aosoa<8>) {
  std::size_t const n = 10001;
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
  std::vector<Particle> expected = records;
  for (auto& p : expected) {
    p.pos.x += p.vel.x * 0.5f;
    p.pos.y += p.vel.y * 0.5f;
    p.pos.z += p.vel.z * 0.5f;
  }
  coalesce::host_vector<Particle, Layout> h{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, Layout> d{std::span<Particle const>(records)};
  drift<coalesce::host>(h.view(), 0.5f);
  drift<coalesce::device>(d.view(), 0.5f);
  std::vector<Particle> got_h(n), got_d(n);
  h.copy_to(got_h);
  d.copy_to(got_d);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(same_bytes(got_h[i], expected[i]));
    CHECK(same_bytes(got_d[i], expected[i]));
  }
}
#endif
