// The proxy and the view, on every layout, over host memory.
#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

#define COALESCE_TEST_LAYOUTS COALESCE_ALL_LAYOUTS, coalesce::aosoa<32>

TEST_CASE_TEMPLATE("a proxy reads and writes like the struct", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(37);
  auto v = h.view();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = make_particle(i);

  for (std::size_t i = 0; i < v.size(); ++i) {
    auto [pos, vel, mass, id] = v[i];
    static_assert(std::is_same_v<decltype(mass), float&>);  // a reference into the mass column
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * 2.0f;
    y += vy;
    z += vz;
    mass *= 2.0f;
    id += 1;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    Particle expected = make_particle(i);
    expected.pos.x += expected.vel.x * 2.0f;
    expected.pos.y += expected.vel.y;
    expected.pos.z += expected.vel.z;
    expected.mass *= 2.0f;
    expected.id += 1;
    Particle const got = v[i];
    CHECK(same_bytes(got, expected));
  }
}

TEST_CASE_TEMPLATE("nested proxies load and store only their part", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(9);
  auto v = h.view();
  for (std::size_t i = 0; i < 9; ++i) v[i] = make_particle(i);
  auto [pos, vel, mass, id] = v[4];
  vec3 q = pos;
  CHECK(q.y == make_particle(4).pos.y);
  q.y = 100.0f;
  pos = q;
  vel = pos;  // proxy to proxy: copies values, never rebinds
  Particle const p = v[4];
  CHECK(p.pos.y == 100.0f);
  CHECK(p.vel.y == 100.0f);
  CHECK(p.mass == make_particle(4).mass);
  Particle const neighbour = v[5];
  CHECK(same_bytes(neighbour, make_particle(5)));
}

namespace {
// 16 leaves, a struct two levels down: under soa the root's storage is 16 blob pointers.
struct Frame {
  vec3 origin;
  float scale;
};
struct Wide {
  vec3 pos, vel;
  Frame frame;
  float mass, charge, radius, potential, density, pressure;
};
Wide make_wide(std::size_t i) {
  float const f = static_cast<float>(i);
  return {{f, f + 0.5f, f + 0.25f},
          {-f, 2 * f, 3 * f},
          {{7 * f, 8 * f, 9 * f}, f / 3},
          1 + f,
          2 + f,
          3 + f,
          4 + f,
          5 + f,
          6 + f};
}
}  // namespace

TEST_CASE_TEMPLATE("nested proxies of a wide record hold their own leaves' pointers and address the right element",
                   Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Wide, Layout> h(23);
  auto v = h.view();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = make_wide(i);
  using root = decltype(v[0]);
  using pos_proxy = std::tuple_element_t<0, root>;
  using frame_proxy = std::tuple_element_t<2, root>;
  using origin_proxy = std::tuple_element_t<0, frame_proxy>;
  // A vec3's proxy: the mapping, at most 3 pointers and the index, whatever the root's width (so
  // that g++ keeps it in registers: docs/dev/performance-history.md "Nested proxies hold their own leaves'
  // pointers").
  constexpr std::size_t mapping_bytes = sizeof(typename coalesce::layout_storage<Wide, Layout>::mapping_type);
  static_assert(sizeof(pos_proxy) <= mapping_bytes + 4 * sizeof(void*));
  static_assert(sizeof(origin_proxy) <= mapping_bytes + 4 * sizeof(void*));
  static_assert(sizeof(frame_proxy) <= sizeof(root));
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto [pos, vel, frame, mass, charge, radius, potential, density, pressure] = v[i];
    auto [origin, scale] = frame;
    auto [ox, oy, oz] = origin;
    pos[&vec3::x] += vel[&vec3::x];                  // member pointers on a nested proxy
    origin[1] = ox + oz;                             // an index on a proxy two levels down
    frame[&Frame::origin][&vec3::z] = scale * 3.0f;  // a member pointer to a struct, then a leaf
    vec3 const o = frame[&Frame::origin];            // a struct found at run time, loaded whole
    pressure = o.y + mass + charge + radius + potential + density + static_cast<float>(oy == oy);
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    Wide want = make_wide(i);
    want.pos.x += want.vel.x;
    want.frame.origin.y = want.frame.origin.x + want.frame.origin.z;
    want.frame.origin.z = want.frame.scale * 3.0f;
    want.pressure = want.frame.origin.y + want.mass + want.charge + want.radius + want.potential + want.density + 1.0f;
    Wide const got = v[i];
    CHECK(same_bytes(got, want));
  }
}

TEST_CASE_TEMPLATE("access by member pointer and by index", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(5);
  auto v = h.view();
  for (std::size_t i = 0; i < 5; ++i) v[i] = make_particle(i);
  v[3][&Particle::mass] *= 0.5f;
  v[3][&Particle::vel][&vec3::z] = 42.0f;
  v[2].template get<3>() = 7u;
  vec3 const pos = v[1][&Particle::pos];
  CHECK(pos.x == make_particle(1).pos.x);
  Particle const p3 = v[3];
  CHECK(p3.mass == make_particle(3).mass * 0.5f);
  CHECK(p3.vel.z == 42.0f);
  CHECK(p3.vel.y == make_particle(3).vel.y);
  Particle const p2 = v[2];
  CHECK(p2.id == 7u);
}

