// One loop source for every layout and space (CPU build: device loops run through OpenMP).
#include <algorithm>
#include <string>
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

TEST_CASE_TEMPLATE("the same loop gives the same particles on every layout and space", Layout, COALESCE_ALL_LAYOUTS) {
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

TEST_CASE("an exception inside a device loop on the CPU reaches the caller as coalesce::error, after the loop") {
  // Without CUDA the device loop is an OpenMP region; an exception leaving it called std::terminate.
  std::vector<Particle> records(1000);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_particle(i);
  coalesce::device_vector<Particle> d{std::span<Particle const>(records)};
  auto v = d.view();
  std::vector<int> visited(1000, 0);
  int* seen = visited.data();
  auto const throwing = [&] {
    coalesce::for_each_index(coalesce::device{}, 1000, [=](std::size_t i) {
      seen[i] = 1;
      if (i == 500 || i == 700) coalesce::detail::throw_error("bad element " + std::to_string(i));
    });
  };
  CHECK_THROWS_WITH_AS(throwing(), "coalesce: bad element 500", coalesce::error);  // the lowest failing index
  CHECK(std::count(visited.begin(), visited.end(), 1) == 1000);         // every other iteration ran
#if COALESCE_CHECK_BOUNDS
  CHECK_THROWS_WITH_AS(coalesce::for_each_index(coalesce::device{}, 1001, [=](std::size_t i) { v[i][&Particle::mass] = 1.0f; }),
                       doctest::Contains("1000"), coalesce::error);
#else
  (void)v;
#endif
}
#endif
