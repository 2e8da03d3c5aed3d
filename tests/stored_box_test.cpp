// Coordinates stored relative to their vector's box (coalesce::box_fixed in a stored_as mapping):
// lo + q * (hi - lo) / 2^32 with q an unsigned 32-bit integer. Bounded error inside the box, exact
// for multiples of the step, periodic wrap with box_fixed<wrap>, errors (or clamping) outside the
// box otherwise; the box travels with copies, and a conversion to another box keeps the
// coordinates. Every kind of inner mapping, host and device memory.
#include <cmath>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace {

struct vec3f {
  float x, y, z;
};
struct Body {
  vec3f pos;
  vec3f vel;
  std::uint32_t id;
};

using coalesce::box_fixed;
using coalesce::store;
using coalesce::stored_as;
template <class Inner> using wrapped = stored_as<Inner, store<&Body::pos, box_fixed<coalesce::wrap>>>;
using wrapped_soa = wrapped<coalesce::soa>;
using wrapped_aos = wrapped<coalesce::aos>;
using wrapped_aosoa = wrapped<coalesce::aosoa<8>>;
using wrapped_split = wrapped<coalesce::split<coalesce::fields<&Body::pos>, coalesce::aos, coalesce::soa>>;
using wrapped_user = wrapped<coalesce_test::reversed_columns>;
#define BOXED_LAYOUTS wrapped_soa, wrapped_aos, wrapped_aosoa, wrapped_split, wrapped_user
using reported = stored_as<coalesce::soa, store<&Body::pos, box_fixed<>>>;
using clamped = stored_as<coalesce::aos, store<&Body::pos, box_fixed<coalesce::saturate>>>;

// A box of power-of-two lengths: a step is 2^-29 .. 2^-27, so eighths are exact.
coalesce::box const eights{.lo = {-4.0, 0.0, 16.0}, .hi = {4.0, 16.0, 48.0}};
Body body(std::size_t i) {
  return {{static_cast<float>(i % 64) * 0.125f - 4.0f, static_cast<float>(i % 128) * 0.125f,
           16.0f + static_cast<float>(i % 256) * 0.125f},
          {1.0f, -2.0f, static_cast<float>(i)},
          static_cast<std::uint32_t>(i)};
}
std::vector<Body> bodies(std::size_t n) {
  std::vector<Body> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = body(i);
  return out;
}
using coalesce_test::records_of;
bool same(Body const& a, Body const& b) {
  return a.pos.x == b.pos.x && a.pos.y == b.pos.y && a.pos.z == b.pos.z && a.vel.x == b.vel.x && a.vel.y == b.vel.y &&
         a.vel.z == b.vel.z && a.id == b.id;
}
bool all_same(std::vector<Body> const& a, std::vector<Body> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("box_fixed: the format, its axes, its bytes") {
  using S = coalesce::layout_storage<Body, wrapped_soa>;
  CHECK(S::boxed);
  CHECK(S::leaf_bytes(0) == 4);
  CHECK(S::format(2).axis == 2);
  CHECK(S::format(0).wraps);
  CHECK(!coalesce::layout_storage<Body, coalesce::soa>::boxed);
  // Layouts without box_fixed members hold no box: the storage a kernel receives is as small as before.
  using plain = coalesce::layout_storage<Body, coalesce::soa>;
  CHECK(sizeof(plain) == sizeof(plain::mapping_type) + sizeof(plain::blobs));
  S s;
  s.frame.origin = {1.0, 2.0, 3.0};
  s.frame.length = {4.0, 8.0, 16.0};
  CHECK(s.format_at(1).origin == 2.0);
  CHECK(s.format_at(2).step == std::ldexp(16.0, -32));
  CHECK(wrapped_soa::name() == "stored_as<soa, store_index<0, box_fixed<wrap>>>");
}

TEST_CASE_TEMPLATE("coordinates on multiples of the step round-trip exactly through every mover", Layout,
                   BOXED_LAYOUTS) {
  for (std::size_t n : {0u, 1u, 37u, 5003u}) {
    INFO("n = " << n);
    auto const want = bodies(n);
    coalesce::host_vector<Body> plain{std::span<Body const>(want)};
    coalesce::host_vector<Body, Layout> h(eights);
    h.assign(plain);
    coalesce::device_vector<Body, Layout> d(eights);
    d.assign(plain);
    CHECK(all_same(records_of(h), want));
    CHECK(all_same(records_of(d), want));
    coalesce::device_vector<Body, Layout> copy = d;  // the box comes along: byte copies
    CHECK(all_same(records_of(copy), want));
    CHECK(copy.get_box().hi == eights.hi);
    coalesce::device_vector<Body, wrapped_aos> other = d;  // another boxed layout: the source's box
    CHECK(all_same(records_of(other), want));
    coalesce::host_vector<Body, Layout> back = other;
    CHECK(all_same(records_of(back), want));
    if (n > 0) {
      auto v = h.view();
      CHECK(static_cast<float>(v[n - 1][&Body::pos][&vec3f::z]) == want[n - 1].pos.z);
    }
  }
}

TEST_CASE("any coordinate inside the box comes back within half a step (and float's rounding)") {
  coalesce::box const odd{.lo = {-1.3, 0.1, 2.0}, .hi = {2.9, 8.7, 2.5}};
  std::vector<Body> want(1000);
  for (std::size_t i = 0; i < want.size(); ++i) {
    double const t = (static_cast<double>(i) + 0.37) / static_cast<double>(want.size());
    want[i] =
        Body{{static_cast<float>(-1.3 + 4.2 * t), static_cast<float>(0.1 + 8.6 * t), static_cast<float>(2.0 + 0.5 * t)},
             {},
             static_cast<std::uint32_t>(i)};
  }
  coalesce::host_vector<Body> plain{std::span<Body const>(want)};
  coalesce::host_vector<Body, reported> h(odd);
  h.assign(plain);
  coalesce::device_vector<Body, reported> d = h;
  auto const got = records_of(d);
  double worst = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    float const in[3] = {want[i].pos.x, want[i].pos.y, want[i].pos.z};
    float const out[3] = {got[i].pos.x, got[i].pos.y, got[i].pos.z};
    for (int a = 0; a < 3; ++a) {
      double const step = (odd.hi[a] - odd.lo[a]) * std::ldexp(1.0, -32);
      double const bound = step / 2 + std::abs(static_cast<double>(in[a])) * std::ldexp(1.0, -24);
      worst = std::max(worst, std::abs(static_cast<double>(out[a]) - in[a]) / bound);
    }
  }
  CHECK(worst <= 1.0);
}

