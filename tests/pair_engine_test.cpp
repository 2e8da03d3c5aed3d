// coalesce::compute_pairs (neighbors/pair_engine.hpp): forces, energy and virial of a pair law
// over every list format, full and half, two particle types, periodic and open boxes, two layouts,
// against an O(N^2) double-precision reference within float rounding; a list of the user's own;
// bad input (a type outside the table, a pair not given, a position that is not finite) throws and
// writes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using coalesce_test::vec3;
using namespace coalesce_test::neighbor_cases;

namespace {

// Lennard-Jones with a per-pair epsilon and sigma^2: the pair law a user writes once.
struct lennard_jones {
  struct param_type {
    float epsilon, sigma2;
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const s2 = q.sigma2 / r2, s6 = s2 * s2 * s2;
    return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) / r2, 4.f * q.epsilon * s6 * (s6 - 1.f)};
  }
};

// Two types (the member id, 0 or 1), their cutoffs different.
coalesce::pair_table<lennard_jones::param_type> two_types() {
  coalesce::pair_table<lennard_jones::param_type> t(2);
  t.set(0, 0, {1.0f, 1.0f}, 2.5);
  t.set(0, 1, {0.8f, 1.21f}, 2.2);
  t.set(1, 1, {1.3f, 0.81f}, 2.0);
  return t;
}

struct reference {
  std::vector<std::array<double, 3>> force;
  double energy = 0, virial = 0;
};

// Every pair once, in double, minimum image along periodic axes.
reference brute_force_forces(std::vector<Particle> const& p, coalesce::box const& b,
                             coalesce::pair_table<lennard_jones::param_type> const& table) {
  reference r;
  r.force.assign(p.size(), {0, 0, 0});
  bool const periodic = b.edges == coalesce::boundary::periodic;
  for (std::size_t i = 0; i < p.size(); ++i) {
    for (std::size_t j = i + 1; j < p.size(); ++j) {
      double d[3] = {double(p[i].pos.x) - p[j].pos.x, double(p[i].pos.y) - p[j].pos.y, double(p[i].pos.z) - p[j].pos.z};
      for (int a = 0; a < 3; ++a) {
        double const l = b.hi[a] - b.lo[a];
        if (periodic) d[a] -= l * std::round(d[a] / l);
      }
      double const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      std::size_t const ti = p[i].id, tj = p[j].id;
      if (!(r2 < table.cutoff2(ti, tj))) continue;
      auto const q = table.param(ti, tj);
      double const s2 = q.sigma2 / r2, s6 = s2 * s2 * s2;
      double const f = 24.0 * q.epsilon * s6 * (2.0 * s6 - 1.0) / r2;
      for (int a = 0; a < 3; ++a) {
        r.force[i][a] += f * d[a];
        r.force[j][a] -= f * d[a];
      }
      r.energy += 4.0 * q.epsilon * s6 * (s6 - 1.0);
      r.virial += f * r2;
    }
  }
  return r;
}

// Particles no closer than 0.85 (a liquid's spacing: no pair deep in the repulsive wall), types
// 0 and 1 alternating.
std::vector<Particle> liquid(std::size_t n, float length, unsigned seed) {
  std::vector<Particle> out;
  auto candidates = random_particles(20 * n, 0.f, length, seed);
  for (auto const& c : candidates) {
    bool far = true;
    for (auto const& q : out) {
      float d2 = 0;
      for (float d : {c.pos.x - q.pos.x, c.pos.y - q.pos.y, c.pos.z - q.pos.z}) {
        d -= length * std::round(d / length);
        d2 += d * d;
      }
      far = far && d2 > 0.85f * 0.85f;
    }
    if (!far) continue;
    out.push_back(c);
    out.back().id = static_cast<std::uint32_t>(out.size() % 2);
    out.back().vel = {7, 7, 7};  // the force member: overwritten
    if (out.size() == n) break;
  }
  return out;
}

double largest_force(reference const& r) {
  double m = 0;
  for (auto const& f : r.force)
    for (double c : f) m = std::max(m, std::abs(c));
  return m;
}

template <class Format, class Layout> void check_against_reference(coalesce::box const& b, bool half) {
  CAPTURE(half);
  CAPTURE(b.edges == coalesce::boundary::periodic);
  auto p = liquid(400, 9.f, 5);
  if constexpr (coalesce::detail::list_format_ops<Format>::tests_candidates) {  // clusters want a spatial order
    p = spatially_sorted(std::move(p));
  }
  auto const table = two_types();
  reference const expected = brute_force_forces(p, b, table);
  coalesce::vector<Particle, Layout, coalesce::host> v(p);
  coalesce::verlet_list<Format, coalesce::host> list({.cutoff = table.largest_cutoff(), .skin = 0.3, .half = half});
  list.build(v, &Particle::pos, b);
  // both forms: members as function arguments (soa), as template arguments (aos)
  coalesce::pair_totals totals;
  if constexpr (std::is_same_v<Layout, coalesce::aos>) {
    totals = coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(
        v, list.view(v), b, lennard_jones{}, table, {.energy = true, .virial = true});
  } else {
    totals = coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b, lennard_jones{},
                                     table, {.energy = true, .virial = true});
  }
  std::vector<Particle> got(p.size());
  v.copy_to(std::span<Particle>(got));
  // Float arithmetic over ~40 pairs per particle: a few float roundings of the largest force.
  double const tolerance = 1e-5 * largest_force(expected) + 1e-4;
  double worst = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - expected.force[i][a]));
    CHECK(got[i].pos.x == p[i].pos.x);  // positions untouched
  }
  CHECK(worst <= tolerance);
  CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
  CHECK(totals.virial == doctest::Approx(expected.virial).epsilon(1e-5));
}

}  // namespace

