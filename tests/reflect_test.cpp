#include <complex>
#include <cstddef>

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
