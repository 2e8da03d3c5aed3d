// coalesce::compute_many_body (neighbors/many_body.hpp): an EAM-style law of two particle types
// (a density per neighbour type, an embedding per type, a pair potential per type pair) through
// the engine's three passes, over every list format, full and half, periodic and open, two
// layouts, against an O(N^2) double-precision reference of the same law; bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

// rho contributed by a neighbour of type b: A_b (rc - r)^2; F_t(rho) = -B_t sqrt(rho);
// phi_ab(r) = C_ab (rc - r)^4. The types differ in every function, so a pass that mixed up i and
// j (whose density, whose derivative) gives other forces.
template <class Real> struct two_type_eam {
  Real rc = Real(2.4);
  Real a[2] = {Real(1.0), Real(0.6)};
  Real b[2] = {Real(1.0), Real(1.7)};
  Real c[2][2] = {{Real(0.05), Real(0.08)}, {Real(0.08), Real(0.03)}};
  COALESCE_HOST_DEVICE Real cutoff() const { return rc; }
  COALESCE_HOST_DEVICE Real density(Real r2, std::size_t, std::size_t tj) const {
    Real const s = rc - std::sqrt(r2);
    return a[tj] * s * s;
  }
  COALESCE_HOST_DEVICE coalesce::embedding_value<Real> embed(Real rho, std::size_t t) const {
    Real const root = std::sqrt(rho);
    return {-b[t] * root, root > Real(0) ? -b[t] / (Real(2) * root) : Real(0)};
  }
  COALESCE_HOST_DEVICE coalesce::pair_value<Real> pair(Real r2, std::size_t ti, std::size_t tj, Real dfi,
                                                       Real dfj) const {
    Real const r = std::sqrt(r2), s = rc - r;
    Real const dphi = Real(-4) * c[ti][tj] * s * s * s;
    // d rho_j(r)/dr at i is -2 A_tj s; at j from i, -2 A_ti s
    Real const psi = dphi + dfi * (Real(-2) * a[tj] * s) + dfj * (Real(-2) * a[ti] * s);
    return {-psi / r, c[ti][tj] * s * s * s * s};
  }
};
static_assert(coalesce::many_body_law<two_type_eam<float>>);

struct reference {
  std::vector<std::array<double, 3>> force;
  double energy = 0, virial = 0;
};

// Every pair once in double, minimum image along periodic axes: densities, embedding, forces.
reference brute_force(std::vector<Particle> const& p, coalesce::box const& box) {
  two_type_eam<double> const law;
  std::size_t const n = p.size();
  auto const separation = [&](std::size_t i, std::size_t j) {
    std::array<double, 3> d = {double(p[i].pos.x) - p[j].pos.x, double(p[i].pos.y) - p[j].pos.y,
                               double(p[i].pos.z) - p[j].pos.z};
    for (int a = 0; a < 3; ++a) {
      double const l = box.hi[a] - box.lo[a];
      if (box.periodic(a)) d[a] -= l * std::round(d[a] / l);
    }
    return d;
  };
  auto const r2_of = [](std::array<double, 3> const& d) { return d[0] * d[0] + d[1] * d[1] + d[2] * d[2]; };
  std::vector<double> rho(n, 0.0), dF(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      double const r2 = r2_of(separation(i, j));
      if (!(r2 < law.rc * law.rc)) continue;
      rho[i] += law.density(r2, p[i].id, p[j].id);
      rho[j] += law.density(r2, p[j].id, p[i].id);
    }
  }
  reference r;
  r.force.assign(n, {0, 0, 0});
  for (std::size_t i = 0; i < n; ++i) {
    auto const e = law.embed(rho[i], p[i].id);
    r.energy += e.value;
    dF[i] = e.derivative;
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      auto const d = separation(i, j);
      double const r2 = r2_of(d);
      if (!(r2 < law.rc * law.rc)) continue;
      auto const q = law.pair(r2, p[i].id, p[j].id, dF[i], dF[j]);
      for (int a = 0; a < 3; ++a) {
        r.force[i][a] += q.force_over_r * d[a];
        r.force[j][a] -= q.force_over_r * d[a];
      }
      r.energy += q.energy;
      r.virial += q.force_over_r * r2;
    }
  }
  return r;
}