TEST_CASE_TEMPLATE(
    "compute_pairs: every format, full and half, periodic and open, two types, against O(N^2) "
    "double precision",
    Format, coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters,
    coalesce::cluster_pairs) {
  for (bool const half : {false, true}) {
    check_against_reference<Format, coalesce::soa>(coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}}, half);
    check_against_reference<Format, coalesce::aos>(
        coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}, .edges = coalesce::boundary::open}, half);
  }
}

TEST_CASE("compute_pairs: sums off cost nothing and read as zero; one type without a type member") {
  auto const p = liquid(200, 7.f, 9);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {7, 7, 7}};
  coalesce::pair_table<lennard_jones::param_type> one(1);
  one.set(0, 0, {1.f, 1.f}, 2.5);
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::csr, coalesce::host> list({.cutoff = 2.5, .skin = 0.3});
  list.build(v, &Particle::pos, b);
  auto const forces_only =
      coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, list.view(v), b, lennard_jones{}, one);
  CHECK(forces_only.energy == 0);
  CHECK(forces_only.virial == 0);
  std::vector<Particle> all_type_zero = p;
  for (auto& q : all_type_zero) q.id = 0;
  reference const expected = brute_force_forces(all_type_zero, b, one);
  std::vector<Particle> got(p.size());
  v.copy_to(std::span<Particle>(got));
  for (std::size_t i = 0; i < p.size(); ++i) {
    CHECK(got[i].vel.x == doctest::Approx(expected.force[i][0]).epsilon(1e-4).scale(largest_force(expected)));
  }
  // A table of two types needs the type member.
  CHECK_THROWS_WITH_AS(
      coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, list.view(v), b, lennard_jones{}, two_types()),
      doctest::Contains("give the member that holds each particle's type"), coalesce::error);
}

TEST_CASE("compute_pairs over a list of the user's own, full and half (pair_options::half)") {
  auto const p = liquid(150, 6.f, 3);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  auto const table = two_types();
  reference const expected = brute_force_forces(p, b, table);
  for (bool const half : {false, true}) {
    CAPTURE(half);
    rows_t const rows = brute_force(p, b, {true, true, true}, 2.8, half);
    std::vector<std::uint32_t> entries, offsets{0};
    for (auto const& r : rows) {
      entries.insert(entries.end(), r.begin(), r.end());
      offsets.push_back(static_cast<std::uint32_t>(entries.size()));
    }
    coalesce::host_csr_neighbor_list<std::uint32_t> const mine{
        .indices = entries.data(), .offsets = offsets.data(), .particles = p.size()};
    coalesce::host_vector<Particle> v(p);
    auto const totals = coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, mine, b,
                                                lennard_jones{}, table, {.energy = true, .half = half});
    CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
    std::vector<Particle> got(p.size());
    v.copy_to(std::span<Particle>(got));
    double worst = 0;
    for (std::size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::abs(got[i].vel.y - expected.force[i][1]));
    CHECK(worst <= 1e-5 * largest_force(expected) + 1e-4);
  }
}

TEST_CASE("compute_pairs refuses bad input and writes nothing") {
  auto p = liquid(100, 6.f, 4);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  auto const table = two_types();
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> list({.cutoff = 2.5, .skin = 0.3});
  auto const unchanged = [&](coalesce::host_vector<Particle> const& v) {
    std::vector<Particle> got(p.size());
    v.copy_to(std::span<Particle>(got));
    for (auto const& q : got) {
      if (q.vel.x != 7 || q.vel.y != 7 || q.vel.z != 7) return false;
    }
    return true;
  };
  {
    auto q = p;
    q[17].id = 2;  // outside the table's two types
    coalesce::host_vector<Particle> v(q);
    list.build(v, &Particle::pos, b);
    CHECK_THROWS_WITH_AS(coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                                 lennard_jones{}, table),
                         doctest::Contains("particle 17 has type 2"), coalesce::error);
    CHECK(unchanged(v));
  }
  {
    coalesce::host_vector<Particle> v(p);
    list.build(v, &Particle::pos, b);
    coalesce::pair_table<lennard_jones::param_type> partial(2);
    partial.set(0, 0, {1.f, 1.f}, 2.5);
    partial.set(1, 1, {1.f, 1.f}, 2.5);
    CHECK_THROWS_WITH_AS(coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                                 lennard_jones{}, partial),
                         doctest::Contains("no parameters for the types (0, 1)"), coalesce::error);
    CHECK(unchanged(v));
    // A position that went bad after the build.
    auto q = p;
    q[5].pos.y = std::numeric_limits<float>::quiet_NaN();
    coalesce::host_vector<Particle> bad(q);
    CHECK_THROWS_WITH_AS(coalesce::compute_pairs(bad, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                                 lennard_jones{}, table),
                         doctest::Contains("particle 5 has a position that is not finite"), coalesce::error);
    CHECK(unchanged(bad));
    // A half list claimed of a full one.
    CHECK_THROWS_WITH_AS(coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                                 lennard_jones{}, table, {.half = true}),
                         doctest::Contains("full one"), coalesce::error);
  }
  CHECK_THROWS_WITH_AS((coalesce::pair_table<lennard_jones::param_type>(9)), doctest::Contains("1 to 8"),
                       coalesce::error);
  coalesce::pair_table<lennard_jones::param_type> t(2);
  CHECK_THROWS_WITH_AS(t.set(0, 2, {}, 1.0), doctest::Contains("outside the table's 2 types"), coalesce::error);
  CHECK_THROWS_WITH_AS(t.set(0, 1, {}, -1.0), doctest::Contains("positive and finite"), coalesce::error);
}