TEST_CASE("box_fixed<wrap>: a coordinate past a face stores its periodic image; q_i - q_j is the minimum image") {
  coalesce::host_vector<Body, wrapped_soa> v(eights);
  v.resize(4);
  auto view = v.view();
  view[0][&Body::pos] = vec3f{4.5f, -0.25f, 48.0f};  // past hi, below lo, on hi: all wrap
  vec3f const p = view[0][&Body::pos];
  CHECK(p.x == -3.5f);
  CHECK(p.y == 15.75f);
  CHECK(p.z == 16.0f);
  view[1][&Body::pos][&vec3f::x] = 3.75f;
  view[1][&Body::pos][&vec3f::x] += 0.5f;  // a step across the face: exact
  CHECK(static_cast<float>(view[1][&Body::pos][&vec3f::x]) == -3.75f);
  view[2][&Body::pos][&vec3f::x] = -3.75f;
  view[3][&Body::pos][&vec3f::x] = 3.75f;
  auto const q = [&](std::size_t i) {
    return *reinterpret_cast<std::uint32_t const*>(view[i][&Body::pos][&vec3f::x].address());
  };
  // 3.75 and -3.75 are 0.5 apart across the face: the wrapped difference says so.
  auto const separation = static_cast<std::int32_t>(q(2) - q(3));
  CHECK(static_cast<double>(separation) * std::ldexp(8.0, -32) == 0.5);
  // Through a conversion too, many box lengths away.
  std::vector<Body> far(3, body(0));
  far[0].pos.x = 4.0f + 8.0f * 1000.0f + 0.125f;
  far[1].pos.y = -16.0f * 3.0f + 1.5f;
  far[2].pos.z = 1e30f;  // beyond 2^52 steps: no image is exact any more
  coalesce::host_vector<Body> plain{std::span<Body const>(std::span(far).first(2))};
  coalesce::device_vector<Body, wrapped_soa> d(eights);
  d.assign(plain);
  auto const got = records_of(d);
  CHECK(got[0].pos.x == -4.0f + 0.125f);
  CHECK(got[1].pos.y == 1.5f);
  coalesce::host_vector<Body> huge{std::span<Body const>(std::span(far).subspan(2))};
  CHECK_THROWS_WITH_AS(d.assign(huge), doctest::Contains("cannot be stored as box_fixed<wrap>"), coalesce::error);
}