TEST_CASE_TEMPLATE("std::array leaves and opaque leaves", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Mixed, Layout> h(33);
  auto v = h.view();
  for (std::size_t i = 0; i < 33; ++i) v[i] = make_mixed(i);
  auto [kind, charge, energy, flags, force, tag, wrapped, cell] = v[20];
  CHECK(flags.size() == 3);
  CHECK(flags[2] == 0xA5);
  flags[1] = 9;
  std::array<std::uint8_t, 3> const all = flags;
  CHECK(all[0] == 20);
  CHECK(all[1] == 9);
  tag.lo = 5;
  Mixed expected = make_mixed(20);
  expected.flags[1] = 9;
  expected.tag.lo = 5;
  Mixed const got = v[20];
  CHECK(same_bytes(got, expected));
  CHECK(kind == species::electron);
  CHECK(charge == expected.charge);
  CHECK(energy == expected.energy);
  CHECK(cell == expected.cell);
  CHECK(wrapped[0].y == 20.0f);
}

TEST_CASE_TEMPLATE("columns: contiguous, strided or blocked, same values", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(70);
  auto v = h.view();
  for (std::size_t i = 0; i < 70; ++i) v[i] = make_particle(i);
  auto ys = v.column(&Particle::pos, &vec3::y);
  auto ids = v.template column<7>();
  REQUIRE(ys.size() == 70);
  for (std::size_t i = 0; i < 70; ++i) {
    CHECK(ys[i] == make_particle(i).pos.y);
    CHECK(ids[i] == make_particle(i).id);
  }
  ys[69] = -1.0f;
  Particle const last = v[69];
  CHECK(last.pos.y == -1.0f);
  if constexpr (std::is_same_v<Layout, coalesce::soa>) {
    CHECK(ys.data() + 1 == &ys[1]);
    CHECK(reinterpret_cast<std::uintptr_t>(ys.data()) % coalesce::column_alignment == 0);
  }
}

TEST_CASE_TEMPLATE("iterators work with std algorithms", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(100);
  auto v = h.view();
  for (std::size_t i = 0; i < 100; ++i) v[i] = make_particle(i);
  std::sort(v.begin(), v.end(), [](Particle const& a, Particle const& b) { return a.id < b.id; });
  CHECK(std::is_sorted(v.begin(), v.end(), [](Particle const& a, Particle const& b) { return a.id < b.id; }));
  std::reverse(v.begin(), v.end());
  std::vector<Particle> copy(v.begin(), v.end());
  CHECK(copy.size() == 100);
  float const total = std::accumulate(v.begin(), v.end(), 0.0f, [](float s, Particle const& p) { return s + p.mass; });
  float expected = 0.0f;
  for (auto const& p : copy) expected += p.mass;
  CHECK(total == expected);
  // every record is still there (a sort is a permutation)
  std::vector<std::uint32_t> ids;
  for (Particle const p : v) ids.push_back(p.id);
  std::sort(ids.begin(), ids.end());
  std::vector<std::uint32_t> want;
  for (std::size_t i = 0; i < 100; ++i) want.push_back(make_particle(i).id);
  std::sort(want.begin(), want.end());
  CHECK(ids == want);
}

TEST_CASE_TEMPLATE("a const view reads and cannot write", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(3);
  h.view()[1] = make_particle(1);
  coalesce::view<Particle const, Layout> c = h.view();
  auto [pos, vel, mass, id] = c[1];
  static_assert(std::is_same_v<decltype(mass), float const&>);
  CHECK(mass == make_particle(1).mass);
  static_assert(!std::is_assignable_v<decltype(c[1]), Particle>);
}

TEST_CASE_TEMPLATE("a proxy outlives the view it came from", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(4);
  auto r = h.view()[2];  // the temporary view is gone after this line
  r = make_particle(2);
  Particle const p = h[2];
  CHECK(same_bytes(p, make_particle(2)));
}

TEST_CASE("an aos view over user memory: no copy, same records") {
  std::vector<Particle> legacy(10);
  for (std::size_t i = 0; i < 10; ++i) legacy[i] = make_particle(i);
  coalesce::view<Particle, coalesce::aos> v(legacy.data(), legacy.size());
  v[3][&Particle::mass] = 5.0f;
  CHECK(legacy[3].mass == 5.0f);
  auto xs = v.column(&Particle::pos, &vec3::x);
  CHECK(&xs[4] == &legacy[4].pos.x);
}

