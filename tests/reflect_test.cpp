#include <array>
#include <complex>
#include <cstddef>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;
namespace reflect = coalesce::reflect;

TEST_CASE("a nested struct flattens into its leaves, with the compiler's offsets") {
  static_assert(reflect::leaf_count_v<Particle> == 8);
  static_assert(reflect::column_count_v<Particle> == 8);
  static_assert(std::is_same_v<reflect::leaf_t<Particle, 6>::type, float>);
  static_assert(std::is_same_v<reflect::leaf_t<Particle, 7>::type, std::uint32_t>);
  CHECK(reflect::leaf_t<Particle, 0>::offset == offsetof(Particle, pos) + offsetof(vec3, x));
  CHECK(reflect::leaf_t<Particle, 5>::offset == offsetof(Particle, vel) + offsetof(vec3, z));
  CHECK(reflect::leaf_t<Particle, 6>::offset == offsetof(Particle, mass));
  CHECK(reflect::leaf_t<Particle, 7>::offset == offsetof(Particle, id));
  auto const& table = reflect::leaf_table_v<Particle>;
  CHECK(table[4].depth == 2);
  CHECK(table[4].path[0] == 1);  // vel
  CHECK(table[4].path[1] == 1);  // .y
  CHECK(table[6].depth == 1);
}

TEST_CASE("every member kind: enums, padding, std::array leaves, opaque members") {
  static_assert(reflect::kind_v<Opaque16> == reflect::node_kind::leaf);
  static_assert(reflect::kind_v<std::array<std::uint8_t, 3>> == reflect::node_kind::array);
  static_assert(reflect::kind_v<std::array<vec3, 1>> == reflect::node_kind::leaf);  // arrays of structs: whole
  static_assert(reflect::kind_v<std::complex<float>> == reflect::node_kind::leaf);
  // kind, charge, energy, flags(3), force.x/y/z, tag, wrapped, cell
  static_assert(reflect::leaf_count_v<Mixed> == 10);
  static_assert(reflect::column_count_v<Mixed> == 12);
  auto const& table = reflect::leaf_table_v<Mixed>;
  CHECK(table[0].offset == offsetof(Mixed, kind));
  CHECK(table[1].offset == offsetof(Mixed, charge));
  CHECK(table[2].offset == offsetof(Mixed, energy));
  CHECK(table[3].offset == offsetof(Mixed, flags));
  CHECK(table[3].extent == 3);
  CHECK(table[3].first_column == 3);
  CHECK(table[4].offset == offsetof(Mixed, force));
  CHECK(table[4].first_column == 6);
  CHECK(table[7].offset == offsetof(Mixed, tag));
  CHECK(table[7].size == sizeof(Opaque16));
  CHECK(table[8].size == sizeof(vec3));
  CHECK(table[9].offset == offsetof(Mixed, cell));
}

struct with_long_array {
  float x;
  std::array<int, 4096> histogram;  // one leaf with 4096 sub-columns, not 4096 leaves
};

TEST_CASE("a long std::array member is one leaf with an extent") {
  static_assert(reflect::leaf_count_v<with_long_array> == 2);
  static_assert(reflect::column_count_v<with_long_array> == 4097);
  CHECK(reflect::leaf_table_v<with_long_array>[1].extent == 4096);
}

struct alignas(32) over_aligned_struct {
  double a;
  float b;
};

TEST_CASE("alignas on the whole struct is fine") {
  static_assert(reflect::leaf_count_v<over_aligned_struct> == 2);
  CHECK(reflect::leaf_t<over_aligned_struct, 1>::offset == offsetof(over_aligned_struct, b));
}

// reflectable tells usable types apart (checked when this file compiles).
static_assert(reflect::reflectable<Particle>);
static_assert(reflect::reflectable<Mixed>);
static_assert(!reflect::reflectable<std::complex<float>>);
static_assert(!reflect::reflectable<int>);

namespace {
struct local_vec2 {  // internal linkage: a common way to write a struct in a .cpp file
  float x, y;
};
struct local_body {
  local_vec2 pos;
  int id;
};
}  // namespace

TEST_CASE("structs in an anonymous namespace reflect and store") {
  static_assert(reflect::leaf_count_v<local_body> == 3);
  coalesce::host_vector<local_body> v(3, local_body{{1.0f, 2.0f}, 7});
  local_body const b = v[2];
  CHECK(b.pos.y == 2.0f);
  CHECK(b.id == 7);
}

// One-member structs (Boost.PFR could not count them under nvcc; tests/gpu/one_member_test.cu
// is the nvcc side). Here: the same shapes reflect, store and round-trip on the host.
namespace one_member {
struct Mass {
  float m;
};
struct Index {
  int x;
};
struct float3_like {  // CUDA's float3 is a plain struct of three floats
  float x, y, z;
};
struct Position {
  float3_like p;
};
struct Velocity {
  vec3 v;
};
struct AppleTree {
  std::array<int, 4096> apples;
};
}  // namespace one_member