// periodic_difference(a, b): the minimum image of a - b from the stored words, on every mapping;
// within float's rounding of the exact image, exact where the difference is a float times the
// step; refused for other policies and other boxes.
TEST_CASE_TEMPLATE("periodic_difference gives the minimum image from the stored fractions", Layout, BOXED_LAYOUTS) {
  std::size_t const n = 500;
  coalesce::host_vector<Body, Layout> v(eights);
  v.assign(coalesce::host_vector<Body>(bodies(n)));
  auto const view = v.view();
  std::vector<Body> const decoded = records_of(v);
  double const length[3] = {8.0, 16.0, 32.0};
  bool images = true;
  for (std::size_t i = 0; i < n; i += 7) {
    for (std::size_t j = 0; j < n; j += 11) {
      vec3f const d = coalesce::periodic_difference(view[i][&Body::pos], view[j][&Body::pos]);
      float const got[3] = {d.x, d.y, d.z};
      float const a[3] = {decoded[i].pos.x, decoded[i].pos.y, decoded[i].pos.z};
      float const b[3] = {decoded[j].pos.x, decoded[j].pos.y, decoded[j].pos.z};
      for (int k = 0; k < 3; ++k) {
        double want = static_cast<double>(a[k]) - static_cast<double>(b[k]);
        want -= length[k] * std::nearbyint(want / length[k]);
        // Eighths of power-of-two boxes: every difference is exact (half a box: either image).
        images =
            images && (static_cast<double>(got[k]) == want ||
                       (std::fabs(static_cast<double>(got[k])) == length[k] / 2 && std::fabs(want) == length[k] / 2));
      }
    }
  }
  CHECK(images);
  // One coordinate at a time, and across the face: 3.875 - (-3.875) is -0.25 in a box of 8.
  view[0][&Body::pos][&vec3f::x] = 3.875f;
  view[1][&Body::pos][&vec3f::x] = -3.875f;
  CHECK(coalesce::periodic_difference(view[0][&Body::pos][&vec3f::x], view[1][&Body::pos][&vec3f::x]) == -0.25f);
  CHECK(coalesce::periodic_difference(view[1][&Body::pos][&vec3f::x], view[0][&Body::pos][&vec3f::x]) == 0.25f);
}

// A box whose lo + (hi - lo) rounds above hi: the frame's length is shortened until it does not,
// so that the last step still reads below hi; get_box() gives back the box as it was given.
TEST_CASE("a box whose lo + (hi - lo) rounds above hi still reads every word below hi") {
  coalesce::box const odd{.lo = {-9.9, -0.3, 0.0}, .hi = {60.0, static_cast<double>(0.2f), 1.0}};
  REQUIRE(odd.lo[0] + (odd.hi[0] - odd.lo[0]) > odd.hi[0]);  // the case this test is about
  coalesce::host_vector<Body, wrapped_soa> v(odd);
  v.resize(1);
  auto const words = coalesce::detail::readable_position_columns_of(v.storage(), &Body::pos);
  for (int a = 0; a < 3; ++a) *reinterpret_cast<std::uint32_t*>(words.axis[a].address(0)) = ~0u;
  vec3f const p = v.view()[0][&Body::pos];
  CHECK(p.x < 60.0f);
  CHECK(static_cast<double>(p.y) < odd.hi[1]);
  CHECK(p.z < 1.0f);
  v.view()[0][&Body::pos] = p;  // written back: the same words (no wrap to lo)
  CHECK(*reinterpret_cast<std::uint32_t const*>(words.axis[0].address(0)) >= 0xffff0000u);
  auto const given = v.get_box();
  CHECK(given.lo == odd.lo);
  CHECK(given.hi == odd.hi);
}

