// One loop source for every layout and space (CPU build: device loops run through OpenMP).
#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

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
  CHECK(std::count(visited.begin(), visited.end(), 1) == 1000);                    // every other iteration ran
#if COALESCE_CHECK_BOUNDS
  CHECK_THROWS_WITH_AS(
      coalesce::for_each_index(coalesce::device{}, 1001, [=](std::size_t i) { v[i][&Particle::mass] = 1.0f; }),
      doctest::Contains("1000"), coalesce::error);
#else
  (void)v;
#endif
}

TEST_CASE("for_each_index inside an existing OpenMP parallel region shares the indices among its threads") {
  // The shape of an OpenMP code whose time loop lives in one parallel region: every thread calls
  // the loop. Each index must run exactly once (a nested region would run it once per thread).
  std::vector<int> runs(100003, 0);
  int* counter = runs.data();
  int threads = 0;
#pragma omp parallel num_threads(4)
  {
#pragma omp single
    threads = omp_get_num_threads();
    for (int step = 0; step < 3; ++step) {
      coalesce::for_each_index(coalesce::device{}, runs.size(), [=](std::size_t i) { counter[i] += 1; });
      // The barrier at the loop's end: every index of this step is done before any thread goes on.
#pragma omp single
      {
        bool all = true;
        for (int r : runs) all = all && r == step + 1;
        CHECK(all);
      }
    }
  }
  CHECK(threads >= 1);
  CHECK(std::all_of(runs.begin(), runs.end(), [](int r) { return r == 3; }));
  // An exception is rethrown by the thread whose indices threw it, after the barrier.
  int caught = 0;
#pragma omp parallel num_threads(2) reduction(+ : caught)
  {
    try {
      coalesce::for_each_index(coalesce::device{}, 1000, [](std::size_t i) {
        if (i == 10) coalesce::detail::throw_error("bad element 10");
      });
    } catch (coalesce::error const&) {
      caught += 1;
    }
  }
  CHECK(caught == 1);
}
#endif
