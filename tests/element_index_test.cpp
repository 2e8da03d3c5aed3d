// for_each_index over a view: kernels given a coalesce::element_index (block and lane), on every
// layout, odd sizes, host and device loops, exceptions, an enclosing OpenMP region.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

namespace {
using aosoa_stored = coalesce::stored_as<coalesce::aosoa<8>, coalesce::store<&Particle::mass, double>>;
using split_of_blocks = coalesce::split<coalesce::member_indices<0>, coalesce::aosoa<16>, coalesce::aosoa<16>>;
using split_mixed_blocks = coalesce::split<coalesce::member_indices<0>, coalesce::aosoa<8>, coalesce::aosoa<16>>;
}  // namespace

TEST_CASE("blocked_width: the common block of a mapping's columns, or 0") {
  static_assert(coalesce::layout_storage<Particle, coalesce::aosoa<8>>::blocked_width == 8);
  static_assert(coalesce::layout_storage<Particle, coalesce::aosoa<6>>::blocked_width == 6);
  static_assert(coalesce::layout_storage<Big, coalesce::aosoa<32>>::blocked_width == 32);  // std::array leaves
  static_assert(coalesce::layout_storage<Particle, aosoa_stored>::blocked_width == 8);
  static_assert(coalesce::layout_storage<Particle, split_of_blocks>::blocked_width == 16);
  static_assert(coalesce::layout_storage<Particle, split_mixed_blocks>::blocked_width == 0);
  static_assert(coalesce::layout_storage<Particle, coalesce::aosoa<1>>::blocked_width == 0);  // blocks of one
  static_assert(coalesce::layout_storage<Particle, coalesce::soa>::blocked_width == 0);
  static_assert(coalesce::layout_storage<Particle, coalesce::aos>::blocked_width == 0);
  static_assert(coalesce::layout_storage<Particle, split_first>::blocked_width == 0);
  CHECK(coalesce::element_index(41) == 41u);
  CHECK(coalesce::element_index(40, 3, 8) == 43u);
}

TEST_CASE_TEMPLATE("v[element_index] is v[first + lane], whatever the loop's width", Layout, COALESCE_ALL_LAYOUTS,
                   coalesce::aosoa<32>, aosoa_stored, split_of_blocks, split_mixed_blocks) {
  std::size_t const n = 203;
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
  coalesce::host_vector<Particle, Layout> h{std::span<Particle const>(records)};
  auto v = h.view();
  for (std::size_t width :
       {std::size_t{0}, std::size_t{1}, std::size_t{6}, std::size_t{8}, std::size_t{16}, std::size_t{32}}) {
    for (std::size_t i = 0; i < n; ++i) {
      coalesce::element_index const at =
          width == 0 ? coalesce::element_index(i) : coalesce::element_index(i / width * width, i % width, width);
      Particle const got = v[at];
      Particle const want = v[i];
      CHECK(same_bytes(got, want));
    }
  }
#if COALESCE_CHECK_BOUNDS
  CHECK_THROWS_WITH_AS((void)v[coalesce::element_index(200, 3, 8)], doctest::Contains("203"), coalesce::error);
#endif
}

#if !COALESCE_WITH_CUDA  // with CUDA, device loops are GPU kernels: tests/gpu covers them
template <class Space, class Layout> void check_loop_over_view(std::size_t n) {
  CAPTURE(n);
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
  coalesce::vector<Particle, Layout, Space> d{std::span<Particle const>(records)};
  // A second view of another width inside the same kernel: indexed by an element_index of the
  // loop's width, it must fall back to the plain index.
  coalesce::vector<Particle, coalesce::aosoa<6>, Space> other{std::span<Particle const>(records)};
  std::vector<int> visits(n, 0);
  int* seen = visits.data();
  auto v = d.view();
  auto w = other.view();
  coalesce::for_each_index(Space{}, v, [=](coalesce::element_index i) {
    auto [pos, vel, mass, id] = v[i];
    pos[&vec3::x] += vel[&vec3::x] * 0.5f;
    mass = static_cast<float>(w[i][&Particle::id]);  // == id when the index is right
    seen[i] += 1;
  });
  coalesce::synchronize(Space{});
  std::vector<Particle> got(n);
  d.copy_to(got);
  for (std::size_t i = 0; i < n; ++i) {
    Particle want = records[i];
    want.pos.x += want.vel.x * 0.5f;
    want.mass = static_cast<float>(want.id);
    CHECK(same_bytes(got[i], want));
    CHECK(visits[i] == 1);
  }
}