TEST_CASE("periodic_difference of a box that is not a power of two: within float's rounding; other formats refused") {
  coalesce::box const odd{.lo = {-1.3, 0.7, 2.0}, .hi = {8.6, 3.9, 40.1}};
  coalesce::host_vector<Body, wrapped_aos> v(odd);
  v.resize(2);
  auto const view = v.view();
  view[0][&Body::pos] = vec3f{8.5f, 0.8f, 21.0f};
  view[1][&Body::pos] = vec3f{-1.2f, 3.8f, 2.5f};
  vec3f const d = coalesce::periodic_difference(view[0][&Body::pos], view[1][&Body::pos]);
  std::vector<Body> const r = records_of(v);
  double const length[3] = {8.6 + 1.3, 3.9 - 0.7, 40.1 - 2.0};
  float const got[3] = {d.x, d.y, d.z};
  float const a[3] = {r[0].pos.x, r[0].pos.y, r[0].pos.z}, b[3] = {r[1].pos.x, r[1].pos.y, r[1].pos.z};
  for (int k = 0; k < 3; ++k) {
    double want = static_cast<double>(a[k]) - static_cast<double>(b[k]);
    want -= length[k] * std::nearbyint(want / length[k]);
    INFO("axis " << k << ": " << got[k] << " vs " << want);
    // The decoded floats are within their own rounding (2^-24 of the box) of the stored points.
    CHECK(std::fabs(static_cast<double>(got[k]) - want) <= 1e-6 * length[k]);
  }
  CHECK(std::fabs(d.x + 0.2f) < 1e-5f);  // 8.5 and -1.2 are 0.2 apart across the face

  coalesce::host_vector<Body, reported> plain(eights);
  plain.assign(coalesce::host_vector<Body>(bodies(2)));
  CHECK_THROWS_WITH_AS((void)coalesce::periodic_difference(plain.view()[0][&Body::pos], plain.view()[1][&Body::pos]),
                       doctest::Contains("box_fixed<wrap> in the same box"), coalesce::error);
  coalesce::host_vector<Body, wrapped_aos> other(odd);
  other.resize(1);
  coalesce::host_vector<Body, wrapped_aos> shifted(eights);
  shifted.resize(1);
  CHECK_THROWS_WITH_AS((void)coalesce::periodic_difference(other.view()[0][&Body::pos], shifted.view()[0][&Body::pos]),
                       doctest::Contains("in different boxes"), coalesce::error);
}

