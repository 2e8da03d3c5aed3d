// Members stored in another number format (coalesce::stored_as): the formats' conversions
// (rounding, ranges, policies), every algorithm on stored layouts over every inner mapping and
// space, and deterministic fixed-point sums through atomic_add.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

namespace {
using coalesce::fixed_point;
using coalesce::store;
using coalesce::stored_as;
using coalesce::stored_format;

using coalesce_test::records_of;
// Equal values (fixed point holds no negative zero: -0.0f comes back as 0.0f, which == accepts).
bool same_values(Particle const& a, Particle const& b) {
  return a.pos.x == b.pos.x && a.pos.y == b.pos.y && a.pos.z == b.pos.z && a.vel.x == b.vel.x && a.vel.y == b.vel.y &&
         a.vel.z == b.vel.z && a.mass == b.mass && a.id == b.id;
}
bool all_same(std::vector<Particle> const& a, std::vector<Particle> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_values(a[i], b[i])) return false;
  return true;
}
std::vector<Particle> particles(std::size_t n) {
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = make_particle(i);
  return out;
}

// Stored layouts whose formats hold make_particle's values exactly (vel = {i/4, 1, -i/2} below
// 512 is exact in half and in 8 fraction bits; widening is always exact), over every kind of
// inner mapping: the suites below check bit-exact round trips on them.
using vel_half_soa = stored_as<coalesce::soa, store<&Particle::vel, coalesce::half>>;
using vel_fixed_aos = stored_as<coalesce::aos, store<&Particle::vel, fixed_point<std::int32_t, 8>>>;
using wide_aosoa = stored_as<coalesce::aosoa<8>, store<&Particle::mass, double>, store<&Particle::id, std::uint64_t>>;
using vel_half_split =
    stored_as<coalesce::split<coalesce::fields<&Particle::pos, &Particle::vel>, coalesce::aos, coalesce::soa>,
              store<&Particle::vel, coalesce::half>>;
using vel_half_user = stored_as<reversed_columns, coalesce::store_index<1, coalesce::half>>;
#define STORED_LAYOUTS vel_half_soa, vel_fixed_aos, wide_aosoa, vel_half_split, vel_half_user

std::uint16_t half_bits(float f) { return coalesce::detail::float_to_half_bits(f); }
float from_half(std::uint16_t h) { return coalesce::detail::half_bits_to_float(h); }
}  // namespace

TEST_CASE("half: every half value round-trips, and float -> half rounds to nearest even") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    float const f = from_half(static_cast<std::uint16_t>(h));
    if (f != f) {
      CHECK((half_bits(f) & 0x7c00) == 0x7c00);  // NaN stays NaN
      continue;
    }
    if (half_bits(f) != h) FAIL_CHECK("half " << h << " did not round-trip");
  }
  // Ties between neighbours go to the even one; just above a tie goes up.
  CHECK(half_bits(1.0f + 0x1p-11f) == half_bits(1.0f));                 // tie, 1.0 is even
  CHECK(half_bits(1.0f + 3 * 0x1p-11f) == half_bits(1.0f + 0x1p-9f));   // tie, rounds up to even
  CHECK(half_bits(1.0f + 0x1p-11f + 0x1p-20f) == half_bits(1.0f) + 1);  // above the tie
  CHECK(from_half(half_bits(0x1p-24f)) == 0x1p-24f);                    // smallest subnormal
  CHECK(from_half(half_bits(0x1p-26f)) == 0.0f);                        // below half of it
  CHECK(half_bits(65504.0f) == 0x7bff);
  CHECK(half_bits(65520.0f) == 0x7c00);  // the tie above the largest half: infinity
#ifdef __FLT16_MAX__
  // The compiler's _Float16 as the oracle over a million random floats of every magnitude.
  std::mt19937 rng(5);
  for (int k = 0; k < 1000000; ++k) {
    std::uint32_t const bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (f != f) continue;
    _Float16 const want = static_cast<_Float16>(f);
    std::uint16_t want_bits;
    std::memcpy(&want_bits, &want, 2);
    if (half_bits(f) != want_bits) {
      FAIL_CHECK("float bits " << bits);
      break;
    }
  }
#endif
}

