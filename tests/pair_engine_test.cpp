// coalesce::compute_pairs (neighbors/pair_engine.hpp): forces, energy and virial of a pair law
// over every list format, full and half, two particle types, periodic and open boxes, two layouts,
// with and without exclusions (bonded chains, pair_exclusions.hpp), against an O(N^2)
// double-precision reference within float rounding; a list of the user's own; bad input (a type
// outside the table, a pair not given, a position that is not finite, exclusions naming a particle
// out of range or built for another count) throws and writes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include <coalesce/coalesce.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "neighbor_cases.hpp"
#include "pair_law_reference.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using coalesce_test::vec3;
using namespace coalesce_test::neighbor_cases;

// compute_pairs over device memory runs a device loop: where the device is a GPU (a CUDA build)
// that needs nvcc, and tests/gpu covers it; this file then runs those cases in host memory.
using engine_space = std::conditional_t<coalesce::device_is_gpu, coalesce::host, coalesce::device>;

namespace {

using coalesce_test::lennard_jones;  // the pair law a user writes once (pair_law_reference.hpp)

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
  std::size_t excluded_in_reach = 0;  // excluded pairs within their cutoff: what the exclusions took away
};

using pair_set = std::set<std::pair<std::size_t, std::size_t>>;  // (lower, higher) index

// Every pair once, in double, minimum image along periodic axes; the pairs of `excluded` skipped.
reference brute_force_forces(std::vector<Particle> const& p, coalesce::box const& b,
                             coalesce::pair_table<lennard_jones::param_type> const& table,
                             pair_set const& excluded = {}) {
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
      if (excluded.contains({i, j})) {
        ++r.excluded_in_reach;
        continue;
      }
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

// Bonded molecules: chains of 2 to 6 particles, each bond to the nearest particle not yet in a chain
// (within 1.6, minimum image in a periodic box of side `length`), and the angles' 1-3 pairs of each
// chain. A few bonds are given twice, reversed (a bond list read from two files): counted once.
std::vector<std::uint32_t> bonded_chains(std::vector<Particle> const& p, float length, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::size_t> order(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> taken(p.size(), false);
  std::vector<std::uint32_t> bonds;
  auto const distance2 = [&](std::size_t a, std::size_t b) {
    double d2 = 0;
    for (double d :
         {double(p[a].pos.x) - p[b].pos.x, double(p[a].pos.y) - p[b].pos.y, double(p[a].pos.z) - p[b].pos.z}) {
      d -= length * std::round(d / length);
      d2 += d * d;
    }
    return d2;
  };
  std::size_t bond_count = 0;
  for (std::size_t const start : order) {
    if (taken[start]) continue;
    taken[start] = true;
    std::vector<std::size_t> chain{start};
    std::size_t const want = 2 + rng() % 5;
    while (chain.size() < want) {
      std::size_t best = p.size();
      double best_d2 = 1.6 * 1.6;
      for (std::size_t j = 0; j < p.size(); ++j) {
        if (!taken[j] && distance2(chain.back(), j) < best_d2) best = j, best_d2 = distance2(chain.back(), j);
      }
      if (best == p.size()) break;
      taken[best] = true;
      chain.push_back(best);
    }
    for (std::size_t k = 1; k < chain.size(); ++k) {
      bonds.insert(bonds.end(), {std::uint32_t(chain[k - 1]), std::uint32_t(chain[k])});
      if (++bond_count % 7 == 0) bonds.insert(bonds.end(), {std::uint32_t(chain[k]), std::uint32_t(chain[k - 1])});
    }
    for (std::size_t k = 2; k < chain.size(); ++k)
      bonds.insert(bonds.end(), {std::uint32_t(chain[k - 2]), std::uint32_t(chain[k])});
  }
  return bonds;
}

pair_set as_pair_set(std::vector<std::uint32_t> const& bonds) {
  pair_set out;
  for (std::size_t k = 0; k + 1 < bonds.size(); k += 2) {
    std::size_t const i = bonds[k], j = bonds[k + 1];
    out.insert({std::min(i, j), std::max(i, j)});
  }
  return out;
}

double largest_force(reference const& r) {
  double m = 0;
  for (auto const& f : r.force)
    for (double c : f) m = std::max(m, std::abs(c));
  return m;
}

template <class Format, class Layout> void check_against_reference(coalesce::box const& b, bool half, bool exclude) {
  CAPTURE(half);
  CAPTURE(exclude);
  CAPTURE(b.edges == coalesce::boundary::periodic);
  auto p = liquid(400, 9.f, 5);
  if constexpr (coalesce::detail::list_format_ops<Format>::tests_candidates) {  // clusters want a spatial order
    p = spatially_sorted(std::move(p));
  }
  auto const table = two_types();
  // the bonds name the particles in their final order (after the sort above)
  std::vector<std::uint32_t> const bonds = exclude ? bonded_chains(p, 9.f, 11) : std::vector<std::uint32_t>{};
  reference const expected = brute_force_forces(p, b, table, as_pair_set(bonds));
  if (exclude) CHECK(expected.excluded_in_reach > 100);  // the exclusions change the answer
  coalesce::vector<Particle, Layout, coalesce::host> v(p);
  coalesce::verlet_list<Format, coalesce::host> list({.cutoff = table.largest_cutoff(), .skin = 0.3, .half = half});
  list.build(v, &Particle::pos, b);
  coalesce::pair_exclusions<coalesce::host> const excluded(p.size(), bonds);
  // both forms: members as function arguments (soa), as template arguments (aos)
  coalesce::pair_totals totals;
  coalesce::pair_options const sums{.energy = true, .virial = true};
  if constexpr (std::is_same_v<Layout, coalesce::aos>) {
    totals = exclude ? coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(
                           v, list.view(v), b, lennard_jones{}, table, excluded, sums)
                     : coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(
                           v, list.view(v), b, lennard_jones{}, table, sums);
  } else {
    totals = exclude ? coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                               lennard_jones{}, table, excluded, sums)
                     : coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                               lennard_jones{}, table, sums);
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
    check_against_reference<Format, coalesce::soa>(coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}}, half, false);
    check_against_reference<Format, coalesce::aos>(
        coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}, .edges = coalesce::boundary::open}, half, false);
  }
}