TEST_CASE("box_difference gives a - b from the stored words, never wrapped, for any box_fixed policy") {
  // Eighths of a power-of-two box: exact. Pairs more than half the box apart keep their difference
  // (periodic_difference of box_fixed<wrap> positions gives the image; box_difference does not).
  coalesce::host_vector<Body, reported> v(eights);
  v.resize(3, body(1));
  auto const view = v.view();
  view[0][&Body::pos] = vec3f{3.875f, 15.5f, 47.0f};
  view[1][&Body::pos] = vec3f{-3.875f, 0.25f, 16.0f};
  view[2][&Body::pos] = vec3f{-4.0f, 16.0f, 48.0f};  // lo, and hi itself (the last step)
  vec3f const d = coalesce::box_difference(view[0][&Body::pos], view[1][&Body::pos]);
  CHECK(d.x == 7.75f);
  CHECK(d.y == 15.25f);
  CHECK(d.z == 31.0f);
  vec3f const e = coalesce::box_difference(view[1][&Body::pos], view[0][&Body::pos]);
  CHECK(e.x == -7.75f);
  CHECK(coalesce::box_difference(view[2][&Body::pos][&vec3f::x], view[1][&Body::pos][&vec3f::x]) == -0.125f);
  // The words' whole range (hi is the last step, 2^32 - 1 of them): not wrapped to a negative step.
  CHECK(coalesce::box_difference(view[2][&Body::pos][&vec3f::z], view[1][&Body::pos][&vec3f::z]) == 32.0f);
  // box_fixed<wrap> positions: the plain difference, where periodic_difference gives the image.
  coalesce::host_vector<Body, wrapped_soa> w(eights);
  w.resize(2);
  w.view()[0][&Body::pos] = vec3f{3.875f, 1.0f, 17.0f};
  w.view()[1][&Body::pos] = vec3f{-3.875f, 1.0f, 17.0f};
  CHECK(coalesce::box_difference(w.view()[0][&Body::pos], w.view()[1][&Body::pos]).x == 7.75f);
  CHECK(coalesce::periodic_difference(w.view()[0][&Body::pos], w.view()[1][&Body::pos]).x == -0.25f);
  // Two boxes, or a box and a float: refused, naming both.
  coalesce::host_vector<Body, reported> other(coalesce::box{.lo = {-8.0, 0.0, 16.0}, .hi = {8.0, 16.0, 48.0}});
  other.resize(1, body(1));
  CHECK_THROWS_WITH_AS((void)coalesce::box_difference(view[0][&Body::pos], other.view()[0][&Body::pos]),
                       doctest::Contains("box_difference needs both members stored as box_fixed in the same box; got "
                                         "box_fixed<> and box_fixed<> in different boxes"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((void)coalesce::periodic_difference(view[0][&Body::pos], view[1][&Body::pos]),
                       doctest::Contains("box_fixed<wrap> in the same box; got box_fixed<> and box_fixed<>"),
                       coalesce::error);
}

TEST_CASE("box_fixed<> refuses a coordinate outside the box, box_fixed<saturate> clamps it; NaN is refused") {
  auto records = bodies(50);
  records[17].pos.y = 16.5f;  // past hi (hi itself is the last step: a float read of it gives hi)
  coalesce::host_vector<Body> plain{std::span<Body const>(records)};
  coalesce::device_vector<Body, reported> d(eights);
  CHECK_THROWS_WITH_AS(d.assign(plain), doctest::Contains("element 17's leaf 1"), coalesce::error);
  CHECK_THROWS_WITH_AS(d.assign(plain), doctest::Contains("box_fixed<>"), coalesce::error);
  coalesce::host_vector<Body, reported> h(eights);
  CHECK_THROWS_WITH_AS(h.resize(2), doctest::Contains("element 0's leaf 2"), coalesce::error);  // Body{}: z = 0 < 16
  CHECK(h.size() == 0);  // a refused fill adds nothing
  h.resize(2, body(0));
  CHECK_THROWS_AS(h.view()[1][&Body::pos][&vec3f::x] = 4.001f, coalesce::error);
  CHECK(static_cast<float>(h.view()[1][&Body::pos][&vec3f::x]) == -4.0f);  // the refused write left it as it was

  coalesce::host_vector<Body, clamped> c(eights);
  c.assign(plain);
  auto const got = records_of(c);
  // The last step below hi (16 - 2^-28), read as the largest float below 16 (never hi itself).
  CHECK(*reinterpret_cast<std::uint32_t const*>(c.view()[17][&Body::pos][&vec3f::y].address()) == 0xffffffffu);
  CHECK(got[17].pos.y == std::nextafter(16.0f, 0.0f));
  c.view()[0][&Body::pos][&vec3f::x] = -100.0f;
  CHECK(static_cast<float>(c.view()[0][&Body::pos][&vec3f::x]) == -4.0f);

  records[17].pos.y = 1.0f;
  records[3].pos.z = std::nanf("");
  coalesce::host_vector<Body> with_nan{std::span<Body const>(records)};
  coalesce::host_vector<Body, wrapped_aos> w(eights);
  CHECK_THROWS_WITH_AS(w.assign(with_nan), doctest::Contains("element 3's leaf 2"), coalesce::error);
}

TEST_CASE("a vector with box_fixed members and no box refuses to hold coordinates, naming what to do") {
  auto const records = bodies(5);
  coalesce::host_vector<Body> plain{std::span<Body const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Body, wrapped_soa>(plain)), doctest::Contains("has no box"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Body, wrapped_aos>(plain)), doctest::Contains("has no box"),
                       coalesce::error);
  coalesce::host_vector<Body, wrapped_soa> empty;
  CHECK_THROWS_WITH_AS(empty.resize(3), doctest::Contains("has no box"), coalesce::error);
  coalesce::host_vector<Body, wrapped_soa> zeroed(3);
  CHECK_THROWS_WITH_AS(zeroed.view(), doctest::Contains("has no box"), coalesce::error);
  coalesce::box flat = eights;
  flat.hi[1] = flat.lo[1];
  CHECK_THROWS_WITH_AS(zeroed.set_box(flat), doctest::Contains("axis 1"), coalesce::error);
}

TEST_CASE("set_box moves every coordinate with the box; a copy into another box keeps the coordinates") {
  auto const want = bodies(100);
  coalesce::host_vector<Body> plain{std::span<Body const>(want)};
  coalesce::device_vector<Body, wrapped_soa> v(eights);
  v.assign(plain);
  coalesce::box doubled = eights;
  for (int a = 0; a < 3; ++a) doubled.hi[a] = eights.lo[a] + 2 * (eights.hi[a] - eights.lo[a]);
  // Same layout, another box: the coordinates are kept (converted), not the bytes.
  coalesce::device_vector<Body, wrapped_soa> kept(doubled);
  kept.assign(v);
  CHECK(all_same(records_of(kept), want));
  // set_box: the stored fractions stay, the coordinates scale about lo.
  v.set_box(doubled);
  auto const scaled = records_of(v);
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK(scaled[i].pos.x == static_cast<float>(-4.0 + 2.0 * (want[i].pos.x + 4.0)));
    CHECK(scaled[i].pos.z == static_cast<float>(16.0 + 2.0 * (want[i].pos.z - 16.0)));
  }
}