TEST_CASE("a soa view over user columns: no copy") {
  std::size_t const n = 6;
  std::vector<float> px(n), py(n), pz(n), vx(n), vy(n), vz(n), mass(n);
  std::vector<std::uint32_t> id(n);
  auto v = coalesce::view<Particle, coalesce::soa>::over_columns(
      n, {px.data(), py.data(), pz.data(), vx.data(), vy.data(), vz.data(), mass.data(), id.data()});
  v[2] = make_particle(2);
  CHECK(py[2] == make_particle(2).pos.y);
  CHECK(id[2] == make_particle(2).id);
  CHECK(v.column(&Particle::mass).data() == mass.data());
}

TEST_CASE("views over user memory reject null and misaligned pointers") {
  CHECK_THROWS_WITH_AS((coalesce::view<Particle, coalesce::aos>(static_cast<Particle*>(nullptr), 4)),
                       doctest::Contains("null pointer"), coalesce::error);
  CHECK_NOTHROW((coalesce::view<Particle, coalesce::aos>(static_cast<Particle*>(nullptr), 0)));
  alignas(16) unsigned char raw[4 * sizeof(Particle) + 1] = {};
  auto* misaligned = reinterpret_cast<Particle*>(raw + 1);
  CHECK_THROWS_WITH_AS((coalesce::view<Particle, coalesce::aos>(misaligned, 4)), doctest::Contains("not aligned"),
                       coalesce::error);
  std::vector<float> f(4);
  std::vector<std::uint32_t> u(4);
  void* bad = reinterpret_cast<unsigned char*>(f.data()) + 2;
  CHECK_THROWS_WITH_AS((coalesce::view<Particle, coalesce::soa>::over_columns(
                           4, {f.data(), f.data(), f.data(), f.data(), bad, f.data(), f.data(), u.data()})),
                       doctest::Contains("column 4"), coalesce::error);
}

#if COALESCE_CHECK_BOUNDS
TEST_CASE_TEMPLATE("out-of-range access is caught in debug builds", Layout, COALESCE_TEST_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(3);
  auto v = h.view();
  CHECK_THROWS_WITH_AS(v[3], doctest::Contains("index 3 is out of range for a view of size 3"), coalesce::error);
  CHECK_THROWS_AS(h[7], coalesce::error);
  CHECK_THROWS_AS(v.column(&Particle::mass)[3], coalesce::error);
}
#endif

TEST_CASE("views over user memory that is too small are rejected before any access") {
  std::vector<Particle> legacy(5);
  CHECK_THROWS_WITH_AS((coalesce::view<Particle, coalesce::aos>(std::span<Particle>(legacy), 6)),
                       doctest::Contains("needs 6 elements of records but the memory holds 5"), coalesce::error);
  CHECK(coalesce::view<Particle, coalesce::aos>(std::span<Particle>(legacy), 4).size() == 4);
  std::vector<float> f(8);
  std::vector<std::uint32_t> u(8);
  std::vector<float> short_column(7);
  CHECK_THROWS_WITH_AS(
      (coalesce::view<Particle, coalesce::soa>::over_columns(
          8, {f.data(), f.data(), f.data(), f.data(), f.data(), short_column.data(), f.data(), u.data()},
          {8, 8, 8, 8, 8, short_column.size(), 8, 8})),
      doctest::Contains("column 5"), coalesce::error);
}

TEST_CASE_TEMPLATE("an empty vector's columns are empty, with no member offset applied to a null pointer", Layout,
                   coalesce::aos, coalesce::soa, coalesce::aosoa<8>) {
  coalesce::host_vector<Particle, Layout> empty;
  auto const column = empty.view().template column<1>();
  CHECK(column.size() == 0);
  CHECK(column.first() == nullptr);
  CHECK(empty.storage().column(6, 0).base == nullptr);
}

TEST_CASE_TEMPLATE("a member whose leaves share one type is indexed at run time: v[i][&Particle::pos][d]", Layout,
                   COALESCE_ALL_LAYOUTS) {
  std::vector<Particle> records(37);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_particle(i);
  coalesce::host_vector<Particle, Layout> h(records);
  auto v = h.view();
  for (std::size_t i = 0; i < v.size(); ++i) {
    for (int d = 0; d < 3; ++d) v[i][&Particle::pos][d] += static_cast<float>(d + 1);  // member pointer, then index
    auto [pos, vel, mass, id] = v[i];                                                  // structured binding, then index
    for (std::size_t d = 0; d < 3; ++d) vel[d] = pos[d] * 2.0f;
  }
  std::vector<Particle> out(records.size());
  h.copy_to(out);
  bool same = true;
  for (std::size_t i = 0; i < out.size(); ++i) {
    Particle p = records[i];
    p.pos.x += 1.0f;
    p.pos.y += 2.0f;
    p.pos.z += 3.0f;
    p.vel = {p.pos.x * 2.0f, p.pos.y * 2.0f, p.pos.z * 2.0f};
    same = same && std::memcmp(&p, &out[i], sizeof p) == 0;
  }
  CHECK(same);
  static_assert(
      !requires { v[0][&Particle::mass][0]; }, "a scalar member has no run-time index");
#if COALESCE_CHECK_BOUNDS
  CHECK_THROWS_AS(v[0][&Particle::pos][3], coalesce::error);
#endif
}