TEST_CASE_TEMPLATE("one-member structs reflect, store and round-trip on every layout", Layout, coalesce::aos,
                   coalesce::soa, coalesce::aosoa<8>) {
  using namespace one_member;
  static_assert(reflect::members<Mass>::count == 1 && reflect::leaf_count_v<Mass> == 1);
  static_assert(reflect::members<Index>::count == 1 && reflect::leaf_count_v<Index> == 1);
  static_assert(reflect::members<Position>::count == 1 && reflect::leaf_count_v<Position> == 3);
  static_assert(reflect::members<Velocity>::count == 1 && reflect::leaf_count_v<Velocity> == 3);
  static_assert(reflect::members<AppleTree>::count == 1 && reflect::column_count_v<AppleTree> == 4096);
  static_assert(std::is_same_v<reflect::leaf_t<Position, 2>::type, float>);
  CHECK(reflect::leaf_t<Position, 2>::offset == offsetof(float3_like, z));

  std::size_t const n = 37;
  coalesce::host_vector<Mass, Layout> masses(n, Mass{1.5f});
  coalesce::host_vector<Index, Layout> indices(n, Index{3});
  coalesce::host_vector<Position, Layout> positions(n, Position{{1.0f, 2.0f, 3.0f}});
  coalesce::host_vector<Velocity, Layout> velocities(n, Velocity{{-1.0f, -2.0f, -3.0f}});
  coalesce::host_vector<AppleTree, Layout> trees(3, AppleTree{});
  for (std::size_t i = 0; i < n; ++i) {
    auto [m] = masses[i];  // a structured binding of one name, on the proxy
    m *= static_cast<float>(i);
    indices[i][&Index::x] += static_cast<int>(i);
    auto [p] = positions[i];
    auto [x, y, z] = p;
    Velocity const v = velocities[i];
    x += v.v.x;
    y += v.v.y;
    z += v.v.z * static_cast<float>(i);
  }
  auto [apples] = trees[2];
  apples[4095] = 42;
  apples[0] = -1;

  std::vector<Mass> got_m(n);
  std::vector<Index> got_i(n);
  std::vector<Position> got_p(n);
  std::vector<AppleTree> got_t(3);
  masses.copy_to(got_m);
  indices.copy_to(got_i);
  positions.copy_to(got_p);
  trees.copy_to(got_t);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float const f = static_cast<float>(i);
    mismatches += got_m[i].m != 1.5f * f;
    mismatches += got_i[i].x != 3 + static_cast<int>(i);
    mismatches += got_p[i].p.x != 0.0f || got_p[i].p.y != 0.0f || got_p[i].p.z != 3.0f - 3.0f * f;
  }
  CHECK(mismatches == 0);
  CHECK(got_t[2].apples[4095] == 42);
  CHECK(got_t[2].apples[0] == -1);
  CHECK(got_t[2].apples[1] == 0);
  CHECK(got_t[1].apples[4095] == 0);
}

// Member counting does not depend on sizeof(T) or on array extents (Boost.PFR's count tried up
// to sizeof(T) * CHAR_BIT initializers: this struct took it 35 s with g++). The compile-time
// bound itself is checked by tests/compile_fail (compile_time.large_array).
struct long_array_and_int {
  std::array<int, 65536> a;
  int b;
};
static_assert(reflect::leaf_count_v<long_array_and_int> == 2);
static_assert(reflect::column_count_v<long_array_and_int> == 65537);
static_assert(reflect::leaf_t<long_array_and_int, 1>::offset == offsetof(long_array_and_int, b));

// Member types that a count by T{{any}, ...} or by conversion would get wrong: an empty struct
// member (no leaves), a class with several converting constructors, std::complex, a class that
// converts from anything.
namespace counting {
struct empty_tag {};
struct several_constructors {
  several_constructors() = default;
  several_constructors(float f) : v(f) {}
  several_constructors(double d) : v(static_cast<float>(d)) {}
  float v;
};
struct tricky_members {
  empty_tag tag;
  several_constructors s;
  std::complex<float> c;
  int id;
};
struct takes_anything {  // a converting constructor template: must not look like a base class
  takes_anything() = default;
  template <class X> takes_anything(X) : v(1) {}
  int v;
};
struct anything_first {
  takes_anything a;
  float mass;
};
struct c_array_member {
  int id;
  float pos[3];
};
struct empty_base {};
struct derived : empty_base {
  float mass;
};
struct no_default {
  no_default(int i) : v(i) {}
  int v;
};
struct with_no_default {
  float x;
  no_default n;
};
}  // namespace counting

TEST_CASE("members are counted one per initializer, whatever their type") {
  using namespace counting;
  static_assert(reflect::members<tricky_members>::count == 4);
  static_assert(reflect::leaf_count_v<tricky_members> == 3);  // the empty tag has no leaves
  CHECK(reflect::leaf_t<tricky_members, 0>::offset == offsetof(tricky_members, s));
  CHECK(reflect::leaf_t<tricky_members, 1>::offset == offsetof(tricky_members, c));
  CHECK(reflect::leaf_t<tricky_members, 2>::offset == offsetof(tricky_members, id));
  static_assert(reflect::members<anything_first>::count == 2 && reflect::leaf_count_v<anything_first> == 2);
  // Rejected (with a coalesce: static_assert when used; see tests/compile_fail), not miscounted:
  static_assert(!reflect::reflectable<c_array_member>);
  static_assert(!reflect::reflectable<derived>);
  static_assert(!reflect::reflectable<with_no_default>);
}