TEST_CASE(
    "sorts and fills keep a boxed vector's coordinates; position writers and atomic_add name the format they refuse") {
  auto const want = bodies(300);
  coalesce::device_vector<Body, wrapped_aosoa> v(eights);
  v.assign(coalesce::host_vector<Body>(want));
  std::vector<std::uint32_t> keys(want.size());
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<std::uint32_t>((i * 37) % 101);
  coalesce_test::space_array<std::uint32_t, coalesce::device> device_keys(keys);
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, std::span<std::uint32_t const>(device_keys.data(), keys.size()), plan);
  auto const sorted = records_of(v);
  std::vector<Body> expected;
  for (std::uint32_t k = 0; k < 101; ++k)
    for (std::size_t i = 0; i < want.size(); ++i)
      if (keys[i] == k) expected.push_back(want[i]);
  CHECK(all_same(sorted, expected));

  v.resize(310, body(7));
  CHECK(same(records_of(v)[305], body(7)));

  // Keys, lists and migration read box_fixed<wrap> positions (tests/neighbors_test.cpp,
  // tests/mpi); halos, which write ghost images past the box, refuse them by name.
  CHECK_THROWS_WITH_AS((void)coalesce::detail::position_columns_of(v.storage(), &Body::pos),
                       doctest::Contains("box_fixed<wrap>, which wraps at the vector's box"), coalesce::error);
  coalesce::host_vector<Body, wrapped_soa> h(eights);
  h.resize(2);
  CHECK_THROWS_AS(coalesce::atomic_add(h.view()[0][&Body::pos][&vec3f::x], 1.0f), coalesce::error);
}

TEST_CASE("a view over user memory of a boxed layout takes the box its words are fractions of") {
  // Positions as the program keeps them: three columns of 32-bit box fractions.
  std::vector<std::uint32_t> qx{0u, 1u << 31, 0xffffffffu}, qy(3, 1u << 30), qz(3, 0u);
  std::vector<float> vx(3), vy(3), vz(3);
  std::vector<std::uint32_t> id{7, 8, 9};
  auto v = coalesce::view<Body, wrapped_soa>::over_blobs(
      3, {qx.data(), qy.data(), qz.data(), vx.data(), vy.data(), vz.data(), id.data()}, eights);
  vec3f const middle = v[1][&Body::pos];
  CHECK(middle.x == 0.0f);  // half of [-4, 4)
  CHECK(middle.y == 4.0f);  // a quarter of [0, 16)
  CHECK(middle.z == 16.0f);
  v[0][&Body::pos][&vec3f::x] = -3.0f;
  CHECK(qx[0] == 1u << 29);  // an eighth of the box's 2^32 steps
  coalesce::box bad = eights;
  bad.lo[2] = std::nan("");
  CHECK_THROWS_WITH_AS((coalesce::view<Body, wrapped_soa>::over_blobs(
                           3, {qx.data(), qy.data(), qz.data(), vx.data(), vy.data(), vz.data(), id.data()}, bad)),
                       doctest::Contains("view::over_blobs: axis 2"), coalesce::error);
}