TEST_CASE("bfloat16, float-for-double and fixed point round to nearest even; doubles are not rounded twice") {
  using namespace coalesce::detail;
  alignas(8) std::byte b[8];
  stored_format const bf = format_of<coalesce::bfloat16>::value;
  CHECK(encode(b, 1.0f + 0x1p-8f, bf) == encode_status::ok);  // tie: to even (1.0)
  CHECK(decode<float>(b, bf) == 1.0f);
  encode(b, 1.0f + 3 * 0x1p-8f, bf);
  CHECK(decode<float>(b, bf) == 1.0f + 0x1p-6f);
  // A double just above a half tie: float rounding alone would land on the tie and go to even.
  stored_format const h = format_of<coalesce::half>::value;
  double const above_tie = 1.0 + 0x1p-11 + 0x1p-40;
  encode(b, above_tie, h);
  CHECK(decode<double>(b, h) == 1.0 + 0x1p-10);
  stored_format const f32 = format_of<float>::value;
  encode(b, 0.1, f32);
  CHECK(decode<double>(b, f32) == static_cast<double>(0.1f));
  stored_format const fx = format_of<fixed_point<std::int32_t, 4>>::value;
  encode(b, 0.03125, fx);  // 0.5 / 16: a tie between 0 and 1/16
  CHECK(decode<double>(b, fx) == 0.0);
  encode(b, 0.09375, fx);  // 1.5 / 16: to 2/16
  CHECK(decode<double>(b, fx) == 0.125);
  encode(b, -2.5, fx);
  CHECK(decode<double>(b, fx) == -2.5);
}

TEST_CASE("a float into fixed point rounds in single precision to the integer the double path gives") {
  using namespace coalesce::detail;
  std::mt19937 rng(5);
  std::vector<float> values{0.0f,
                            -0.0f,
                            0x1p-33f,
                            0x1p-32f,
                            0x1p-33f * 3,
                            -0x1p-33f * 5,
                            1e-40f,
                            -1e-40f,
                            0.5f,
                            2.5f,
                            -2.5f,
                            3.5f,
                            2147483520.0f,
                            2147483648.0f,
                            -2147483648.0f,
                            9.2233715e18f,
                            1e30f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int k = 0; k < 200000; ++k) {
    float const v = std::bit_cast<float>(bits(rng));
    values.push_back(v);
    values.push_back(std::ldexp(std::nearbyint(std::ldexp(v, 10)) + 0.5f, -10));  // ties at 2^-10 steps
  }
  auto const same_as_double = [&](stored_format f) {
    std::size_t differ = 0;
    for (float v : values) {
      alignas(8) std::byte a[8] = {}, b[8] = {};
      encode_status const sa = encode(a, v, f);
      encode_status const sb = encode(b, static_cast<double>(v), f);
      if (sa != sb || std::memcmp(a, b, 8) != 0) ++differ;
    }
    return differ;
  };
  CHECK(same_as_double(format_of<fixed_point<std::int64_t, 32>>::value) == 0);
  CHECK(same_as_double(format_of<fixed_point<std::int64_t, 0>>::value) == 0);
  CHECK(same_as_double(format_of<fixed_point<std::int64_t, 63>>::value) == 0);
  CHECK(same_as_double(format_of<fixed_point<std::int32_t, 20>>::value) == 0);
  CHECK(same_as_double(format_of<fixed_point<std::int32_t, 10>>::value) == 0);
  CHECK(same_as_double(format_of<fixed_point<std::int32_t, 31, coalesce::saturate>>::value) == 0);
  CHECK(same_as_double(format_of<fixed_point<std::int64_t, 40, coalesce::saturate>>::value) == 0);
}

TEST_CASE("values a format cannot hold are errors, or saturate where the format says so") {
  using namespace coalesce::detail;
  alignas(8) std::byte b[8];
  CHECK(encode(b, 70000.0f, format_of<coalesce::half>::value) == encode_status::out_of_range);
  CHECK(encode(b, std::numeric_limits<float>::infinity(), format_of<coalesce::half>::value) == encode_status::ok);
  stored_format const sat = format_of<coalesce::half_format<coalesce::saturate>>::value;
  encode(b, -70000.0f, sat);
  CHECK(decode<float>(b, sat) == -65504.0f);
  stored_format const fx = format_of<fixed_point<std::int32_t, 16>>::value;
  CHECK(encode(b, 40000.0, fx) == encode_status::out_of_range);  // 2^15 = 32768 is the limit
  CHECK(encode(b, std::nan(""), fx) == encode_status::not_a_number);
  stored_format const fx_sat = format_of<fixed_point<std::int32_t, 16, coalesce::saturate>>::value;
  encode(b, 40000.0, fx_sat);
  CHECK(decode<double>(b, fx_sat) == 32768.0 - 0x1p-16);
  encode(b, -1e9, fx_sat);
  CHECK(decode<double>(b, fx_sat) == -32768.0);
  stored_format const u8 = format_of<std::uint8_t>::value;
  CHECK(encode(b, 256u, u8) == encode_status::out_of_range);
  CHECK(encode(b, -1, u8) == encode_status::out_of_range);
  CHECK(encode(b, 255u, u8) == encode_status::ok);
  stored_format const i16 = format_of<std::int16_t>::value;
  CHECK(encode(b, std::uint64_t{1} << 40, i16) == encode_status::out_of_range);
  CHECK(encode(b, -32768, i16) == encode_status::ok);
  CHECK(decode<int>(b, i16) == -32768);
  stored_format const f32 = format_of<float>::value;
  CHECK(encode(b, 1e300, f32) == encode_status::out_of_range);
}