TEST_CASE_TEMPLATE("for_each_index over a view runs every element once, every layout, odd sizes", Layout,
                   COALESCE_ALL_LAYOUTS, coalesce::aosoa<32>, aosoa_stored, split_of_blocks) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{8}, std::size_t{9}, std::size_t{63},
                        std::size_t{64}, std::size_t{65}, std::size_t{1003}, std::size_t{10001}}) {
    check_loop_over_view<coalesce::host, Layout>(n);
    check_loop_over_view<coalesce::device, Layout>(n);
  }
}

TEST_CASE("for_each_index over a view: kernels taking std::size_t, a stream, element_index over a count") {
  std::vector<Particle> records(1001);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_particle(i);
  coalesce::device_vector<Particle, coalesce::aosoa<8>> d{std::span<Particle const>(records)};
  auto v = d.view();
  coalesce::for_each_index(coalesce::device{}, v, [=](std::size_t i) { v[i][&Particle::mass] = 1.0f; });
  coalesce::stream const s{};  // without CUDA an empty value: the overload must still take it
  coalesce::for_each_index(
      coalesce::device{}, v, [=](coalesce::element_index i) { v[i][&Particle::mass] += 1.0f; }, s);
  coalesce::for_each_index(coalesce::device{}, v.size(), [=](coalesce::element_index i) {
    v[i][&Particle::mass] += static_cast<float>(i.first + i.lane);  // width 0: first is the index
  });
  coalesce::synchronize(coalesce::device{});
  std::vector<Particle> got(records.size());
  d.copy_to(got);
  bool all = true;
  for (std::size_t i = 0; i < got.size(); ++i) all = all && got[i].mass == 2.0f + static_cast<float>(i);
  CHECK(all);
}

TEST_CASE("an exception in a loop over an aosoa view: the lowest failing element, after every other ran") {
  std::vector<Particle> records(1000);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_particle(i);
  coalesce::device_vector<Particle, coalesce::aosoa<8>> d{std::span<Particle const>(records)};
  auto v = d.view();
  std::vector<int> visited(1000, 0);
  int* seen = visited.data();
  auto const throwing = [&] {
    coalesce::for_each_index(coalesce::device{}, v, [=](coalesce::element_index i) {
      seen[i] = 1;
      if (i == 500 || i == 997) coalesce::detail::throw_error("bad element " + std::to_string(i));
    });
  };
  CHECK_THROWS_WITH_AS(throwing(), "coalesce: bad element 500", coalesce::error);
  CHECK(std::count(visited.begin(), visited.end(), 1) == 1000);
  std::fill(visited.begin(), visited.end(), 0);
  CHECK_THROWS_WITH_AS(coalesce::for_each_index(coalesce::host{}, v,
                                                [=](coalesce::element_index i) {
                                                  seen[i] = 1;
                                                  if (i == 3) coalesce::detail::throw_error("bad element 3");
                                                }),
                       "coalesce: bad element 3", coalesce::error);  // host loops stop at the first
}

TEST_CASE("for_each_index over an aosoa view inside an OpenMP parallel region shares the blocks") {
  std::vector<Particle> records(100003);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_particle(i);
  coalesce::device_vector<Particle, coalesce::aosoa<16>> d{std::span<Particle const>(records)};
  auto v = d.view();
  std::vector<int> runs(records.size(), 0);
  int* counter = runs.data();
#pragma omp parallel num_threads(3)
  {
    for (int step = 0; step < 3; ++step) {
      coalesce::for_each_index(coalesce::device{}, v, [=](coalesce::element_index i) {
        counter[i] += 1;
        v[i][&Particle::mass] += 1.0f;
      });
#pragma omp single
      {
        bool all = true;
        for (int r : runs) all = all && r == step + 1;
        CHECK(all);
      }
    }
  }
  std::vector<Particle> got(records.size());
  d.copy_to(got);
  bool all = true;
  for (std::size_t i = 0; i < got.size(); ++i) all = all && got[i].mass == records[i].mass + 3.0f;
  CHECK(all);
}
#endif