namespace {
struct flat {
  float x, y, z;
};
}  // namespace

TEST_CASE("separate x, y, z members take the box's axes in member order") {
  using flat_boxed = stored_as<coalesce::soa, store<&flat::x, box_fixed<>>, store<&flat::y, box_fixed<>>,
                               store<&flat::z, box_fixed<coalesce::wrap>>>;
  using S = coalesce::layout_storage<flat, flat_boxed>;
  CHECK(S::format(0).axis == 0);
  CHECK(S::format(1).axis == 1);
  CHECK(S::format(2).axis == 2);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {1, 100, 100}};
  coalesce::host_vector<flat, flat_boxed> v(b);
  v.resize(1, flat{0.5f, 50.0f, 75.25f});
  flat const got = v.view()[0];
  CHECK(got.x == 0.5f);
  CHECK(got.y == 50.0f);
  CHECK(got.z == 75.25f);
}

TEST_CASE("reads stay inside [lo, hi) and write back unchanged; swaps and member copies move the stored words") {
  // lo = 0.7 is not a float: a read of q = 0 must not fall below it, nor one of the last step reach hi.
  coalesce::box const b{.lo = {0.7, 0.0, 0.0}, .hi = {1.7, 1.0, 1.0}};
  coalesce::host_vector<Body, reported> v(b);
  v.resize(4, Body{{1.0f, 0.5f, 0.5f}, {}, 0});
  auto view = v.view();
  auto word = [&](std::size_t i) -> std::uint32_t& {
    return *reinterpret_cast<std::uint32_t*>(view[i][&Body::pos][&vec3f::x].address());
  };
  word(0) = 0;
  word(1) = 0xffffffffu;
  float const low = view[0][&Body::pos][&vec3f::x], high = view[1][&Body::pos][&vec3f::x];
  CHECK(static_cast<double>(low) >= 0.7);
  CHECK(static_cast<double>(high) < 1.7);
  view[0][&Body::pos][&vec3f::x] = low;  // accepted: nothing refused on the way back
  view[1][&Body::pos][&vec3f::x] = high;
  CHECK(static_cast<float>(view[1][&Body::pos][&vec3f::x]) == high);
  word(2) = 0x12345679u;
  word(3) = 3u;
  swap(view[2][&Body::pos][&vec3f::x], view[3][&Body::pos][&vec3f::x]);
  swap(view[2][&Body::pos][&vec3f::x], view[3][&Body::pos][&vec3f::x]);
  CHECK(word(2) == 0x12345679u);
  CHECK(word(3) == 3u);
  view[3][&Body::pos][&vec3f::x] = view[2][&Body::pos][&vec3f::x];
  CHECK(word(3) == 0x12345679u);
}

TEST_CASE("operator= copies the box with the elements; assign keeps the destination's box") {
  auto const want = bodies(20);
  coalesce::host_vector<Body, wrapped_soa> a(eights);
  a.assign(coalesce::host_vector<Body>(want));
  coalesce::box wide = eights;
  wide.hi[0] = 12.0;
  coalesce::host_vector<Body, wrapped_soa> b(wide), c(wide);
  b = a;
  CHECK(b.get_box().hi[0] == 4.0);
  CHECK(all_same(records_of(b), want));
  c.assign(a);
  CHECK(c.get_box().hi[0] == 12.0);
  CHECK(all_same(records_of(c), want));
  coalesce::box tiny = eights;
  tiny.hi[0] = tiny.lo[0] + 1e-300;
  CHECK_THROWS_WITH_AS(a.set_box(tiny), doctest::Contains("axis 0"), coalesce::error);
}