TEST_CASE_TEMPLATE(
    "compute_pairs with exclusions (bonded chains): every format, full and half, periodic and open, two types, "
    "against O(N^2) double precision",
    Format, coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters,
    coalesce::cluster_pairs) {
  for (bool const half : {false, true}) {
    check_against_reference<Format, coalesce::soa>(coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}}, half, true);
    check_against_reference<Format, coalesce::aos>(
        coalesce::box{.lo = {0, 0, 0}, .hi = {9, 9, 9}, .edges = coalesce::boundary::open}, half, true);
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

TEST_CASE(
    "compute_pairs over a list of the user's own, full and half (pair_options::half), with and without exclusions") {
  auto const p = liquid(150, 6.f, 3);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  auto const table = two_types();
  std::vector<std::uint32_t> const bonds = bonded_chains(p, 6.f, 2);
  coalesce::pair_exclusions<coalesce::host> const excluded(p.size(), bonds);
  for (int const k : {0, 1, 2, 3}) {
    bool const half = k % 2 == 1, exclude = k / 2 == 1;
    CAPTURE(half);
    CAPTURE(exclude);
    reference const expected = brute_force_forces(p, b, table, exclude ? as_pair_set(bonds) : pair_set{});
    rows_t const rows = brute_force(p, b, {true, true, true}, 2.8, half);
    std::vector<std::uint32_t> entries, offsets{0};
    for (auto const& r : rows) {
      entries.insert(entries.end(), r.begin(), r.end());
      offsets.push_back(static_cast<std::uint32_t>(entries.size()));
    }
    coalesce::host_csr_neighbor_list<std::uint32_t> const mine{
        .indices = entries.data(), .offsets = offsets.data(), .particles = p.size()};
    coalesce::host_vector<Particle> v(p);
    auto const totals = exclude
                            ? coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, mine, b,
                                                      lennard_jones{}, table, excluded, {.energy = true, .half = half})
                            : coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, mine, b,
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

TEST_CASE(
    "pair_exclusions: symmetric rows, each pair once whichever way round it was given; one type, no type member") {
  std::vector<std::array<std::uint32_t, 2>> const pairs = {{0, 1}, {1, 2}, {2, 1}, {4, 0}, {0, 1}, {3, 5}};
  coalesce::pair_exclusions<coalesce::host> const excluded(6, pairs);
  CHECK(excluded.size() == 6);
  CHECK(excluded.pairs() == 4);
  using row = std::vector<std::uint32_t>;
  CHECK(excluded.rows_on_host() == std::vector<row>{{1, 4}, {0, 2}, {1}, {5}, {0}, {3}});
  auto const view = excluded.view();
  CHECK(view.excludes(4, 0));
  CHECK(view.excludes(0, 4));
  CHECK_FALSE(view.excludes(0, 2));
  CHECK(coalesce::pair_exclusions<coalesce::host>(3, std::vector<std::uint32_t>{}).pairs() == 0);
  CHECK(coalesce::pair_exclusions<coalesce::device>(3, std::vector<std::uint32_t>{1, 2}).rows_on_host() ==
        std::vector<row>{{}, {2}, {1}});

  // The form without a type member (every particle type 0), and the members as template arguments.
  auto const p = liquid(200, 7.f, 9);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {7, 7, 7}};
  coalesce::pair_table<lennard_jones::param_type> one(1);
  one.set(0, 0, {1.f, 1.f}, 2.5);
  std::vector<Particle> all_type_zero = p;
  for (auto& q : all_type_zero) q.id = 0;
  std::vector<std::uint32_t> const bonds = bonded_chains(p, 7.f, 4);
  reference const expected = brute_force_forces(all_type_zero, b, one, as_pair_set(bonds));
  CHECK(expected.excluded_in_reach > 50);
  coalesce::pair_exclusions<engine_space> const chains(p.size(), bonds);
  coalesce::vector<Particle, coalesce::soa, engine_space> v(p);
  coalesce::verlet_list<coalesce::csr, engine_space> list({.cutoff = 2.5, .skin = 0.3, .half = true});
  list.build(v, &Particle::pos, b);
  for (bool const template_members : {false, true}) {
    CAPTURE(template_members);
    auto const totals = template_members
                            ? coalesce::compute_pairs<&Particle::pos, &Particle::vel>(
                                  v, list.view(v), b, lennard_jones{}, one, chains, {.energy = true, .virial = true})
                            : coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, list.view(v), b,
                                                      lennard_jones{}, one, chains, {.energy = true, .virial = true});
    CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
    CHECK(totals.virial == doctest::Approx(expected.virial).epsilon(1e-5));
    std::vector<Particle> got(p.size());
    v.copy_to(std::span<Particle>(got));
    double worst = 0;
    for (std::size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::abs(got[i].vel.z - expected.force[i][2]));
    CHECK(worst <= 1e-5 * largest_force(expected) + 1e-4);
  }
}