TEST_CASE("a stored layout's record and columns take the stored bytes") {
  using half_aos = stored_as<coalesce::aos, store<&Particle::vel, coalesce::half>>;
  using S = coalesce::layout_storage<Particle, half_aos>;
  static_assert(S::converts);
  static_assert(S::leaf_bytes(3) == 2 && S::leaf_bytes(0) == 4);
  static_assert(S::shape::record_bytes == 12 + 6 + 2 + 4 + 4);  // pos, vel as half, alignment to 4, mass, id
  static_assert(S::natural(0) && !S::natural(3) && S::natural(6));
  using W = coalesce::layout_storage<Particle, wide_aosoa>;
  static_assert(W::leaf_bytes(6) == 8 && W::leaf_bytes(7) == 8);
  // The split packs pos (12 bytes) and vel as half (6 bytes) into one 32-byte slot.
  using P = coalesce::layout_storage<Particle, vel_half_split>;
  static_assert(P::mapping_type::in_shape::record_bytes == 32);
  // Analysis counts stored bytes: the record under the half aos layout is 28 bytes, not 32.
  auto const report = coalesce::analysis::layout_table<Particle, half_aos>(coalesce::analysis::device_model::hopper());
  CHECK(report.record_bytes == 28);
  CHECK(coalesce::analysis::layout_name<vel_half_split>() ==
        "stored_as<split<member_indices<0, 1>, aos, soa>, store_index<1, half>>");
  CHECK(coalesce::analysis::layout_name<wide_aosoa>() ==
        "stored_as<aosoa<8>, store_index<2, double>, store_index<3, std::uint64_t>>");
}

TEST_CASE_TEMPLATE("a stored layout's proxy reads and writes like the struct", Layout, STORED_LAYOUTS) {
  coalesce::host_vector<Particle, Layout> h(37);
  auto v = h.view();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = make_particle(i);
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto [pos, vel, mass, id] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * 2.0f;
    y += vy;
    z += vz;
    vx += 1.0f;
    mass *= 2.0f;
    id += 1;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    Particle expected = make_particle(i);
    expected.pos.x += expected.vel.x * 2.0f;
    expected.pos.y += expected.vel.y;
    expected.pos.z += expected.vel.z;
    expected.vel.x += 1.0f;
    expected.mass *= 2.0f;
    expected.id += 1;
    Particle const got = v[i];
    CHECK(same_values(got, expected));
  }
  // By member pointer and by run-time component index.
  v[3][&Particle::vel][&vec3::z] = 42.0f;
  v[3][&Particle::vel][1] = 3.5f;
  CHECK(static_cast<float>(v[3][&Particle::vel][2]) == 42.0f);
  vec3 const vel = v[3][&Particle::vel];
  CHECK(vel.y == 3.5f);
  v[4][&Particle::vel] = vel;  // nested store through the formats
  Particle const p4 = v[4];
  CHECK(p4.vel.z == 42.0f);
  CHECK(p4.pos.x == make_particle(4).pos.x + make_particle(4).vel.x * 2.0f);
}

TEST_CASE_TEMPLATE(
    "stored layouts convert to and from every layout and space, exactly where the format holds the "
    "values",
    Layout, STORED_LAYOUTS) {
  for (std::size_t n : {0u, 1u, 7u, 33u, 500u}) {
    auto const records = particles(n);
    INFO("n = " << n);
    coalesce::host_vector<Particle, Layout> h{std::span<Particle const>(records)};
    CHECK(all_same(records_of<Particle>(h), records));
    coalesce::device_vector<Particle, Layout> d = h;  // same layout, other space
    CHECK(all_same(records_of<Particle>(d), records));
    coalesce::host_vector<Particle, coalesce::aos> a = d;  // stored -> plain
    CHECK(all_same(records_of<Particle>(a), records));
    coalesce::device_vector<Particle, coalesce::aosoa<6>> b = h;
    coalesce::device_vector<Particle, Layout> back = b;  // plain -> stored on the device
    CHECK(all_same(records_of<Particle>(back), records));
    coalesce::host_vector<Particle, vel_fixed_aos> other = back;  // stored -> another stored format
    CHECK(all_same(records_of<Particle>(other), records));
    coalesce::host_vector<Particle, Layout> filled(n, make_particle(9));
    for (auto const& p : records_of<Particle>(filled)) CHECK(same_values(p, make_particle(9)));
  }
}

