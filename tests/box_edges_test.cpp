// A box says per axis whether it is periodic or open (core/box.hpp), and every algorithm that reads
// a box reads each axis: the list builds (every format), the keys and the pair engine. A slab
// periodic in x and y and open in z gives the rows of an O(N^2) search with exactly those images,
// a key that wraps along x and refuses a position outside z, and the forces of a reference with
// the same images. The one-boundary spelling still means every axis.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {
constexpr auto P = coalesce::boundary::periodic;
constexpr auto O = coalesce::boundary::open;
}  // namespace

static_assert(coalesce::box{}.periodic_axes() == std::array<bool, 3>{true, true, true});  // unstated: periodic
static_assert(coalesce::box{.edges = O}.periodic_axes() == std::array<bool, 3>{false, false, false});
static_assert(coalesce::box{.edges = {P, O, P}}.periodic_axes() == std::array<bool, 3>{true, false, true});
static_assert(coalesce::box{.edges = {P, P, P}}.edges == P);
static_assert(!(coalesce::box{.edges = {P, P, O}}.edges == P) && !(coalesce::box{.edges = {P, P, O}}.edges == O));
static_assert(coalesce::boundary::clamped == coalesce::boundary::open);  // the former name

TEST_CASE_TEMPLATE("a list over a box periodic in x and y and open in z holds the pairs of those images", Format,
                   coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters) {
  auto p = random_particles(600, 0.f, 6.f, 21);
  if constexpr (coalesce::detail::list_format_ops<Format>::tests_candidates) {  // clusters: a spatial order
    p = spatially_sorted(std::move(p));
  }
  coalesce::box const slab{.lo = {0, 0, 0}, .hi = {6, 6, 6}, .edges = {P, P, O}};
  for (bool const half : {false, true}) {
    CAPTURE(half);
    coalesce::host_vector<Particle> v(p);
    coalesce::verlet_list<Format, coalesce::host> list({.cutoff = 1.0, .skin = 0.2, .half = half});
    list.build(v, &Particle::pos, slab);
    rows_t const expected = brute_force(p, slab, {true, true, false}, 1.2, half);
    CHECK(sorted_rows(list.rows_on_host()) == expected);
    // And not the rows of a box periodic along every axis: pairs across the z faces differ.
    CHECK(expected != brute_force(p, slab, {true, true, true}, 1.2, half));
  }
}

TEST_CASE("keys wrap along a periodic axis and refuse a position outside an open one") {
  std::vector<Particle> p(3);
  p[0].pos = {1.0f, 2.0f, 3.0f};
  p[1].pos = {7.0f, 2.0f, 3.0f};  // x one length past the box: its image is p[0]
  p[2].pos = {1.0f, 2.0f, 3.0f};
  coalesce::box const slab{.lo = {0, 0, 0}, .hi = {6, 6, 6}, .edges = {P, P, O}};
  coalesce::host_vector<Particle> v(p);
  coalesce::reorder_plan plan;
  auto const keys = coalesce::morton_keys(v, &Particle::pos, slab, plan);
  CHECK(keys.data[1] == keys.data[0]);
  p[2].pos.z = 6.5f;  // outside the open z
  coalesce::host_vector<Particle> w(p);
  CHECK_THROWS_WITH_AS((void)coalesce::morton_keys(w, &Particle::pos, slab, plan),
                       doctest::Contains("element 2 has position"), coalesce::error);
  // The same position along a periodic z wraps.
  coalesce::box const periodic{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  CHECK_NOTHROW((void)coalesce::morton_keys(w, &Particle::pos, periodic, plan));
}

TEST_CASE("the pair engine takes the nearest image along periodic axes only") {
  // Two particles 1.5 apart through the z faces (5.5 apart inside the box) and through the x faces.
  std::vector<Particle> p(2);
  p[0].pos = {0.25f, 3.0f, 0.25f};
  p[1].pos = {5.75f, 3.0f, 3.0f};
  struct spring {  // f/r = 1 within the cutoff: the force on i is x_i - x_j (its nearest image)
    struct param_type {};
    coalesce::pair_value<float> operator()(float, param_type const&) const { return {1.f, 0.f}; }
  };
  coalesce::pair_table<spring::param_type> table(1);
  table.set(0, 0, {}, 3.0);
  // The forces of the two particles under a box of these edges (a csr list, the spring above).
  auto const forces = [&](coalesce::box_edges edges) {
    coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}, .edges = edges};
    coalesce::host_vector<Particle> v(p);
    coalesce::verlet_list<coalesce::csr, coalesce::host> list({.cutoff = 2.9, .skin = 0.1});
    list.build(v, &Particle::pos, b);
    (void)coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, list.view(v), b, spring{}, table);
    std::vector<Particle> got(2);
    v.copy_to(std::span<Particle>(got));
    return got;
  };
  for (auto const edges : {coalesce::box_edges{P, P, O}, coalesce::box_edges{P, P, P}}) {
    auto const got = forces(edges);
    // x: 0.25 - (5.75 - 6) = 0.5 through the x faces, both boxes.
    CHECK(got[0].vel.x == doctest::Approx(0.5));
    // z: -2.75 inside the box; through the z faces 3.25, farther: the nearest image is -2.75 in both boxes.
    CHECK(got[0].vel.z == doctest::Approx(-2.75));
    CHECK(got[1].vel.x == doctest::Approx(-0.5));
  }
  // A pair only through the z faces: 5.5 apart inside, 0.5 through them.
  p[1].pos = {0.25f, 3.0f, 5.75f};
  for (auto const edges : {coalesce::box_edges{P, P, O}, coalesce::box_edges{P, P, P}}) {
    bool const z_periodic = edges.periodic(2);
    CAPTURE(z_periodic);
    CHECK(forces(edges)[0].vel.z == doctest::Approx(z_periodic ? 0.5 : 0.0));  // open z: out of reach, no force
  }
}
