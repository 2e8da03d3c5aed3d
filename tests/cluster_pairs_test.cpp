// The cluster-pair list format (neighbors/cluster_pairs.hpp), in host memory: its rows hold every
// pair within cutoff + skin and no pair twice (each pair once over a half list, once per direction
// over a full one), for uniform, clustered and tiny sets, periodic, open and mixed boxes, boxes of a
// few columns, particles in any order; its keys put particles in its cluster order (and a build of
// them skips its sort); its counts; bad input refused as the other formats refuse it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

using pair_t = std::pair<std::uint32_t, std::uint32_t>;

// The rows' pairs: each ordered (i, j) and how often it appears.
std::map<pair_t, int> pairs_of(rows_t const& rows, bool half) {
  std::map<pair_t, int> out;
  for (std::uint32_t i = 0; i < rows.size(); ++i) {
    for (std::uint32_t j : rows[i]) {
      pair_t const key = half ? pair_t{std::min(i, j), std::max(i, j)} : pair_t{i, j};
      ++out[key];
    }
  }
  return out;
}

// The list over `p` in `b` holds every pair the O(N^2) reference finds a hair inside the reach,
// none twice, no particle paired with itself, and counts between the reference's pairs a hair
// inside and a hair outside the reach.
void check_list(std::vector<Particle> const& p, coalesce::box const& b, double reach_cutoff, bool half) {
  CAPTURE(p.size());
  CAPTURE(half);
  double const skin = 0.3;
  coalesce::vector<Particle, coalesce::soa, coalesce::host> v(p);
  coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> list(
      {.cutoff = reach_cutoff, .skin = skin, .half = half});
  list.build(v, &Particle::pos, b);
  rows_t const rows = list.rows_on_host();
  REQUIRE(rows.size() == p.size());
  auto const got = pairs_of(rows, half);
  std::size_t twice = 0, self = 0;
  for (auto const& [key, times] : got) {
    twice += times > 1 ? 1 : 0;
    self += key.first == key.second ? 1 : 0;
  }
  CHECK(twice == 0);
  CHECK(self == 0);
  double const reach = reach_cutoff + skin;
  rows_t const inside = brute_force(p, b, b.periodic_axes(), reach * (1 - 1e-4), half);
  rows_t const outside = brute_force(p, b, b.periodic_axes(), reach * (1 + 1e-4), half);
  std::size_t missing = 0;
  for (std::uint32_t i = 0; i < inside.size(); ++i) {
    for (std::uint32_t j : inside[i]) {
      pair_t const key = half ? pair_t{std::min(i, j), std::max(i, j)} : pair_t{i, j};
      missing += got.count(key) == 0 ? 1 : 0;
    }
  }
  CHECK(missing == 0);
  CHECK(list.entries() >= entries_of(inside));
  CHECK(list.entries() <= entries_of(outside));
  CHECK(list.candidates() >= list.entries());
  std::size_t superset = 0;
  for (auto const& r : rows) superset += r.size();
  CHECK(list.candidates() == superset);  // the pairs a traversal evaluates
  if (!p.empty()) CHECK(list.bytes() > 0);
  // count / neighbor through the view agree with the rows
  auto const view = list.view(v);
  for (std::size_t i = 0; i < std::min<std::size_t>(p.size(), 20); ++i) {
    REQUIRE(view.count(i) == rows[i].size());
    for (std::uint32_t k = 0; k < view.count(i); ++k) CHECK(view.neighbor(i, k) == rows[i][k]);
  }
}

std::vector<Particle> blob(std::size_t n, float centre, float radius, unsigned seed) {
  auto p = random_particles(n, centre - radius, centre + radius, seed);
  return p;
}

}  // namespace

TEST_CASE("cluster_pairs: every pair within reach once, uniform particles in periodic, open and mixed boxes") {
  for (bool const half : {true, false}) {
    auto const p = random_particles(600, 0.f, 10.f, 3);
    check_list(p, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}}, 2.5, half);
    check_list(p, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::open}, 2.5, half);
    check_list(
        p,
        coalesce::box{.lo = {0, 0, 0},
                      .hi = {10, 10, 10},
                      .edges = {coalesce::boundary::periodic, coalesce::boundary::open, coalesce::boundary::periodic}},
        2.5, half);
  }
}

TEST_CASE("cluster_pairs: clustered particles with empty columns, a box of few columns, tiny sets") {
  for (bool const half : {true, false}) {
    // a dense blob in a large, mostly empty periodic box: most columns empty, clusters crowded
    check_list(blob(600, 12.f, 2.f, 7), coalesce::box{.lo = {0, 0, 0}, .hi = {30, 30, 30}}, 1.5, half);
    // a box barely twice the reach: every column and slice within reach under some image
    check_list(random_particles(300, 0.f, 5.7f, 11), coalesce::box{.lo = {0, 0, 0}, .hi = {5.7, 5.7, 5.7}}, 2.5, half);
    // a box offset from the origin, particles outside it along periodic axes (wrapped)
    check_list(random_particles(500, -3.f, 17.f, 13), coalesce::box{.lo = {-1, 2, 0}, .hi = {13, 16, 14}}, 2.0, half);
    for (std::size_t n : {1u, 2u, 7u, 8u, 9u, 17u}) {
      check_list(random_particles(n, 0.f, 6.f, 17), coalesce::box{.lo = {0, 0, 0}, .hi = {6, 6, 6}}, 2.5, half);
    }
    check_list({}, coalesce::box{.lo = {0, 0, 0}, .hi = {6, 6, 6}}, 2.5, half);
  }
}

