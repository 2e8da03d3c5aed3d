// Structs with exactly one member, compiled by nvcc: reflection, vectors, views, kernels.
// (Boost.PFR's member count failed to compile for every one-member struct under nvcc 13; the
// static_asserts below are the compile check: this file is part of the CUDA build of the tests.)
#include <array>
#include <cstring>
#include <vector>

#include <doctest/doctest.h>
#include <vector_types.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace {

struct Mass {
  float m;
};
struct Index {
  int x;
};
struct Position {
  float3 p;
};
struct Velocity {
  coalesce_test::vec3 v;
};
struct AppleTree {
  std::array<int, 4096> apples;
};

namespace reflect = coalesce::reflect;
static_assert(reflect::members<Mass>::count == 1 && reflect::leaf_count_v<Mass> == 1);
static_assert(reflect::members<Index>::count == 1 && reflect::leaf_count_v<Index> == 1);
static_assert(reflect::members<Position>::count == 1 && reflect::leaf_count_v<Position> == 3);
static_assert(reflect::members<Velocity>::count == 1 && reflect::leaf_count_v<Velocity> == 3);
static_assert(reflect::members<AppleTree>::count == 1 && reflect::leaf_count_v<AppleTree> == 1);
static_assert(reflect::column_count_v<AppleTree> == 4096);
static_assert(reflect::reflectable<Mass> && reflect::reflectable<Index> && reflect::reflectable<Position> &&
              reflect::reflectable<Velocity> && reflect::reflectable<AppleTree>);

}  // namespace

#define ONE_MEMBER_LAYOUTS coalesce::aos, coalesce::soa, coalesce::aosoa<32>

TEST_CASE_TEMPLATE("one-member structs: scalars in kernels, through the proxy and whole records", Layout,
                   ONE_MEMBER_LAYOUTS) {
  std::size_t const n = 1000;
  std::vector<Mass> masses(n);
  std::vector<Index> indices(n);
  for (std::size_t i = 0; i < n; ++i) {
    masses[i] = {0.5f * static_cast<float>(i)};
    indices[i] = {static_cast<int>(i)};
  }
  coalesce::device_vector<Mass, Layout> dm(masses);
  coalesce::device_vector<Index, Layout> di(indices);
  auto vm = dm.view();
  auto vi = di.view();
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
    auto [m] = vm[i];  // a structured binding of one name, on the proxy
    m *= 2.0f;
    Index const k = vi[i];  // a whole-record load
    vi[i] = Index{k.x + 1};
    vi[i][&Index::x] += 1;
  });
  std::vector<Mass> got_m(n);
  std::vector<Index> got_i(n);
  dm.copy_to(got_m);
  di.copy_to(got_i);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mismatches += got_m[i].m != static_cast<float>(i);
    mismatches += got_i[i].x != static_cast<int>(i) + 2;
  }
  CHECK(mismatches == 0);
}

TEST_CASE_TEMPLATE("one-member structs: a float3 and a nested struct flatten into columns", Layout,
                   ONE_MEMBER_LAYOUTS) {
  std::size_t const n = 513;
  std::vector<Position> positions(n);
  std::vector<Velocity> velocities(n);
  for (std::size_t i = 0; i < n; ++i) {
    float const f = static_cast<float>(i);
    positions[i] = {make_float3(f, -f, 2 * f)};
    velocities[i] = {{1.0f, f, -1.0f}};
  }
  coalesce::device_vector<Position, Layout> dp(positions);
  coalesce::device_vector<Velocity, Layout> dv(velocities);
  auto vp = dp.view();
  auto vv = dv.const_view();
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
    auto [p] = vp[i];
    auto [x, y, z] = p;
    Velocity const v = vv[i];
    x += v.v.x;
    y += v.v.y;
    z += v.v.z;
  });
  std::vector<Position> got(n);
  dp.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float const f = static_cast<float>(i);
    mismatches += got[i].p.x != f + 1.0f || got[i].p.y != 0.0f || got[i].p.z != 2 * f - 1.0f;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("one-member structs: a 4096-long std::array, on the device") {
  std::size_t const n = 40;
  std::vector<AppleTree> trees(n);
  for (std::size_t i = 0; i < n; ++i) trees[i].apples.fill(static_cast<int>(i));
  coalesce::device_vector<AppleTree> d(trees);
  auto v = d.view();
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
    auto [apples] = v[i];
    apples[4095] += 7;
    apples[0] = -apples[1];
  });
  std::vector<AppleTree> got(n);
  d.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    int const k = static_cast<int>(i);
    mismatches +=
        got[i].apples[0] != -k || got[i].apples[1] != k || got[i].apples[2048] != k || got[i].apples[4095] != k + 7;
  }
  CHECK(mismatches == 0);
}