#if !COALESCE_WITH_CUDA  // the device system on the CPU (OpenMP); with CUDA, tests/gpu covers device memory
// The CPU's cluster-pair loop (cluster_pair_loop_host.hpp) with OpenMP threads: per-thread force
// buffers on a half list, two types, exclusions; called inside a parallel region of the caller's it
// takes the generic loop (a region of its own there would run every cluster on every thread; the sums
// of a call in a region are each thread's share, so only the forces are compared there).
TEST_CASE("compute_pairs over cluster_pairs in the device system's memory: threads, half and full, in a region") {
  auto const p = spatially_sorted(liquid(600, 10.f, 13));
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  auto const table = two_types();
  std::vector<std::uint32_t> const bonds = bonded_chains(p, 10.f, 6);
  reference const expected = brute_force_forces(p, b, table, as_pair_set(bonds));
  coalesce::pair_exclusions<coalesce::device> const chains(p.size(), bonds);
  for (int const k : {0, 1, 2, 3}) {
    bool const half = k % 2 == 1, in_region = k / 2 == 1;
    CAPTURE(half);
    CAPTURE(in_region);
    coalesce::device_vector<Particle> v(p);
    coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = table.largest_cutoff(), .skin = 0.3, .half = half});
    list.build(v, &Particle::pos, b);
    auto const run = [&](coalesce::pair_options sums) {
      return coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(v, list.view(v), b, lennard_jones{},
                                                                                    table, chains, sums);
    };
    if (in_region) {
#pragma omp parallel
      run({});
    } else {
      coalesce::pair_totals const totals = run({.energy = true, .virial = true});
      CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
      CHECK(totals.virial == doctest::Approx(expected.virial).epsilon(1e-5));
    }
    std::vector<Particle> got(p.size());
    v.copy_to(std::span<Particle>(got));
    double worst = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      for (int a = 0; a < 3; ++a) {
        float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
        worst = std::max(worst, std::abs(f[a] - expected.force[i][a]));
      }
    }
    CHECK(worst <= 1e-5 * largest_force(expected) + 1e-4);
  }
}