TEST_CASE(
    "cluster_pairs: any particle order; its keys put particles in cluster order and the build then sorts nothing") {
  auto p = random_particles(1200, 0.f, 12.f, 21);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {12, 12, 12}};
  check_list(p, b, 2.5, true);
  coalesce::vector<Particle, coalesce::soa, coalesce::host> v(p);
  coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> list({.cutoff = 2.5, .skin = 0.3, .half = true});
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, list.cell_keys(v, &Particle::pos, b, plan), plan);
  list.build(v, &Particle::pos, b);
  CHECK(list.cell_sorts() == 0);  // already in the list's order
  // Sorted, a cluster's slots name consecutive particles: slot k of the first cluster of a column
  // is the column's k-th particle.
  auto const view = list.view(v);
  std::size_t consecutive = 0, pairs = 0;
  for (std::size_t s = 1; s < view.clusters * coalesce::cluster_pairs::cluster_size; ++s) {
    if (s % coalesce::cluster_pairs::cluster_size == 0) continue;
    if (view.slots[s] == coalesce::cluster_pairs::empty_slot) continue;
    ++pairs;
    consecutive += view.slots[s] == view.slots[s - 1] + 1 ? 1 : 0;
  }
  CHECK(consecutive == pairs);
  std::vector<Particle> sorted(p.size());
  v.copy_to(std::span<Particle>(sorted));
  check_list(sorted, b, 2.5, false);
  // the lists stay compact: a pair of clusters per few particles, not a slot per neighbour
  CHECK(list.bytes() < 40 * p.size());
}

// A refill (CUDA graphs) cannot read a new cluster count back, so a build keeps room for the most
// clusters its columns can make, whatever the particles' spread: the same count for the same
// particle count and box, the clusters past the columns' own empty (no particle, an empty row, listed
// in no row). In host memory refill() is build().
TEST_CASE("cluster_pairs: the same clusters for any spread of the same particles, the spare ones empty; refill") {
  std::size_t const n = 1500;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {12, 12, 12}};
  auto const uniform = random_particles(n, 0.f, 12.f, 31);
  auto squeezed = uniform;  // every particle in half the box: half the columns hold them all
  for (auto& q : squeezed) q.pos.x *= 0.5f;
  std::size_t clusters = 0;
  std::vector<std::vector<Particle> const*> const spreads = {&uniform, &squeezed};
  for (auto const* p : spreads) {
    coalesce::vector<Particle, coalesce::soa, coalesce::host> v(*p);
    coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> list({.cutoff = 2.5, .skin = 0.3, .half = true});
    list.build(v, &Particle::pos, b);
    rows_t const built = list.rows_on_host();
    auto const view = list.view(v);
    if (clusters == 0) clusters = view.clusters;
    CHECK(view.clusters == clusters);
    std::size_t empty = 0;
    std::set<std::uint32_t> listed;
    for (std::size_t c = 0; c < view.clusters; ++c) {
      for (std::uint32_t e = view.row_offsets[c]; e < view.row_offsets[c + 1]; ++e) listed.insert(view.entries[e]);
    }
    for (std::size_t c = 0; c < view.clusters; ++c) {
      bool const none = view.slots[c * 8] == coalesce::cluster_pairs::empty_slot;
      if (!none) continue;
      ++empty;
      for (std::size_t k = 0; k < 8; ++k) CHECK(view.slots[c * 8 + k] == coalesce::cluster_pairs::empty_slot);
      CHECK(view.row_offsets[c] == view.row_offsets[c + 1]);
      CHECK(listed.count(static_cast<std::uint32_t>(c)) == 0);
    }
    CHECK(empty > 0);                         // room to spare for the squeezed and the uniform
    CHECK((view.clusters - empty) * 8 >= n);  // every particle in a cluster
    CHECK(empty * 8 < n);                     // the room is a fraction of the list
    list.refill(v, &Particle::pos, b);
    CHECK(list.rows_on_host() == built);
    CHECK_NOTHROW(list.check());
    check_list(*p, b, 2.5, true);
  }
}

TEST_CASE("cluster_pairs refuses bad input as the other formats do") {
  auto p = random_particles(200, 0.f, 8.f, 5);
  coalesce::box const open{.lo = {0, 0, 0}, .hi = {8, 8, 8}, .edges = coalesce::boundary::open};
  coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> list({.cutoff = 2.5, .skin = 0.3});
  p[57].pos.y = 9.5f;  // outside an open axis
  coalesce::vector<Particle, coalesce::soa, coalesce::host> v(p);
  CHECK_THROWS_WITH_AS(list.build(v, &Particle::pos, open), doctest::Contains("57"), coalesce::error);
  p[57].pos.y = std::numeric_limits<float>::quiet_NaN();
  coalesce::vector<Particle, coalesce::soa, coalesce::host> w(p);
  CHECK_THROWS_WITH_AS(list.build(w, &Particle::pos, open), doctest::Contains("57"), coalesce::error);
  CHECK_THROWS_WITH_AS(list.build(w, &Particle::pos, open, coalesce::list_rows{100}), doctest::Contains("list_rows"),
                       coalesce::error);
}
