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

#include "many_body_reference.hpp"
#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

using namespace coalesce_test::many_body;

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

// A halo's ghosts made by hand: the periodic images within reach of the box, appended after the
// owned particles; a list with rows for the owned ones over an open box that holds the images. The
// exchange copies each owner's derivative into its images, as mpi::forward does between ranks: the
// owned particles' forces, the energy and the virial are the periodic system's.
TEST_CASE(
    "compute_many_body with ghosts: an exchange fills their derivatives, the owned forces are the periodic "
    "system's") {
  float const length = 9.f, reach = 2.4f + 0.3f;
  auto const p = liquid(400, length, 5);
  reference const expected = brute_force(p, coalesce::box{.lo = {0, 0, 0}, .hi = {length, length, length}});
  std::vector<Particle> all = p;
  std::vector<std::size_t> owner;
  for (std::size_t i = 0; i < p.size(); ++i) {
    for (int s = 0; s < 27; ++s) {
      int const shift[3] = {s % 3 - 1, s / 3 % 3 - 1, s / 9 - 1};
      if (shift[0] == 0 && shift[1] == 0 && shift[2] == 0) continue;
      Particle q = p[i];
      q.pos.x += shift[0] * length, q.pos.y += shift[1] * length, q.pos.z += shift[2] * length;
      bool inside = true;
      for (float const x : {q.pos.x, q.pos.y, q.pos.z}) inside = inside && x >= -reach && x < length + reach;
      if (!inside) continue;
      all.push_back(q);
      owner.push_back(i);
    }
  }
  REQUIRE(owner.size() > p.size() / 2);  // ghosts worth the name
  float const edge = length + reach + 1.f;
  coalesce::box const open{
      .lo = {-reach - 1.f, -reach - 1.f, -reach - 1.f}, .hi = {edge, edge, edge}, .edges = coalesce::boundary::open};
  coalesce::host_vector<Particle> v(all);
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> list({.cutoff = 2.4, .skin = 0.3});
  list.build(v, &Particle::pos, open, coalesce::list_rows{.owned = p.size()});
  std::size_t calls = 0;
  coalesce::pair_totals const totals = coalesce::compute_many_body<&Particle::pos, &Particle::vel, &Particle::id>(
      v, list.view(v), open, two_type_eam<float>{}, {.energy = true, .virial = true}, coalesce::default_stream,
      [&](coalesce::array<float, coalesce::host>& derivatives) {
        ++calls;
        REQUIRE(derivatives.size() == all.size());
        float* const dF = derivatives.data();
        for (std::size_t k = 0; k < owner.size(); ++k) dF[p.size() + k] = dF[owner[k]];
      });
  CHECK(calls == 1);
  std::vector<Particle> got(all.size());
  v.copy_to(std::span<Particle>(got));
  double largest = 0, worst = 0;
  for (auto const& f : expected.force)
    for (double x : f) largest = std::max(largest, std::abs(x));
  for (std::size_t i = 0; i < p.size(); ++i) {
    float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - expected.force[i][a]));
  }
  CHECK(largest > 0.1);
  CHECK(worst <= 1e-5 * largest + 1e-5);
  for (std::size_t k = p.size(); k < all.size(); ++k) CHECK(got[k].vel.x == 0.f);
  CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
  CHECK(totals.virial == doctest::Approx(expected.virial).epsilon(1e-5));

  // Without the exchange the ghosts' derivatives are unknown: refused, naming the way out; with a
  // half list the ghosts would take densities and reactions: refused too.
  CHECK_THROWS_WITH_AS(
      coalesce::compute_many_body(v, &Particle::pos, &Particle::vel, list.view(v), open, two_type_eam<float>{}),
      doctest::Contains("pass an exchange"), coalesce::error);
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> half_list({.cutoff = 2.4, .skin = 0.3, .half = true});
  half_list.build(v, &Particle::pos, open, coalesce::list_rows{.owned = p.size()});
  CHECK_THROWS_WITH_AS(
      coalesce::compute_many_body(v, &Particle::pos, &Particle::vel, half_list.view(v), open, two_type_eam<float>{}, {},
                                  coalesce::default_stream, [](coalesce::array<float, coalesce::host>&) {}),
      doctest::Contains("build a full list"), coalesce::error);
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