// A force member stored as 64-bit fixed point: the SIMD cluster loop keeps every sum across clusters
// as the format's integers, so the forces are the same bits whatever the thread count (the float
// member's last bits follow the schedule); they agree with the double reference within float
// rounding, on half and full lists, with two types and exclusions.
TEST_CASE("compute_pairs over cluster_pairs into a fixed-point force member: the same bits at any thread count") {
  using summed =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::fixed_point<std::int64_t, 32>>>;
  auto const p = spatially_sorted(liquid(700, 10.f, 21));
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  auto const table = two_types();
  std::vector<std::uint32_t> const bonds = bonded_chains(p, 10.f, 8);
  reference const expected = brute_force_forces(p, b, table, as_pair_set(bonds));
  coalesce::pair_exclusions<coalesce::device> const chains(p.size(), bonds);
  int const threads_before = omp_get_max_threads();
  for (bool const half : {true, false}) {
    CAPTURE(half);
    std::vector<Particle> first;
    for (int const threads : {1, 2, 3, 4}) {
      CAPTURE(threads);
      omp_set_num_threads(threads);
      coalesce::device_vector<Particle, summed> v(p);
      coalesce::verlet_list<coalesce::cluster_pairs> list(
          {.cutoff = table.largest_cutoff(), .skin = 0.3, .half = half});
      list.build(v, &Particle::pos, b);
      coalesce::pair_totals const totals = coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(
          v, list.view(v), b, lennard_jones{}, table, chains, {.energy = true});
      CHECK(totals.energy == doctest::Approx(expected.energy).epsilon(1e-5));
      std::vector<Particle> got(p.size());
      v.copy_to(std::span<Particle>(got));
      double worst = 0;
      for (std::size_t i = 0; i < p.size(); ++i) {
        float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
        for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - expected.force[i][a]));
      }
      CHECK(worst <= 1e-5 * largest_force(expected) + 1e-4);
      if (first.empty()) {
        first = got;
      } else {
        std::size_t differ = 0;
        for (std::size_t i = 0; i < p.size(); ++i) {
          differ += got[i].vel.x != first[i].vel.x || got[i].vel.y != first[i].vel.y || got[i].vel.z != first[i].vel.z;
        }
        CHECK(differ == 0);
      }
    }
  }
  omp_set_num_threads(threads_before);
}

// A sum the fixed-point format cannot hold is an error after the loop, naming the format (LJ forces
// of a dense liquid reach hundreds; fixed_point<std::int32_t, 28> holds below 8).
TEST_CASE("compute_pairs over cluster_pairs refuses a force sum its fixed-point member cannot hold, or clamps it") {
  using narrow =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::fixed_point<std::int32_t, 28>>>;
  auto const p = spatially_sorted(liquid(600, 10.f, 13));
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  auto const table = two_types();
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::device_vector<Particle, narrow> v(p);
    coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = table.largest_cutoff(), .skin = 0.3, .half = half});
    list.build(v, &Particle::pos, b);
    CHECK_THROWS_WITH_AS((coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(
                             v, list.view(v), b, lennard_jones{}, table)),
                         doctest::Contains("a force sum lies outside what the force member's format"), coalesce::error);
  }
  // A saturating format clamps instead: every component within its range.
  using clamped =
      coalesce::stored_as<coalesce::soa,
                          coalesce::store<&Particle::vel, coalesce::fixed_point<std::int32_t, 28, coalesce::saturate>>>;
  coalesce::device_vector<Particle, clamped> v(p);
  coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = table.largest_cutoff(), .skin = 0.3, .half = true});
  list.build(v, &Particle::pos, b);
  CHECK_NOTHROW((coalesce::compute_pairs<&Particle::pos, &Particle::vel, &Particle::id>(v, list.view(v), b,
                                                                                        lennard_jones{}, table)));
  std::vector<Particle> got(p.size());
  v.copy_to(std::span<Particle>(got));
  std::size_t at_limit = 0;
  for (auto const& q : got) {
    for (float const f : {q.vel.x, q.vel.y, q.vel.z}) {
      CHECK(std::abs(f) <= 8.f);
      at_limit += std::abs(f) >= 7.99f;
    }
  }
  CHECK(at_limit > 0);
}
#endif