template <class Format, class Layout> void check_against_reference(coalesce::box const& box, bool half) {
  CAPTURE(half);
  CAPTURE(box.periodic(0));
  auto p = liquid(400, 9.f, 5);
  if constexpr (coalesce::detail::list_format_ops<Format>::tests_candidates) p = spatially_sorted(std::move(p));
  reference const expected = brute_force(p, box);
  coalesce::vector<Particle, Layout, coalesce::host> v(p);
  coalesce::verlet_list<Format, coalesce::host> list({.cutoff = 2.4, .skin = 0.3, .half = half});
  list.build(v, &Particle::pos, box);
  coalesce::pair_options const sums{.energy = true, .virial = true};
  coalesce::pair_totals totals;
  if constexpr (std::is_same_v<Layout, coalesce::aos>) {  // both forms: members as template arguments here
    totals = coalesce::compute_many_body<&Particle::pos, &Particle::vel, &Particle::id>(v, list.view(v), box,
                                                                                        two_type_eam<float>{}, sums);
  } else {
    totals = coalesce::compute_many_body(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), box,
                                         two_type_eam<float>{}, sums);
  }
  std::vector<Particle> got(p.size());
  v.copy_to(std::span<Particle>(got));
  double largest = 0;
  for (auto const& f : expected.force)
    for (double x : f) largest = std::max(largest, std::abs(x));
  CHECK(largest > 0.1);  // forces worth comparing
  double worst = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - expected.force[i][a]));
    CHECK(got[i].pos.x == p[i].pos.x);
  }
  CHECK(worst <= 1e-5 * largest + 1e-5);
  CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
  CHECK(totals.virial == doctest::Approx(expected.virial).epsilon(1e-5));
}

}  // namespace

TEST_CASE_TEMPLATE(
    "compute_many_body: an EAM-style law of two types, every format, full and half, periodic and open, against "
    "O(N^2) double precision",
    Format, coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters,
    coalesce::cluster_pairs) {
  for (bool const half : {false, true}) {
    check_against_reference<Format, coalesce::soa>(coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}}, half);
    check_against_reference<Format, coalesce::aos>(
        coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}, .edges = coalesce::boundary::open}, half);
  }
}

TEST_CASE("compute_many_body: the sums off read as zero; one type without a type member; a lone particle") {
  auto p = liquid(150, 6.f, 3);
  for (auto& q : p) q.id = 0;
  p.push_back(p.front());
  p.back().pos = {100.f, 100.f, 100.f};  // in the open box, far from everyone: no density, no force
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {101, 101, 101}, .edges = coalesce::boundary::open};
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> list({.cutoff = 2.4, .skin = 0.3});
  list.build(v, &Particle::pos, box);
  auto const none =
      coalesce::compute_many_body(v, &Particle::pos, &Particle::vel, list.view(v), box, two_type_eam<float>{});
  CHECK(none.energy == 0);
  CHECK(none.virial == 0);
  std::vector<Particle> got(p.size());
  v.copy_to(std::span<Particle>(got));
  reference const expected = brute_force(p, box);
  double worst = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - expected.force[i][a]));
  }
  CHECK(worst <= 1e-4);
  CHECK(got.back().vel.x == 0.f);
}

TEST_CASE("compute_many_body refuses bad input and writes nothing") {
  auto p = liquid(100, 6.f, 4);
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> list({.cutoff = 2.4, .skin = 0.3});
  list.build(v, &Particle::pos, box);
  two_type_eam<float> no_reach;
  no_reach.rc = 0.f;
  CHECK_THROWS_WITH_AS(coalesce::compute_many_body(v, &Particle::pos, &Particle::vel, list.view(v), box, no_reach),
                       doctest::Contains("cutoff() is 0"), coalesce::error);
  // a list over fewer particles than there are
  coalesce::host_vector<Particle> fewer(std::vector<Particle>(p.begin(), p.begin() + 50));
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> short_list({.cutoff = 2.4, .skin = 0.3});
  short_list.build(fewer, &Particle::pos, box);
  CHECK_THROWS_WITH_AS(coalesce::compute_many_body(v, &Particle::pos, &Particle::vel, short_list.view(fewer), box,
                                                   two_type_eam<float>{}),
                       doctest::Contains("build the list over all of them"), coalesce::error);
  // a position that is not finite: named, nothing written
  auto broken = p;
  broken[7].pos.y = std::nanf("");
  coalesce::host_vector<Particle> w(broken);
  CHECK_THROWS_WITH_AS(
      coalesce::compute_many_body(w, &Particle::pos, &Particle::vel, list.view(v), box, two_type_eam<float>{}),
      doctest::Contains("particle 7 has a position that is not finite"), coalesce::error);
  std::vector<Particle> after(broken.size());
  w.copy_to(std::span<Particle>(after));
  CHECK(after[0].vel.x == 7.f);
}
