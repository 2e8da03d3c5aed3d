// Float columns into and out of 4-byte stored numbers (fixed_point<std::int32_t, F>, box_fixed): on
// the GPU contiguous columns go four elements per thread (number_columns_kernel), the last n % 4
// one by one. Whatever the path, the stored words are the host conversion's bit for bit, at every
// tail length, and a value a format cannot hold is named by element and leaf in a whole quad and
// in the tail (or clamped where the format saturates).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace {

using coalesce_test::Particle;
using coalesce_test::same_bytes;
using coalesce_test::vec3;

using coalesce::box_fixed;
using coalesce::fixed_point;
using coalesce::store;
using coalesce::stored_as;
// vel as half beside: number columns and half columns in the same launch.
using fixed_soa = stored_as<coalesce::soa, store<&Particle::pos, fixed_point<std::int32_t, 20>>,
                            store<&Particle::vel, coalesce::half>>;
using fixed_clamped =
    stored_as<coalesce::soa, store<&Particle::pos, fixed_point<std::int32_t, 20, coalesce::saturate>>>;
using box_soa = stored_as<coalesce::soa, store<&Particle::pos, box_fixed<>>>;
using wrapped_soa = stored_as<coalesce::soa, store<&Particle::pos, box_fixed<coalesce::wrap>>>;
using box_clamped = stored_as<coalesce::soa, store<&Particle::pos, box_fixed<coalesce::saturate>>>;

// Not a power of two along y and z: the step is no power of two, so the division rounds. Along x
// the step is 2^-29 and (k + 1/2) steps are floats: step counts that are ties.
coalesce::box const box{.lo = {0.0, 0.0, 16.0}, .hi = {8.0, 10.0, 39.0}};

// Coordinates anywhere in the box (its edges, the last float below hi, half steps, values off the grid),
// and for wrap also past its faces; velocities a half holds up to rounding.
std::vector<Particle> bodies(std::size_t n, bool outside) {
  std::mt19937 rng(static_cast<unsigned>(n));
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    float c[3];
    for (int a = 0; a < 3; ++a) {
      auto const lo = static_cast<float>(box.lo[a]), hi = static_cast<float>(box.hi[a]);
      float const width = outside ? 3 * (hi - lo) : hi - lo;
      float const start = outside ? lo - (hi - lo) : lo;
      switch ((i + static_cast<std::size_t>(a)) % 7) {
        case 0:
          c[a] = lo;
          break;
        case 1:
          c[a] = std::nextafter(hi, lo);
          break;
        case 2:  // half a step past a step: a tie along x, near one along y and z
          c[a] = lo + (static_cast<float>(i % 5) + 0.5f) * static_cast<float>((box.hi[a] - box.lo[a]) * 0x1p-32);
          break;
        default:
          c[a] = start + std::uniform_real_distribution<float>(0.0f, 1.0f)(rng) * width;
          break;
      }
      if (!outside) c[a] = std::fmin(c[a], std::nextafter(hi, lo));
    }
    out[i] = {
        {c[0], c[1], c[2]}, {0.25f * static_cast<float>(i % 9), -1.0f, 3.0f}, 1.0f, static_cast<std::uint32_t>(i)};
  }
  return out;
}

// The stored words of a host vector's positions, element by element.
template <class Layout> std::vector<std::uint32_t> words_of(coalesce::host_vector<Particle, Layout> const& v) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto const p = v.view()[i][&Particle::pos];
    for (auto const& at : {p[&vec3::x].address(), p[&vec3::y].address(), p[&vec3::z].address()}) {
      std::uint32_t w;
      std::memcpy(&w, at, sizeof w);
      out.push_back(w);
    }
  }
  return out;
}

// Host and device conversions of the same records: the same words, the same floats back.
template <class Layout, class Vector> Vector empty_vector() {
  if constexpr (std::is_constructible_v<Vector, coalesce::box const&>) {
    return Vector(box);
  } else {
    return Vector();
  }
}

// Host and device conversions of the same records: the same words, the same floats back.
template <class Layout> void same_as_host(std::vector<Particle> const& records) {
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle> on_device{std::span<Particle const>(records)};
  auto h = empty_vector<Layout, coalesce::host_vector<Particle, Layout>>();
  auto d = empty_vector<Layout, coalesce::device_vector<Particle, Layout>>();
  h.assign(plain);
  d.assign(on_device);
  coalesce::host_vector<Particle, Layout> d_words = d;  // the same layout: the words copied as they are
  CHECK(words_of(d_words) == words_of(h));
  coalesce::device_vector<Particle> back = d;  // read on the GPU
  CHECK(same_bytes(coalesce_test::records_of(back), coalesce_test::records_of(h)));
}

}  // namespace

TEST_CASE("float columns into and out of 4-byte stored numbers: the host's words at every tail length") {
  for (std::size_t n : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 4099u}) {
    INFO("n = " << n);
    same_as_host<fixed_soa>(bodies(n, false));
    same_as_host<fixed_clamped>(bodies(n, true));
    same_as_host<box_soa>(bodies(n, false));
    same_as_host<wrapped_soa>(bodies(n, true));
    same_as_host<box_clamped>(bodies(n, true));
  }
}

TEST_CASE("a float a 4-byte stored number cannot hold is named, in a whole quad and in the tail") {
  for (std::size_t bad : {5u, 4098u}) {  // 4099 elements: 4098 lies past the last whole quad
    INFO("element " << bad);
    auto records = bodies(4099, false);
    std::string const leaf = "element " + std::to_string(bad) + "'s leaf 1";
    for (float const value : {5000.0f, std::numeric_limits<float>::quiet_NaN()}) {  // 2^11 = 2048 is the limit
      records[bad].pos.y = value;
      coalesce::device_vector<Particle> plain{std::span<Particle const>(records)};
      CHECK_THROWS_WITH_AS((coalesce::device_vector<Particle, fixed_soa>(plain)), doctest::Contains(leaf.c_str()),
                           coalesce::error);
      coalesce::device_vector<Particle, box_soa> boxed(box);
      CHECK_THROWS_WITH_AS(boxed.assign(plain), doctest::Contains(leaf.c_str()), coalesce::error);
    }
    records[bad].pos.y = 5000.0f;
    coalesce::device_vector<Particle> plain{std::span<Particle const>(records)};
    coalesce::device_vector<Particle, fixed_clamped> fixed = plain;
    CHECK(coalesce_test::records_of(fixed)[bad].pos.y == 2048.0f - 0x1p-20f);
    coalesce::device_vector<Particle, box_clamped> boxed(box);
    boxed.assign(plain);
    CHECK(coalesce_test::records_of(boxed)[bad].pos.y == std::nextafter(10.0f, 0.0f));
  }
}