TEST_CASE("pair_exclusions refuses a pair out of range or of one particle; compute_pairs refuses another count") {
  using flat = std::vector<std::uint32_t>;
  CHECK_THROWS_WITH_AS(coalesce::pair_exclusions<coalesce::host>(10, flat{0, 1, 3, 10, 4, 5}),
                       doctest::Contains("pair 1 (3, 10) names particle 10, outside the 10 particles"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::pair_exclusions<coalesce::host>(10, flat{0, 1, 4, 5, 12, 2}),
                       doctest::Contains("pair 2 (12, 2) names particle 12"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::pair_exclusions<coalesce::device>(10, flat{0, 1, 7, 7}),
                       doctest::Contains("pair 1 (7, 7) names particle 7 twice"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::pair_exclusions<coalesce::host>(10, flat{0, 1, 2}), doctest::Contains("odd count"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::pair_exclusions<coalesce::host>(
                           10, std::vector<std::array<std::uint32_t, 2>>{{0, 1}, {2, 4294967295u}})),
                       doctest::Contains("names particle 4294967295"), coalesce::error);

  auto const p = liquid(100, 6.f, 4);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> list({.cutoff = 2.5, .skin = 0.3});
  list.build(v, &Particle::pos, b);
  coalesce::pair_exclusions<coalesce::host> const other_count(99, flat{0, 1});
  CHECK_THROWS_WITH_AS(coalesce::compute_pairs(v, &Particle::pos, &Particle::vel, &Particle::id, list.view(v), b,
                                               lennard_jones{}, two_types(), other_count),
                       doctest::Contains("the exclusions were built for 99 particles, the particles are 100"),
                       coalesce::error);
  std::vector<Particle> got(p.size());
  v.copy_to(std::span<Particle>(got));
  bool untouched = true;
  for (auto const& q : got) untouched = untouched && q.vel.x == 7 && q.vel.y == 7 && q.vel.z == 7;
  CHECK(untouched);
}

// A law finite only inside its cutoff (infinite at r = 0 and at the cutoff, NaN beyond): the SIMD
// loop over clusters evaluates the law on every lane, and must not let a masked lane's value in.
struct finite_inside_only {
  struct param_type {
    float rc2;
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const g = 0.01f / (r2 * (q.rc2 - r2));
    return {r2 < q.rc2 ? g : std::numeric_limits<float>::quiet_NaN(), 0.f};
  }
};

TEST_CASE("compute_pairs over cluster_pairs: a law finite only inside its cutoff gives the generic loop's forces") {
  auto const p = spatially_sorted(liquid(600, 10.f, 13));
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  coalesce::pair_table<finite_inside_only::param_type> table(1);
  table.set(0, 0, {.rc2 = 2.5f * 2.5f * 1.001f}, 2.5);  // the law's own edge just past the table's cutoff
  auto const forces = [&]<class Format>(bool half) {
    coalesce::vector<Particle, coalesce::soa, engine_space> v(p);
    coalesce::verlet_list<Format, engine_space> list({.cutoff = 2.5, .skin = 0.3, .half = half});
    list.build(v, &Particle::pos, b);
    coalesce::compute_pairs<&Particle::pos, &Particle::vel>(v, list.view(v), b, finite_inside_only{}, table);
    std::vector<Particle> got(p.size());
    v.copy_to(std::span<Particle>(got));
    return got;
  };
  auto const expected = forces.template operator()<coalesce::padded_columns>(false);
  for (bool const half : {false, true}) {
    CAPTURE(half);
    auto const got = forces.template operator()<coalesce::cluster_pairs>(half);
    double worst = 0, largest = 0;
    bool finite = true;
    for (std::size_t i = 0; i < p.size(); ++i) {
      float const a[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
      float const e[3] = {expected[i].vel.x, expected[i].vel.y, expected[i].vel.z};
      for (int d = 0; d < 3; ++d) {
        finite = finite && std::isfinite(a[d]);
        worst = std::max(worst, double(std::abs(a[d] - e[d])));
        largest = std::max(largest, double(std::abs(e[d])));
      }
    }
    CHECK(finite);
    CHECK(worst <= 1e-4 * largest + 1e-6);  // float sums in another order (half: reactions)
  }
}

TEST_CASE("fast_reciprocal on the host is the division, in float and double") {
  for (float const x : {1e-6f, 0.37f, 1.0f, 2.5f, 6.25f, 1e6f}) CHECK(coalesce::fast_reciprocal(x) == 1.0f / x);
  for (double const x : {1e-6, 0.37, 6.25, 1e6}) CHECK(coalesce::fast_reciprocal(x) == 1.0 / x);
}