TEST_CASE_TEMPLATE("vectors of stored layouts grow, shrink and push back", Layout, STORED_LAYOUTS) {
  auto want = particles(33);
  coalesce::host_vector<Particle, Layout> v{std::span<Particle const>(want)};
  v.reserve(100);
  v.resize(40, make_particle(7));
  want.resize(40, make_particle(7));
  CHECK(all_same(records_of<Particle>(v), want));
  v.push_back(make_particle(11));
  want.push_back(make_particle(11));
  CHECK(all_same(records_of<Particle>(v), want));
  v.resize(5);
  want.resize(5);
  v.shrink_to_fit();
  CHECK(all_same(records_of<Particle>(v), want));
}

TEST_CASE_TEMPLATE("sort_by_key and apply move the stored bytes: every record follows its key", Layout,
                   STORED_LAYOUTS) {
  std::mt19937 rng(3);
  coalesce::reorder_plan plan;
  for (std::size_t n : {0u, 1u, 9u, 333u}) {
    auto const records = particles(n);
    coalesce::device_vector<Particle, Layout> v{std::span<Particle const>(records)};
    coalesce::device_vector<Particle, Layout> companion = v;
    std::vector<std::uint32_t> keys(n);
    for (auto& k : keys) k = rng() % 17;
    space_array<std::uint32_t, coalesce::device> device_keys(keys);
    coalesce::sort_by_key(v, std::span<std::uint32_t const>(device_keys.data(), n), plan);
    coalesce::apply(plan, companion);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    std::vector<Particle> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = records[order[i]];
    INFO("n = " << n);
    CHECK(all_same(records_of<Particle>(v), want));
    CHECK(all_same(records_of<Particle>(companion), want));
  }
}

TEST_CASE("a conversion into a format that cannot hold a value names the element and the member, and throws") {
  auto records = particles(20);
  records[13].vel.y = 1e6f;  // beyond half
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  using vel_half = stored_as<coalesce::soa, store<&Particle::vel, coalesce::half>>;
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Particle, vel_half>(plain)),
                       doctest::Contains("element 13's leaf 4 (member 1.1) cannot be stored as half"), coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Particle, vel_half>(plain)), doctest::Contains("element 13"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Particle, vel_half>(3, records[13])), doctest::Contains("half"),
                       coalesce::error);
  coalesce::host_vector<Particle, vel_half> h(4);
  CHECK_THROWS_WITH_AS(h.view()[2][&Particle::vel][&vec3::x] = 1e9f, doctest::Contains("stored as half"),
                       coalesce::error);
  // Saturation where chosen.
  using vel_saturated = stored_as<coalesce::soa, store<&Particle::vel, coalesce::half_format<coalesce::saturate>>>;
  coalesce::host_vector<Particle, vel_saturated> s{plain};
  Particle const p = s.view()[13];
  CHECK(p.vel.y == 65504.0f);
  // A NaN into fixed point.
  records[13].vel.y = std::nanf("");
  coalesce::host_vector<Particle> with_nan{std::span<Particle const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Particle, vel_fixed_aos>(with_nan)),
                       doctest::Contains("fixed_point<std::int32_t, 8>"), coalesce::error);
}

TEST_CASE("half velocities: the error of a round trip is at most half a unit in the last place") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> speed(-300.0f, 300.0f);
  std::vector<Particle> records(4096);
  for (auto& p : records) p.vel = {speed(rng), speed(rng), speed(rng)};
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, vel_half_soa> h = plain;
  auto const back = records_of<Particle>(h);
  for (std::size_t i = 0; i < records.size(); ++i) {
    float const want[3] = {records[i].vel.x, records[i].vel.y, records[i].vel.z};
    float const got[3] = {back[i].vel.x, back[i].vel.y, back[i].vel.z};
    for (int d = 0; d < 3; ++d) {
      float const ulp = std::ldexp(1.0f, std::ilogb(want[d]) - 10);
      if (std::fabs(got[d] - want[d]) > 0.5f * ulp) FAIL_CHECK("element " << i << " component " << d);
    }
  }
}

namespace {
struct Body {
  vec3 pos;
  vec3 force;
  double energy;
};
using summed = stored_as<coalesce::soa, store<&Body::force, fixed_point<std::int64_t, 32>>,
                         store<&Body::energy, fixed_point<std::int64_t, 32>>>;
struct sum_inputs {
  std::vector<vec3> addends;
  std::vector<std::size_t> forward, shuffled;
};
sum_inputs make_sum_inputs(std::size_t adds) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  sum_inputs in;
  in.addends.resize(adds);
  for (auto& a : in.addends) a = {value(rng), value(rng) * 1e-3f, value(rng) * 1e3f};
  in.forward.resize(adds);
  std::iota(in.forward.begin(), in.forward.end(), std::size_t{0});
  in.shuffled = in.forward;
  std::shuffle(in.shuffled.begin(), in.shuffled.end(), rng);
  return in;
}
}  // namespace

TEST_CASE("fixed-point sums through atomic_add are bit-identical in any order, and exact sums of rounded addends") {
  std::size_t const targets = 16;
  auto const in = make_sum_inputs(200000);
  auto run = [&](std::vector<std::size_t> const& order) {
    coalesce::host_vector<Body, summed> bodies(targets);
    auto v = bodies.view();
    for (std::size_t i : order) {
      coalesce::atomic_add(v[i % targets][&Body::force], in.addends[i]);
      coalesce::atomic_add(v[i % targets][&Body::energy], static_cast<double>(in.addends[i].x));
    }
    return records_of<Body>(bodies);
  };
  auto const a = run(in.forward), b = run(in.shuffled);
  for (std::size_t t = 0; t < targets; ++t) CHECK(std::memcmp(&a[t], &b[t], sizeof(Body)) == 0);
  // The sum of the addends rounded to 2^-32 each, against a double sum.
  double exact = 0;
  for (std::size_t i = 0; i < in.addends.size(); i += targets) exact += in.addends[i].x;
  CHECK(std::fabs(a[0].energy - exact) <= static_cast<double>(in.addends.size() / targets) * 0x1p-33 + 1e-9);
}

#if !COALESCE_WITH_CUDA  // with CUDA, device loops are GPU kernels: tests/gpu/stored_as_test.cu covers them
TEST_CASE("fixed-point sums from racing threads (OpenMP) are bit-identical run to run and order to order") {
  std::size_t const targets = 16;
  auto const in = make_sum_inputs(200000);
  std::vector<std::vector<Body>> runs;
  for (int r = 0; r < 4; ++r) {
    auto const& order = r % 2 == 0 ? in.forward : in.shuffled;
    coalesce::device_vector<Body, summed> bodies(targets);
    auto v = bodies.view();
    vec3 const* values = in.addends.data();
    std::size_t const* o = order.data();
    coalesce::for_each_index(coalesce::device{}, order.size(), [=](std::size_t k) {
      std::size_t const i = o[k];
      coalesce::atomic_add(v[i % targets][&Body::force], values[i]);
      coalesce::atomic_add(v[i % targets][&Body::energy], static_cast<double>(values[i].x));
    });
    coalesce::synchronize(coalesce::device{});
    runs.push_back(records_of<Body>(bodies));
  }
  for (int r = 1; r < 4; ++r)
    for (std::size_t t = 0; t < targets; ++t) CHECK(std::memcmp(&runs[0][t], &runs[r][t], sizeof(Body)) == 0);
}
#endif

TEST_CASE("a fixed_sum is the same integers in any order, and atomic_add adds them exactly") {
  using sum = coalesce::fixed_sum<vec3, fixed_point<std::int64_t, 32>>;
  auto const in = make_sum_inputs(5000);
  sum a, b;
  for (std::size_t i : in.forward) a += in.addends[i];
  for (std::size_t i : in.shuffled) b += in.addends[i];
  for (std::size_t k = 0; k < 3; ++k) CHECK(a.raw(k) == b.raw(k));
  // The same as adding each addend to the member on its own.
  coalesce::host_vector<Body, summed> one_by_one(1), at_once(1);
  for (std::size_t i : in.forward) coalesce::atomic_add(one_by_one.view()[0][&Body::force], in.addends[i]);
  coalesce::atomic_add(at_once.view()[0][&Body::force], b);
  Body const x = one_by_one.view()[0], y = at_once.view()[0];
  CHECK(std::memcmp(&x.force, &y.force, sizeof(vec3)) == 0);
  vec3 const value = a.value();
  CHECK(value.x == x.force.x);
  // Into a float member: the decoded sum, added as a float.
  coalesce::host_vector<Body> plain(1);
  coalesce::atomic_add(plain.view()[0][&Body::force], a);
  Body const z = plain.view()[0];
  CHECK(z.force.y == value.y);
}

TEST_CASE("atomic_add into a member stored as half is refused") {
  coalesce::host_vector<Particle, vel_half_soa> h(2);
  CHECK_THROWS_WITH_AS(coalesce::atomic_add(h.view()[0][&Particle::vel], vec3{1, 2, 3}),
                       doctest::Contains("atomic_add into a member stored as half"), coalesce::error);
}

TEST_CASE("keys, columns and MPI-free algorithms refuse positions or columns stored in another format") {
  using pos_half = stored_as<coalesce::soa, store<&Particle::pos, coalesce::half>>;
  coalesce::host_vector<Particle, pos_half> h{std::span<Particle const>(particles(10))};
  coalesce::reorder_plan plan;
  coalesce::box const b{{-100, -100, -100}, {100, 100, 100}};
  CHECK_THROWS_WITH_AS(static_cast<void>(coalesce::morton_keys(h, &Particle::pos, b, plan)),
                       doctest::Contains("stored as half"), coalesce::error);
  CHECK_THROWS_WITH_AS(h.view().column(&Particle::pos, &vec3::x), doctest::Contains("stored in another format"),
                       coalesce::error);
  CHECK(static_cast<float>(h.view().column(&Particle::mass)[3]) == make_particle(3).mass);
}

TEST_CASE("the advisor counts a stored layout at its stored bytes and prints a type that compiles") {
  namespace ca = coalesce::analysis;
  std::vector<Particle> sample = particles(4096);
  auto const step = ca::count_accesses<Particle>("step", sample, [](auto v, std::size_t i) {
    auto [pos, vel, mass, id] = v[i];
    vec3 p = pos;
    vec3 const u = vel;
    p.x += u.x, p.y += u.y, p.z += u.z;
    pos = p;
  });
  ca::advice const a = ca::advise<Particle, vel_half_soa>({{step, 1.0}});
  double soa_bytes = 0, half_bytes = 0;
  for (auto const& c : a.ranking) {
    if (c.layout == "soa") soa_bytes = c.weighted_bytes_per_thread;
    if (c.layout == "stored_as<soa, store_index<1, half>>") half_bytes = c.weighted_bytes_per_thread;
  }
  CHECK(soa_bytes == doctest::Approx(36.0));
  CHECK(half_bytes == doctest::Approx(30.0));  // 12 + 6 read, 12 written
}

// std::array members stored in another format: each element of the array in the format, v[i]'s
// array member a converting reference per element, every copy and fill per sub-column.
namespace {
struct Spectrum {
  vec3 pos;
  std::array<float, 5> bins;           // stored as half
  std::array<std::int32_t, 3> counts;  // stored as 16-bit integers
  std::uint32_t id;
};
Spectrum make_spectrum(std::size_t i) {
  Spectrum s{};
  s.pos = {static_cast<float>(i), 0.5f * static_cast<float>(i), -1.0f};
  for (std::size_t k = 0; k < s.bins.size(); ++k)
    s.bins[k] = 0.25f * static_cast<float>(i % 64) - static_cast<float>(k);
  for (std::size_t k = 0; k < s.counts.size(); ++k) s.counts[k] = static_cast<std::int32_t>(i * 3 + k) - 100;
  s.id = static_cast<std::uint32_t>(i);
  return s;
}
bool same_spectrum(Spectrum const& a, Spectrum const& b) {
  return a.pos.x == b.pos.x && a.pos.y == b.pos.y && a.pos.z == b.pos.z && a.bins == b.bins && a.counts == b.counts &&
         a.id == b.id;
}
std::size_t wrong_spectra(std::vector<Spectrum> const& got, std::vector<Spectrum> const& want) {
  if (got.size() != want.size()) return std::max(got.size(), want.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += !same_spectrum(got[i], want[i]);
  return wrong;
}
template <class Inner> using lean_spectrum =
    stored_as<Inner, store<&Spectrum::bins, coalesce::half>, store<&Spectrum::counts, std::int16_t>>;
using spectrum_soa = lean_spectrum<coalesce::soa>;
using spectrum_aos = lean_spectrum<coalesce::aos>;
using spectrum_aosoa = lean_spectrum<coalesce::aosoa<8>>;
using spectrum_split =
    lean_spectrum<coalesce::split<coalesce::fields<&Spectrum::pos, &Spectrum::bins>, coalesce::aos, coalesce::soa>>;
using spectrum_user = lean_spectrum<reversed_columns>;
#define SPECTRUM_LAYOUTS spectrum_soa, spectrum_aos, spectrum_aosoa, spectrum_split, spectrum_user
}  // namespace

TEST_CASE("a std::array member stored in another format takes that format's bytes per element") {
  using S = coalesce::layout_storage<Spectrum, spectrum_aos>;
  static_assert(S::converts && S::natural(0) && !S::natural(3) && !S::natural(4) && S::natural(5));
  static_assert(S::leaf_bytes(3) == 2 && S::leaf_bytes(4) == 2);
  static_assert(S::shape::leaves[3].extent == 5 && S::shape::leaves[4].extent == 3);
  static_assert(S::shape::record_bytes == 12 + 10 + 6 + 4);  // pos, 5 halves, 3 int16, id: 32 bytes, not 48
  auto const report =
      coalesce::analysis::layout_table<Spectrum, spectrum_aos>(coalesce::analysis::device_model::hopper());
  CHECK(report.record_bytes == 32);
}

TEST_CASE_TEMPLATE("std::array members stored as half and int16: the proxy converts element by element", Layout,
                   SPECTRUM_LAYOUTS) {
  std::size_t const n = 41;
  coalesce::host_vector<Spectrum, Layout> h(n);
  auto v = h.view();
  for (std::size_t i = 0; i < n; ++i) v[i] = make_spectrum(i);
  for (std::size_t i = 0; i < n; ++i) CHECK(same_spectrum(v[i], make_spectrum(i)));
  // Element k by index, by structured binding, whole arrays in and out.
  v[3][&Spectrum::bins][2] = 1.5f;
  v[3][&Spectrum::counts][0] += 7;
  auto [pos, bins, counts, id] = v[4];
  bins[4] = -2.25f;
  counts[2] = -32768;
  CHECK(static_cast<float>(v[3][&Spectrum::bins][2]) == 1.5f);
  CHECK(static_cast<std::int32_t>(v[3][&Spectrum::counts][0]) == make_spectrum(3).counts[0] + 7);
  std::array<float, 5> const got_bins = v[4][&Spectrum::bins];
  CHECK(got_bins[4] == -2.25f);
  CHECK(got_bins[0] == make_spectrum(4).bins[0]);
  std::array<std::int32_t, 3> const got_counts = counts;
  CHECK(got_counts[2] == -32768);
  v[5][&Spectrum::bins] = std::array<float, 5>{1, 2, 3, 4, 5};
  Spectrum const s5 = v[5];
  CHECK(s5.bins == std::array<float, 5>{1, 2, 3, 4, 5});
  CHECK(s5.id == 5);
  // A value the format cannot hold: refused where the member is written.
  CHECK_THROWS_WITH_AS(v[6][&Spectrum::bins][1] = 1e6f, doctest::Contains("stored as half"), coalesce::error);
  CHECK_THROWS_WITH_AS(v[6][&Spectrum::counts][2] = 40000, doctest::Contains("int16"), coalesce::error);
  CHECK(same_spectrum(v[6], make_spectrum(6)));  // nothing written
}

TEST_CASE_TEMPLATE("std::array members stored in another format convert, fill, grow and sort exactly", Layout,
                   SPECTRUM_LAYOUTS) {
  for (std::size_t n : {0u, 1u, 9u, 70u}) {
    INFO("n = " << n);
    std::vector<Spectrum> records(n);
    for (std::size_t i = 0; i < n; ++i) records[i] = make_spectrum(i);
    coalesce::host_vector<Spectrum, Layout> h{std::span<Spectrum const>(records)};
    CHECK(wrong_spectra(records_of<Spectrum>(h), records) == 0);
    coalesce::device_vector<Spectrum, Layout> d = h;
    CHECK(wrong_spectra(records_of<Spectrum>(d), records) == 0);
    coalesce::host_vector<Spectrum, coalesce::aos> plain = d;  // stored -> plain
    CHECK(wrong_spectra(records_of<Spectrum>(plain), records) == 0);
    coalesce::device_vector<Spectrum, coalesce::soa> plain_soa = plain;
    coalesce::device_vector<Spectrum, Layout> back = plain_soa;  // plain -> stored
    CHECK(wrong_spectra(records_of<Spectrum>(back), records) == 0);
    coalesce::host_vector<Spectrum, spectrum_aosoa> other = back;  // stored -> stored, other mapping
    CHECK(wrong_spectra(records_of<Spectrum>(other), records) == 0);
    // Fills: each element of the array its own value.
    coalesce::host_vector<Spectrum, Layout> filled(n, make_spectrum(11));
    CHECK(wrong_spectra(records_of<Spectrum>(filled), std::vector<Spectrum>(n, make_spectrum(11))) == 0);
    filled.resize(n + 5, make_spectrum(12));
    auto const grown = records_of<Spectrum>(filled);
    REQUIRE(grown.size() == n + 5);
    CHECK(same_spectrum(grown[n + 4], make_spectrum(12)));
    // sort_by_key moves every sub-column's stored bytes.
    coalesce::reorder_plan plan;
    std::vector<std::uint32_t> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<std::uint32_t>((i * 7919) % 13);
    space_array<std::uint32_t, coalesce::device> device_keys(keys);
    coalesce::sort_by_key(back, std::span<std::uint32_t const>(device_keys.data(), n), plan);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    std::vector<Spectrum> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = records[order[i]];
    CHECK(wrong_spectra(records_of<Spectrum>(back), want) == 0);
  }
}

TEST_CASE("a std::array element a format cannot hold names the element and the leaf, in conversions and fills") {
  std::vector<Spectrum> records(20);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_spectrum(i);
  records[13].bins[3] = 1e6f;  // beyond half
  coalesce::host_vector<Spectrum> plain{std::span<Spectrum const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Spectrum, spectrum_soa>(plain)),
                       doctest::Contains("element 13's leaf 3 (member 1) cannot be stored as half"), coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Spectrum, spectrum_aos>(plain)), doctest::Contains("element 13"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Spectrum, spectrum_aosoa>(3, records[13])), doctest::Contains("half"),
                       coalesce::error);
  records[13].bins[3] = 0;
  records[13].counts[1] = 1 << 20;  // beyond int16
  coalesce::host_vector<Spectrum> plain2{std::span<Spectrum const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Spectrum, spectrum_soa>(plain2)),
                       doctest::Contains("element 13's leaf 4 (member 2)"), coalesce::error);
  // Saturation where chosen, element by element.
  records[13].bins[3] = 1e6f;
  coalesce::host_vector<Spectrum> plain3{std::span<Spectrum const>(records)};
  using saturated = stored_as<coalesce::soa, store<&Spectrum::bins, coalesce::half_format<coalesce::saturate>>>;
  coalesce::host_vector<Spectrum, saturated> s{plain3};
  Spectrum const got = s.view()[13];
  CHECK(got.bins[3] == 65504.0f);
  CHECK(got.bins[2] == records[13].bins[2]);
}

namespace {
struct LongSpectrum {
  std::array<float, 40> bins;  // 40 sub-columns stored as half
  std::array<float, 3> plain;  // kept as float
  std::uint32_t id;
};
using long_half = stored_as<coalesce::soa, store<&LongSpectrum::bins, coalesce::half>>;
LongSpectrum make_long(std::size_t i) {
  LongSpectrum s{};
  for (std::size_t k = 0; k < s.bins.size(); ++k) s.bins[k] = 0.5f * static_cast<float>(k) + static_cast<float>(i % 8);
  s.plain = {static_cast<float>(i), 1.0f / 3.0f, -2.0f};
  s.id = static_cast<std::uint32_t>(i);
  return s;
}
bool same_long(LongSpectrum const& a, LongSpectrum const& b) {
  return a.bins == b.bins && a.plain == b.plain && a.id == b.id;
}
}  // namespace

TEST_CASE("a long std::array member stored as half converts to every layout; plain arrays stay references") {
  std::size_t const n = 77;
  std::vector<LongSpectrum> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_long(i);
  coalesce::host_vector<LongSpectrum, long_half> h{std::span<LongSpectrum const>(records)};
  coalesce::device_vector<LongSpectrum, coalesce::aos> a = h;
  coalesce::device_vector<LongSpectrum, coalesce::aosoa<8>> b = a;
  coalesce::device_vector<LongSpectrum, long_half> back = b;
  auto const got = records_of<LongSpectrum>(back);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += !same_long(got[i], records[i]);
  CHECK(wrong == 0);
  auto v = h.view();
  // An array this layout keeps as float is a plain array reference, by member pointer too.
  float& p1 = v[3][&LongSpectrum::plain][1];
  p1 = 9.0f;
  CHECK(static_cast<LongSpectrum>(v[3]).plain[1] == 9.0f);
  // A whole array with one element the format cannot hold: refused, nothing written.
  std::array<float, 40> wide = records[4].bins;
  wide[39] = 1e6f;
  CHECK_THROWS_WITH_AS(v[4][&LongSpectrum::bins] = wide, doctest::Contains("stored as half"), coalesce::error);
  std::array<float, 40> const kept = v[4][&LongSpectrum::bins];
  CHECK(kept == records[4].bins);
}
