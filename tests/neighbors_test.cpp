// coalesce::verlet_list: every format holds exactly the pairs within cutoff + skin (against an
// O(N^2) search with the same arithmetic), in a fixed order, on host and device memory (GPU
// memory in CUDA builds), every layout of the positions; half lists hold each pair once; bad
// input writes nothing; the displacement criterion; growth instead of truncation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using coalesce_test::vec3;
using namespace coalesce_test::neighbor_cases;

namespace {

template <class Format, class Space, class Layout>
rows_t build_rows(std::vector<Particle> const& p, coalesce::box const& b, std::array<bool, 3> periodic,
                  coalesce::list_params params) {
  coalesce::vector<Particle, Layout, Space> v(p);
  coalesce::verlet_list<Format, Space> list(params);
  list.build(v, &Particle::pos, b, periodic);
  CHECK(list.size() == p.size());
  auto const rows = list.rows_on_host();
  std::size_t entries = 0, widest = 0;
  for (auto const& r : rows) {
    entries += r.size();
    widest = std::max(widest, r.size());
  }
  CHECK(list.entries() == entries);
  CHECK(list.widest() == widest);
  if constexpr (std::is_same_v<Format, coalesce::padded_columns> || std::is_same_v<Format, coalesce::padded_rows>) {
    CHECK(list.width() >= widest);
  }
  CHECK(list.fill() <= 1.0);
  if constexpr (std::is_same_v<Format, coalesce::clusters>) {
    CHECK(list.candidates() >= entries);  // every neighbour is among the tested candidates
  }
  return rows;
}

// The whole binary reports itself skipped in a CUDA build without a GPU (test_main.cpp), so
// device memory is always usable here.
template <class Space> constexpr bool space_usable() { return true; }

template <class Format, class Space, class Layout> void check_case(char const* what, std::vector<Particle> const& p,
                                                                   coalesce::box const& b, std::array<bool, 3> periodic,
                                                                   coalesce::list_params params) {
  CAPTURE(what);
  CAPTURE(params.half);
  auto const expected = brute_force(p, b, periodic, params.cutoff + params.skin, params.half);
  auto const got = build_rows<Format, Space, Layout>(p, b, periodic, params);
  CHECK(sorted_rows(got) == expected);
  // The fixed order: a second build gives the same rows, entry for entry.
  CHECK(build_rows<Format, Space, Layout>(p, b, periodic, params) == got);
}

template <class Format, class Space, class Layout> void check_all_cases() {
  if (!space_usable<Space>()) return;
  coalesce::box const periodic_box{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  std::array<bool, 3> const all{true, true, true}, none{false, false, false}, slab{false, true, true};
  for (bool half : {false, true}) {
    coalesce::list_params const params{.cutoff = 1.0, .skin = 0.2, .half = half};
    check_case<Format, Space, Layout>("random, periodic", random_particles(700, 0.0f, 6.0f, 3), periodic_box, all,
                                      params);
    check_case<Format, Space, Layout>("clustered, periodic, on and past every face", clustered_particles(500, 6.0f, 5),
                                      periodic_box, all, params);
    check_case<Format, Space, Layout>("random, open box", random_particles(400, 0.0f, 6.0f, 7), periodic_box, none,
                                      params);
    check_case<Format, Space, Layout>("random, periodic in y and z only", random_particles(400, 0.0f, 6.0f, 9),
                                      periodic_box, slab, params);
    // Two cells per axis (cutoff + skin = half the box): offsets -1 and +1 reach one cell under two images.
    coalesce::list_params const wide{.cutoff = 2.5, .skin = 0.5, .half = half};
    check_case<Format, Space, Layout>("two cells per axis", random_particles(150, 0.0f, 6.0f, 11), periodic_box, all,
                                      wide);
    // One cell: an open box smaller than the reach.
    coalesce::box const small{.lo = {0, 0, 0}, .hi = {0.8, 0.8, 0.8}};
    check_case<Format, Space, Layout>("one cell, open", random_particles(60, 0.0f, 0.8f, 13), small, none, params);
    // Sparse: most cells empty.
    coalesce::box const large{.lo = {0, 0, 0}, .hi = {40, 40, 40}};
    check_case<Format, Space, Layout>("sparse, empty cells", random_particles(300, 0.0f, 40.0f, 15), large, all,
                                      params);
    check_case<Format, Space, Layout>("one particle", random_particles(1, 0.0f, 6.0f, 17), periodic_box, all, params);
  }
}

}  // namespace

TEST_CASE_TEMPLATE(
    "every list format holds exactly the pairs within cutoff + skin, in a fixed order, host and device memory", Format,
    coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters) {
  check_all_cases<Format, coalesce::host, coalesce::soa>();
  check_all_cases<Format, coalesce::device, coalesce::soa>();
  check_all_cases<Format, coalesce::host, coalesce::aos>();
  check_all_cases<Format, coalesce::device, coalesce_test::split_first>();
  check_all_cases<Format, coalesce::device, coalesce::aosoa<8>>();
}

TEST_CASE("a half list holds each pair of the full list once; host and device builds are the same list") {
  auto const p = random_particles(2000, 0.0f, 9.0f, 21);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {9, 9, 9}};
  std::array<bool, 3> const all{true, true, true};
  auto const full =
      build_rows<coalesce::padded_columns, coalesce::host, coalesce::soa>(p, b, all, {.cutoff = 1.2, .skin = 0.3});
  auto const half =
      build_rows<coalesce::csr, coalesce::host, coalesce::soa>(p, b, all, {.cutoff = 1.2, .skin = 0.3, .half = true});
  std::set<std::pair<std::uint32_t, std::uint32_t>> from_full, from_half;
  std::size_t half_entries = 0;
  for (std::uint32_t i = 0; i < full.size(); ++i) {
    for (auto j : full[i]) from_full.insert({std::min(i, j), std::max(i, j)});
    for (auto j : half[i]) {
      CHECK(j > i);
      from_half.insert({i, j});
      ++half_entries;
    }
  }
  CHECK(half_entries == from_half.size());  // no pair twice
  CHECK(from_full == from_half);
  if (space_usable<coalesce::device>()) {
    CHECK(build_rows<coalesce::padded_columns, coalesce::device, coalesce::soa>(p, b, all,
                                                                                {.cutoff = 1.2, .skin = 0.3}) == full);
    CHECK(build_rows<coalesce::csr, coalesce::device, coalesce::aos>(
              p, b, all, {.cutoff = 1.2, .skin = 0.3, .half = true}) == half);
  }
}

TEST_CASE("bad input is refused with a message and writes nothing") {
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  auto p = random_particles(100, 0.0f, 6.0f, 23);
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::padded_rows, coalesce::host> list({.cutoff = 1.0, .skin = 0.2});
  list.build(v, &Particle::pos, b);
  auto const before = list.rows_on_host();
  auto const refused = [&](std::vector<Particle> const& q, coalesce::box const& box, coalesce::list_params params,
                           char const* words) {
    coalesce::host_vector<Particle> w(q);
    coalesce::verlet_list<coalesce::padded_rows, coalesce::host> other(params);
    CHECK_THROWS_WITH_AS(other.build(w, &Particle::pos, box), doctest::Contains(words), coalesce::error);
  };
  auto nan = p;
  nan[37].pos.y = std::numeric_limits<float>::quiet_NaN();
  refused(nan, b, {.cutoff = 1.0}, "particle 37");
  coalesce::box open = b;
  open.edges = coalesce::boundary::open;
  auto outside = p;
  outside[5].pos.z = 6.5f;
  refused(outside, open, {.cutoff = 1.0}, "particle 5 at");
  refused(outside, open, {.cutoff = 1.0}, "outside the open box along axis 2");
  refused(p, b, {.cutoff = 0.0}, "the cutoff must be positive");
  refused(p, b, {.cutoff = 1.0, .skin = -0.1}, "the skin must be");
  refused(p, b, {.cutoff = 2.9, .skin = 0.2}, "more than half the periodic box");
  // A failed rebuild leaves the list as it was.
  coalesce::host_vector<Particle> bad(nan);
  CHECK_THROWS_AS(list.build(bad, &Particle::pos, b), coalesce::error);
  CHECK(list.rows_on_host() == before);
  // An empty set: an empty list.
  coalesce::host_vector<Particle> none(std::size_t{0});
  list.build(none, &Particle::pos, b);
  CHECK(list.size() == 0);
  CHECK(list.entries() == 0);
}

TEST_CASE("a padded list grows when a row outgrows it, never truncates; the displacement criterion") {
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  std::array<bool, 3> const all{true, true, true};
  auto sparse = random_particles(400, 0.0f, 10.0f, 31);
  coalesce::device_vector<Particle> v(sparse);
  if (!space_usable<coalesce::device>()) return;
  coalesce::verlet_list<coalesce::padded_columns> list({.cutoff = 1.0, .skin = 0.4});
  CHECK(list.needs_rebuild(v, &Particle::pos));  // never built
  list.build(v, &Particle::pos, b);
  std::size_t const first_width = list.width();
  // Crowd 60 particles around one point: the widest row grows past the width.
  auto dense = sparse;
  for (std::size_t i = 0; i < 60; ++i)
    dense[i].pos = {5.0f + 0.01f * static_cast<float>(i % 7), 5.0f + 0.01f * static_cast<float>(i % 5), 5.0f};
  coalesce::device_vector<Particle> w(dense);
  list.build(w, &Particle::pos, b);
  CHECK(list.widest() >= 59);
  CHECK(list.width() > first_width);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(dense, b, all, 1.4, false));
  // Displacement: nothing moved; then one particle moves 0.15 (< skin/2 = 0.2), then 0.25 (more).
  CHECK_FALSE(list.needs_rebuild(w, &Particle::pos));
  CHECK(list.max_displacement(w, &Particle::pos) == 0.0);
  auto moved = dense;
  moved[100].pos.x += 0.15f;
  coalesce::device_vector<Particle> m1(moved);
  CHECK_FALSE(list.needs_rebuild(m1, &Particle::pos));
  CHECK(std::abs(list.max_displacement(m1, &Particle::pos) - 0.15) < 1e-5);
  moved[200].pos.y -= 0.25f;
  coalesce::device_vector<Particle> m2(moved);
  CHECK(list.needs_rebuild(m2, &Particle::pos));
  // Across the periodic boundary: 9.95 -> 0.05 is a move of 0.1, not 9.9.
  auto across = dense;
  across[300].pos.x = 9.95f;
  coalesce::device_vector<Particle> a1(across);
  list.build(a1, &Particle::pos, b);
  across[300].pos.x = 0.05f;
  coalesce::device_vector<Particle> a2(across);
  CHECK(std::abs(list.max_displacement(a2, &Particle::pos) - 0.1) < 1e-5);
  // Another particle count: rebuild.
  coalesce::device_vector<Particle> fewer(std::vector<Particle>(dense.begin(), dense.begin() + 100));
  CHECK(list.needs_rebuild(fewer, &Particle::pos));
}

TEST_CASE_TEMPLATE(
    "rows for the first particles only: those rows as the full list has them, every particle a neighbour", Format,
    coalesce::padded_columns, coalesce::padded_rows, coalesce::csr) {
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  auto const p = random_particles(500, 0.0f, 6.0f, 51);
  if (!space_usable<coalesce::device>()) return;
  for (bool half : {false, true}) {
    coalesce::device_vector<Particle> v(p);
    coalesce::verlet_list<Format> full({.cutoff = 1.0, .skin = 0.3, .half = half});
    full.build(v, &Particle::pos, b);
    auto const all_rows = full.rows_on_host();
    for (std::size_t rows : {std::size_t{0}, std::size_t{1}, std::size_t{217}, std::size_t{500}}) {
      CAPTURE(half);
      CAPTURE(rows);
      coalesce::verlet_list<Format> some({.cutoff = 1.0, .skin = 0.3, .half = half});
      some.build(v, &Particle::pos, b, coalesce::list_rows{rows});
      CHECK(some.size() == rows);
      CHECK(some.built_over() == 500);
      CHECK(some.rows_on_host() == rows_t(all_rows.begin(), all_rows.begin() + static_cast<std::ptrdiff_t>(rows)));
      auto const nl = some.view(v);  // checked against the 500 particles it was built over
      CHECK(nl.size() == rows);
      CHECK_FALSE(some.needs_rebuild(v, &Particle::pos));
      // Host memory builds the same rows.
      coalesce::vector<Particle> h(p);
      coalesce::verlet_list<Format, coalesce::host> on_host({.cutoff = 1.0, .skin = 0.3, .half = half});
      on_host.build(h, &Particle::pos, b, coalesce::list_rows{rows});
      CHECK(on_host.rows_on_host() == some.rows_on_host());
    }
  }
  // A kernel's traversal over rows for the first 300: every row's neighbours as the full list has
  // them (host loop: the traversal is the same code on the GPU).
  {
    coalesce::vector<Particle> h(p);
    coalesce::verlet_list<Format, coalesce::host> some({.cutoff = 1.0, .skin = 0.3});
    some.build(h, &Particle::pos, b, coalesce::list_rows{300});
    coalesce::verlet_list<Format, coalesce::host> full({.cutoff = 1.0, .skin = 0.3});
    full.build(h, &Particle::pos, b);
    auto const nl = some.view(h);
    auto const all = full.rows_on_host();
    std::vector<std::uint64_t> sums(300, 0), expected(300, 0);
    std::uint64_t* out = sums.data();
    coalesce::for_each_index(coalesce::host{}, nl.size(), [=](std::size_t i) {
      coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { out[i] = out[i] * 1000003u + j; });
    });
    for (std::size_t i = 0; i < 300; ++i)
      for (std::uint32_t j : all[i]) expected[i] = expected[i] * 1000003u + j;
    CHECK(sums == expected);
    if constexpr (!std::is_same_v<Format, coalesce::csr>) {
      CHECK_THROWS_WITH_AS((void)some.as_neighbor_list(), doctest::Contains("a row per particle"), coalesce::error);
    }
    // A particle without a row that moves more than skin / 2 still asks for a rebuild.
    auto moved = p;
    moved[400].pos.x += 0.2f;
    coalesce::vector<Particle> m(moved);
    CHECK(some.needs_rebuild(m, &Particle::pos));
  }
  coalesce::device_vector<Particle> v(p);
  coalesce::verlet_list<Format> list({.cutoff = 1.0, .skin = 0.3});
  CHECK_THROWS_WITH_AS(list.build(v, &Particle::pos, b, coalesce::list_rows{501}),
                       doctest::Contains("at most the particle count"), coalesce::error);
  coalesce::verlet_list<coalesce::clusters> clusters({.cutoff = 1.0, .skin = 0.3});
  CHECK_THROWS_WITH_AS(clusters.build(v, &Particle::pos, b, coalesce::list_rows{100}),
                       doctest::Contains("a row for every particle"), coalesce::error);
}

TEST_CASE_TEMPLATE("rebuilds whose particle count wanders a little allocate nothing", Format, coalesce::padded_columns,
                   coalesce::padded_rows, coalesce::csr) {
  // A dense block of 1000 particles and up to 60 more spread thinly beside it (as ghosts come and
  // go between rebuilds): the widest row stays in the dense block, the count moves by 6 %.
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {20, 10, 10}, .edges = coalesce::boundary::open};
  auto const dense = random_particles(1000, 0.0f, 10.0f, 41);
  auto const thin = random_particles(60, 0.0f, 10.0f, 43);
  auto with_extra = [&](std::size_t extra) {
    auto p = dense;
    for (std::size_t k = 0; k < extra; ++k) {
      p.push_back(thin[k]);
      p.back().pos.x += 10.0f;
    }
    return p;
  };
  if (!space_usable<coalesce::device>()) return;
  coalesce::verlet_list<Format> list({.cutoff = 1.0, .skin = 0.3});
  coalesce::device_vector<Particle> first(with_extra(0));
  list.build(first, &Particle::pos, b);
  std::uint64_t const after_first = list.allocations();
  CHECK(after_first > 0);
  for (std::size_t extra : {30, 60, 10, 45, 0}) {
    CAPTURE(extra);
    auto const p = with_extra(extra);
    coalesce::device_vector<Particle> v(p);
    list.build(v, &Particle::pos, b);
    CHECK(list.allocations() == after_first);
    CHECK(sorted_rows(list.rows_on_host()) == brute_force(p, b, {false, false, false}, 1.3, false));
  }
  // Twice the particles: the buffers grow (an allocation, not a truncated list).
  auto doubled = with_extra(60);
  auto const more = random_particles(1000, 0.0f, 10.0f, 47);
  doubled.insert(doubled.end(), more.begin(), more.end());
  coalesce::device_vector<Particle> big(doubled);
  list.build(big, &Particle::pos, b);
  CHECK(list.allocations() > after_first);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(doubled, b, {false, false, false}, 1.3, false));
}

TEST_CASE("csr rebuilds stage rows in chunks: exact after moves, a row past the staging, entries past the capacity") {
  // In GPU memory a csr rebuild stages rows at the last widest row and packs them chunk by chunk;
  // 97 rows per chunk crosses chunk boundaries at these sizes. Host memory runs the same checks.
  struct chunk_setting {
    std::size_t before = coalesce::detail::set_staged_chunk_rows(97);
    ~chunk_setting() { coalesce::detail::set_staged_chunk_rows(before); }
  } const setting;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {8, 8, 8}};
  std::array<bool, 3> const all{true, true, true};
  if (!space_usable<coalesce::device>()) return;
  for (bool half : {false, true}) {
    CAPTURE(half);
    double const reach = 1.3;
    coalesce::verlet_list<coalesce::csr> list({.cutoff = 1.0, .skin = 0.3, .half = half});
    auto p = random_particles(700, 0.0f, 8.0f, 61);
    auto const check_build = [&](char const* what) {
      CAPTURE(what);
      coalesce::device_vector<Particle> v(p);
      list.build(v, &Particle::pos, b);
      auto const rows = list.rows_on_host();
      CHECK(sorted_rows(rows) == brute_force(p, b, all, reach, half));
      // The same rows, entry for entry, as a first build of a fresh list.
      coalesce::verlet_list<coalesce::csr> fresh({.cutoff = 1.0, .skin = 0.3, .half = half});
      fresh.build(v, &Particle::pos, b);
      CHECK(rows == fresh.rows_on_host());
      CHECK(list.entries() == fresh.entries());
      CHECK(list.widest() == fresh.widest());
    };
    check_build("first build");
    check_build("the same particles again");
    std::mt19937 rng(63);
    std::uniform_real_distribution<float> jitter(-0.15f, 0.15f);
    for (auto& q : p) q.pos = {q.pos.x + jitter(rng), q.pos.y + jitter(rng), q.pos.z + jitter(rng)};
    check_build("after every particle moved");
    for (std::size_t i = 0; i < 60; ++i)
      p[i].pos = {4.0f + 0.01f * static_cast<float>(i % 7), 4.0f + 0.01f * static_cast<float>(i % 5), 4.0f};
    check_build("a row wider than the staging");
    auto const more = random_particles(1400, 0.0f, 8.0f, 65);
    p.insert(p.end(), more.begin(), more.end());
    check_build("three times the entries: past the capacity");
    p.resize(5);
    check_build("five particles");
    p.clear();
    coalesce::device_vector<Particle> none(p);
    list.build(none, &Particle::pos, b);
    CHECK(list.entries() == 0);
    p = random_particles(300, 0.0f, 8.0f, 67);
    check_build("after an empty set");
  }
}

TEST_CASE("a padded list is a neighbor_list description: remap and the traversal read it") {
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {8, 8, 8}};
  auto const p = random_particles(500, 0.0f, 8.0f, 41);
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::padded_rows, coalesce::host> list({.cutoff = 1.0, .skin = 0.3});
  list.build(v, &Particle::pos, b);
  auto const description = list.as_neighbor_list();
  CHECK(description.particles == 500);
  CHECK(description.max_neighbors == list.width());
  // The one traversal, on the host: every neighbour once, in row order.
  auto const nl = list.view();
  auto const rows = list.rows_on_host();
  bool same = true;
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::vector<std::uint32_t> seen;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { seen.push_back(j); });
    same = same && seen == rows[i];
  }
  CHECK(same);
}

TEST_CASE("clusters: a few bytes per particle after a Hilbert sort, the padded list's pairs, random order refused") {
  // LJ-like density (0.84 per unit volume), reach 1.5: about 12 neighbours per particle.
  std::size_t const n = 40000;
  float const side = std::cbrt(static_cast<float>(n) / 0.84f);
  auto const p = random_particles(n, 0.0f, side, 31);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side, side, side}};
  coalesce::list_params const params{.cutoff = 1.2, .skin = 0.3};
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::clusters, coalesce::host> list(params);
  CHECK_THROWS_WITH_AS(list.build(v, &Particle::pos, b), doctest::Contains("not in a spatial order"), coalesce::error);
  CHECK(list.size() == 0);  // refused before anything was written
  coalesce::reorder_plan plan;
  auto const keys = coalesce::hilbert_keys(v, &Particle::pos, b, plan);
  coalesce::sort_by_key(v, keys, plan);
  list.build(v, &Particle::pos, b);
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> padded(params);
  padded.build(v, &Particle::pos, b);
  CHECK(sorted_rows(list.rows_on_host()) == sorted_rows(padded.rows_on_host()));
  CHECK(list.entries() == padded.entries());
  double const bytes_per_particle = static_cast<double>(list.bytes()) / static_cast<double>(n);
  CAPTURE(bytes_per_particle);
  CAPTURE(list.fill());
  CHECK(bytes_per_particle < 8.0);
  CHECK(bytes_per_particle * 10 < static_cast<double>(padded.bytes()) / static_cast<double>(n));
  // A traversal in a kernel: the same neighbour count per particle as the padded list's.
  auto const nl = list.view();
  auto const pl = padded.view();
  std::size_t differing = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t k = 0;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t) { ++k; });
    differing += k != pl.count(i);
  }
  CHECK(differing == 0);
  if (space_usable<coalesce::device>()) {
    coalesce::device_vector<Particle> d(v);
    coalesce::verlet_list<coalesce::clusters> on_device(params);
    on_device.build(d, &Particle::pos, b);
    CHECK(on_device.rows_on_host() == list.rows_on_host());  // host and GPU memory: the same runs and rows
    CHECK(on_device.bytes() == list.bytes());
  }
}

// docs/neighbors.md: one traversal for every format. A kernel written against count(i) and
// neighbor(i, k), as for the padded formats, compiles and gives for_each_neighbor's rows on every
// format's view, clusters included (there slowly: each call tests the cluster's candidates again).
template <class ListView>
concept one_traversal = requires(ListView const& l, std::size_t i, std::uint32_t k) {
  { l.size() } -> std::convertible_to<std::size_t>;
  { l.count(i) } -> std::convertible_to<std::uint32_t>;
  { l.neighbor(i, k) } -> std::convertible_to<std::uint32_t>;
};
static_assert(one_traversal<coalesce::verlet_list_ref<coalesce::padded_columns>>);
static_assert(one_traversal<coalesce::verlet_list_ref<coalesce::padded_rows>>);
static_assert(one_traversal<coalesce::verlet_list_ref<coalesce::csr>>);
static_assert(one_traversal<coalesce::verlet_list_ref<coalesce::clusters>>);

TEST_CASE_TEMPLATE("count(i) and neighbor(i, k) give for_each_neighbor's rows on every format", Format,
                   coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters) {
  std::size_t const n = 3001;  // a partial last cluster
  float const side = std::cbrt(static_cast<float>(n) / 0.84f);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side, side, side}};
  coalesce::host_vector<Particle> v(random_particles(n, 0.0f, side, 41));
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, coalesce::hilbert_keys(v, &Particle::pos, b, plan), plan);
  for (bool half : {false, true}) {
    CAPTURE(half);
    coalesce::verlet_list<Format, coalesce::host> list({.cutoff = 1.2, .skin = 0.3, .half = half});
    list.build(v, &Particle::pos, b);
    auto const nl = list.view();
    auto const rows = list.rows_on_host();
    std::size_t differing = 0, entries = 0;
    for (std::size_t i = 0; i < nl.size(); ++i) {
      std::vector<std::uint32_t> traversed, indexed;
      coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { traversed.push_back(j); });
      for (std::uint32_t k = 0; k < nl.count(i); ++k) indexed.push_back(nl.neighbor(i, k));
      differing += traversed != indexed || traversed != rows[i];
      entries += indexed.size();
    }
    CHECK(differing == 0);
    CHECK(entries == list.entries());
    CHECK(entries > n);  // rows to compare
  }
}

TEST_CASE_TEMPLATE("a list read after the particles were reordered is refused, not read; needs_rebuild says so", Space,
                   coalesce::host, coalesce::device) {
  if (!space_usable<Space>()) return;
  auto const p = random_particles(3000, 0.0f, 12.0f, 41);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {12, 12, 12}};
  coalesce::vector<Particle, coalesce::soa, Space> v(p);
  coalesce::verlet_list<coalesce::padded_columns, Space> list({.cutoff = 1.0, .skin = 0.3});
  list.build(v, &Particle::pos, b);
  CHECK_NOTHROW((void)list.view(v));
  CHECK_FALSE(list.needs_rebuild(v, &Particle::pos));
  // A copy holds the same particles in the same order: the list stays valid for it.
  coalesce::vector<Particle, coalesce::aos, Space> copy = v;
  CHECK(copy.order_stamp() == v.order_stamp());
  coalesce::reorder_plan plan;
  auto const keys = coalesce::hilbert_keys(v, &Particle::pos, b, plan);
  coalesce::sort_by_key(v, keys, plan);  // same positions, other indices: the displacement is zero
  CHECK(copy.order_stamp() != v.order_stamp());
  CHECK(list.needs_rebuild(v, &Particle::pos));
  CHECK_THROWS_WITH_AS((void)list.view(v), doctest::Contains("reordered"), coalesce::error);
  CHECK_THROWS_WITH_AS((void)list.max_displacement(v, &Particle::pos), doctest::Contains("reordered"), coalesce::error);
  list.build(v, &Particle::pos, b);
  CHECK_NOTHROW((void)list.view(v));
  coalesce::apply(plan, v);  // apply permutes too
  CHECK_THROWS_AS((void)list.view(v), coalesce::error);
  list.build(v, &Particle::pos, b);
  v.resize(v.size() - 1);  // fewer particles
  CHECK(list.needs_rebuild(v, &Particle::pos));
  CHECK_THROWS_WITH_AS((void)list.view(v), doctest::Contains("built for 3000"), coalesce::error);
}

// refill: the rebuild a CUDA graph can hold (nothing read back). In GPU memory what build() checks
// waits for check(); in host memory refill is build() and checks at once.
TEST_CASE_TEMPLATE("refill rebuilds into the same width; check() reports cut rows and bad positions", Space,
                   coalesce::host, coalesce::device) {
  if (!space_usable<Space>()) return;
  bool const deferred = coalesce::device_is_gpu && std::is_same_v<Space, coalesce::device>;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  std::array<bool, 3> const all{true, true, true};
  auto const start = random_particles(2000, 0.0f, 10.0f, 53);
  coalesce::vector<Particle, coalesce::soa, Space> v(start);
  coalesce::verlet_list<coalesce::padded_columns, Space> list({.cutoff = 1.0, .skin = 0.3});
  CHECK_THROWS_WITH_AS(list.refill(v, &Particle::pos, b), doctest::Contains("needs a build()"), coalesce::error);
  list.reserve_width(40);  // room for rows that grow between builds
  list.build(v, &Particle::pos, b);
  CHECK(list.width() >= 40);
  std::size_t const width = list.width();
  std::uint64_t const builds = list.builds();
  std::uint64_t const allocations = list.allocations();
  // Every particle moves a little (some across the periodic faces): the refilled rows are a fresh build's.
  auto moved = start;
  for (std::size_t i = 0; i < moved.size(); ++i) {
    moved[i].pos.x += 0.2f * std::sin(static_cast<float>(i));
    moved[i].pos.y -= 0.15f * std::cos(static_cast<float>(3 * i));
    if (i % 97 == 0) moved[i].pos.z = 9.99f;
  }
  coalesce::vector<Particle, coalesce::soa, Space> w(moved);
  list.refill(w, &Particle::pos, b);
  CHECK_NOTHROW(list.check());
  CHECK(list.builds() == builds + 1);
  CHECK(list.allocations() == allocations);
  CHECK(list.width() == width);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(moved, b, all, 1.3, false));
  coalesce::verlet_list<coalesce::padded_columns, Space> fresh({.cutoff = 1.0, .skin = 0.3});
  fresh.reserve_width(40);
  fresh.build(w, &Particle::pos, b);
  CHECK(list.rows_on_host() == fresh.rows_on_host());  // entry for entry
  CHECK(list.widest() >= fresh.widest());  // after check(): the widest row since the build (refills' and the build's)
  CHECK(list.widest() <= list.width());
  CHECK(list.entries() == fresh.entries());
  CHECK_FALSE(list.needs_rebuild(w, &Particle::pos));  // the reference positions moved with the refill
  // Another count, another box: refused with what to do.
  coalesce::vector<Particle, coalesce::soa, Space> fewer(std::vector<Particle>(moved.begin(), moved.begin() + 100));
  CHECK_THROWS_WITH_AS(list.refill(fewer, &Particle::pos, b), doctest::Contains("same particle count"),
                       coalesce::error);
  coalesce::box const other{.lo = {0, 0, 0}, .hi = {11, 10, 10}};
  CHECK_THROWS_WITH_AS(list.refill(w, &Particle::pos, other), doctest::Contains("build()"), coalesce::error);

  // 80 particles crowded around one point: rows outgrow the width.
  auto crowded = moved;
  for (std::size_t i = 0; i < 80; ++i)
    crowded[i].pos = {5.0f + 0.01f * static_cast<float>(i % 7), 5.0f + 0.01f * static_cast<float>(i % 5), 5.0f};
  coalesce::vector<Particle, coalesce::soa, Space> c(crowded);
  list.refill(c, &Particle::pos, b);
  if (deferred) {
    // Queued without a read-back: check() finds the cut rows, and the list refuses to be read.
    CHECK_THROWS_WITH_AS(list.check(), doctest::Contains("more than the list's width"), coalesce::error);
    CHECK(list.widest() >= 79);
    CHECK_THROWS_WITH_AS((void)list.view(c), doctest::Contains("cut"), coalesce::error);
    CHECK(list.needs_rebuild(c, &Particle::pos));
    CHECK_THROWS_WITH_AS(list.refill(c, &Particle::pos, b), doctest::Contains("build()"), coalesce::error);
    // The cut rows hold their first width() entries, and count(i) says width(): nothing past a row.
    auto const cut = list.rows_on_host();
    auto const full = brute_force(crowded, b, all, 1.3, false);
    std::size_t over = 0;
    for (std::size_t i = 0; i < cut.size(); ++i) {
      CHECK(cut[i].size() == std::min(full[i].size(), width));
      over += full[i].size() > width;
    }
    CHECK(over > 0);
    list.build(c, &Particle::pos, b);  // grows the width: usable again
  } else {
    CHECK_NOTHROW(list.check());  // host memory: refill is build(), which grew the width
  }
  CHECK(list.width() > width);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(crowded, b, all, 1.3, false));
  CHECK_NOTHROW((void)list.view(c));

  // A position that is not finite: named by check() (GPU memory) or by refill itself (host memory).
  auto bad = crowded;
  bad[1234].pos.y = std::numeric_limits<float>::quiet_NaN();
  coalesce::vector<Particle, coalesce::soa, Space> nan(bad);
  if (deferred) {
    list.refill(nan, &Particle::pos, b);
    CHECK_THROWS_WITH_AS(list.check(), doctest::Contains("particle 1234"), coalesce::error);
    CHECK_THROWS_AS((void)list.view(nan), coalesce::error);
  } else {
    CHECK_THROWS_WITH_AS(list.refill(nan, &Particle::pos, b), doctest::Contains("particle 1234"), coalesce::error);
  }
  // Graph conditions are a GPU kernel's: a host list says so.
  if (!deferred) {
    CHECK_THROWS_WITH_AS(list.set_rebuild_condition(c, &Particle::pos, coalesce::graph_condition{}),
                         doctest::Contains("needs_rebuild"), coalesce::error);
  }
}

// Positions stored as 32-bit fixed point (stored_as): keys and neighbour lists read them as the
// member's converting reference does, so they give what the decoded float positions give.
TEST_CASE_TEMPLATE("keys and lists read positions stored as fixed_point<int32_t, F> as their decoded floats", Space,
                   coalesce::host, coalesce::device) {
  if (!space_usable<Space>()) return;
  using fixed_positions =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::fixed_point<std::int32_t, 20>>>;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {12, 12, 12}};
  auto p = random_particles(3000, 0.0f, 12.0f, 61);
  for (std::size_t i = 0; i < p.size(); ++i) p[i].id = static_cast<std::uint32_t>(i);
  coalesce::vector<Particle, fixed_positions, Space> fixed(p);
  std::vector<Particle> decoded(p.size());
  fixed.copy_to(std::span<Particle>(decoded));
  std::size_t rounded = 0;
  for (std::size_t i = 0; i < p.size(); ++i) rounded += decoded[i].pos.x != p[i].pos.x;
  CHECK(rounded > 0);  // the fixed-point grid is not float's: the comparison below is not trivial
  coalesce::vector<Particle, coalesce::soa, Space> plain(decoded);

  coalesce::verlet_list<coalesce::padded_columns, Space> from_fixed({.cutoff = 1.0, .skin = 0.3});
  coalesce::verlet_list<coalesce::padded_columns, Space> from_plain({.cutoff = 1.0, .skin = 0.3});
  from_fixed.build(fixed, &Particle::pos, b);
  from_plain.build(plain, &Particle::pos, b);
  CHECK(from_fixed.rows_on_host() == from_plain.rows_on_host());  // entry for entry
  CHECK(from_fixed.max_displacement(fixed, &Particle::pos) == 0.0);
  from_fixed.refill(fixed, &Particle::pos, b);
  CHECK_NOTHROW(from_fixed.check());
  CHECK(from_fixed.rows_on_host() == from_plain.rows_on_host());
  coalesce::verlet_list<coalesce::csr, Space> csr_fixed({.cutoff = 1.0, .skin = 0.3, .half = true});
  coalesce::verlet_list<coalesce::csr, Space> csr_plain({.cutoff = 1.0, .skin = 0.3, .half = true});
  csr_fixed.build(fixed, &Particle::pos, b);
  csr_plain.build(plain, &Particle::pos, b);
  CHECK(csr_fixed.rows_on_host() == csr_plain.rows_on_host());

  // Hilbert keys: the same order.
  coalesce::reorder_plan plan_fixed, plan_plain;
  coalesce::sort_by_key(fixed, coalesce::hilbert_keys(fixed, &Particle::pos, b, plan_fixed), plan_fixed);
  coalesce::sort_by_key(plain, coalesce::hilbert_keys(plain, &Particle::pos, b, plan_plain), plan_plain);
  CHECK(plan_fixed.permutation_on_host() == plan_plain.permutation_on_host());
  std::vector<Particle> sorted(p.size());
  fixed.copy_to(std::span<Particle>(sorted));
  bool moved = false;
  for (std::size_t i = 0; i < sorted.size(); ++i) moved = moved || sorted[i].id != i;
  CHECK(moved);

  // An open box: a particle outside it is named with its decoded coordinate.
  auto outside = p;
  outside[5].pos.x = 13.5f;
  coalesce::vector<Particle, fixed_positions, Space> out_of_box(outside);
  CHECK_THROWS_WITH_AS(from_fixed.build(out_of_box, &Particle::pos, b, {false, true, true}),
                       doctest::Contains("particle 5 at (13.5"), coalesce::error);
  // Keys refuse it too outside a clamped box, naming its decoded coordinate.
  coalesce::box const clamped{.lo = {0, 0, 0}, .hi = {12, 12, 12}, .edges = coalesce::boundary::open};
  coalesce::reorder_plan plan_clamped;
  CHECK_THROWS_WITH_AS((void)coalesce::morton_keys(out_of_box, &Particle::pos, clamped, plan_clamped),
                       doctest::Contains("(13.5"), coalesce::error);
  // Migration and halos write them too (tests/mpi); sums of a member (reverse) take it in its own type only.
  CHECK_NOTHROW((void)coalesce::detail::position_columns_of(fixed.storage(), &Particle::pos));
  CHECK_THROWS_WITH_AS((void)coalesce::detail::summed_member_columns_of(fixed.storage(), &Particle::pos),
                       doctest::Contains("reverse() sums a member"), coalesce::error);

  // Integer updates (atomic_add into the member) leave values that are not floats: q = 2^25 - 1 is
  // 4 - 2^-23 exactly, which the member reads as 4.0f. Keys and lists see the float: cell 1 of
  // 4-wide cells, as the decoded positions give, not cell 0.
  using fixed23 =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::fixed_point<std::int32_t, 23>>>;
  coalesce::host_vector<Particle, fixed23> edge_host(p);
  auto const edge_columns = coalesce::detail::readable_position_columns_of(edge_host.storage(), &Particle::pos);
  for (std::size_t i = 0; i < p.size(); i += 7)
    *reinterpret_cast<std::int32_t*>(edge_columns.axis[0].address(i)) = (std::int32_t{1} << 25) - 1;
  coalesce::vector<Particle, fixed23, Space> edge(edge_host);
  std::vector<Particle> edge_decoded(p.size());
  edge.copy_to(std::span<Particle>(edge_decoded));
  CHECK(edge_decoded[0].pos.x == 4.0f);
  coalesce::vector<Particle, coalesce::soa, Space> edge_plain(edge_decoded);
  coalesce::reorder_plan plan_edge, plan_edge_plain;
  coalesce::sort_by_key(edge, coalesce::cell_keys(edge, &Particle::pos, b, 4.0, plan_edge), plan_edge);
  coalesce::sort_by_key(edge_plain, coalesce::cell_keys(edge_plain, &Particle::pos, b, 4.0, plan_edge_plain),
                        plan_edge_plain);
  CHECK(plan_edge.permutation_on_host() == plan_edge_plain.permutation_on_host());
  coalesce::verlet_list<coalesce::padded_rows, Space> edge_list({.cutoff = 1.0, .skin = 0.3}),
      edge_plain_list({.cutoff = 1.0, .skin = 0.3});
  edge_list.build(edge, &Particle::pos, b);
  edge_plain_list.build(edge_plain, &Particle::pos, b);
  CHECK(edge_list.rows_on_host() == edge_plain_list.rows_on_host());
  CHECK(edge_list.max_displacement(edge, &Particle::pos) == 0.0);
}

// Positions stored relative to the vector's box (box_fixed<wrap>: 32-bit fractions, a box whose lo
// is not 0): keys and lists read the float the member's reference reads, so they give what the
// decoded positions give; migration and halos, which write positions, refuse them by name.
TEST_CASE_TEMPLATE("keys and lists read positions stored as box_fixed as their decoded floats", Space, coalesce::host,
                   coalesce::device) {
  if (!space_usable<Space>()) return;
  using boxed_positions =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
  coalesce::box const b{.lo = {-6, -5, -7}, .hi = {6, 7, 5}};
  auto p = random_particles(3000, -5.0f, 5.0f, 67);
  for (std::size_t i = 0; i < p.size(); ++i) p[i].id = static_cast<std::uint32_t>(i);
  coalesce::vector<Particle, boxed_positions, Space> boxed(b);
  boxed.assign(coalesce::vector<Particle, coalesce::soa, Space>(p));
  std::vector<Particle> decoded(p.size());
  boxed.copy_to(std::span<Particle>(decoded));
  std::size_t rounded = 0;
  for (std::size_t i = 0; i < p.size(); ++i) rounded += decoded[i].pos.x != p[i].pos.x;
  CHECK(rounded > 0);  // the box's grid is not float's: the comparisons below are not trivial
  coalesce::vector<Particle, coalesce::soa, Space> plain(decoded);

  coalesce::verlet_list<coalesce::padded_columns, Space> from_boxed({.cutoff = 1.0, .skin = 0.3});
  coalesce::verlet_list<coalesce::padded_columns, Space> from_plain({.cutoff = 1.0, .skin = 0.3});
  from_boxed.build(boxed, &Particle::pos, b);
  from_plain.build(plain, &Particle::pos, b);
  CHECK(from_boxed.rows_on_host() == from_plain.rows_on_host());  // entry for entry
  CHECK(from_boxed.max_displacement(boxed, &Particle::pos) == 0.0);
  from_boxed.refill(boxed, &Particle::pos, b);
  CHECK_NOTHROW(from_boxed.check());
  CHECK(from_boxed.rows_on_host() == from_plain.rows_on_host());
  coalesce::verlet_list<coalesce::csr, Space> csr_boxed({.cutoff = 1.0, .skin = 0.3, .half = true});
  coalesce::verlet_list<coalesce::csr, Space> csr_plain({.cutoff = 1.0, .skin = 0.3, .half = true});
  csr_boxed.build(boxed, &Particle::pos, b);
  csr_plain.build(plain, &Particle::pos, b);
  CHECK(csr_boxed.rows_on_host() == csr_plain.rows_on_host());
  coalesce::verlet_list<coalesce::clusters, Space> clusters_boxed({.cutoff = 1.0, .skin = 0.3});
  coalesce::verlet_list<coalesce::clusters, Space> clusters_plain({.cutoff = 1.0, .skin = 0.3});
  clusters_boxed.build(boxed, &Particle::pos, b);
  clusters_plain.build(plain, &Particle::pos, b);
  CHECK(clusters_boxed.rows_on_host() == clusters_plain.rows_on_host());

  // Hilbert and cell keys: the same order.
  coalesce::reorder_plan plan_boxed, plan_plain;
  coalesce::sort_by_key(boxed, coalesce::hilbert_keys(boxed, &Particle::pos, b, plan_boxed), plan_boxed);
  coalesce::sort_by_key(plain, coalesce::hilbert_keys(plain, &Particle::pos, b, plan_plain), plan_plain);
  CHECK(plan_boxed.permutation_on_host() == plan_plain.permutation_on_host());
  coalesce::sort_by_key(boxed, coalesce::cell_keys(boxed, &Particle::pos, b, 1.5, plan_boxed), plan_boxed);
  coalesce::sort_by_key(plain, coalesce::cell_keys(plain, &Particle::pos, b, 1.5, plan_plain), plan_plain);
  CHECK(plan_boxed.permutation_on_host() == plan_plain.permutation_on_host());
  std::vector<Particle> sorted(p.size()), sorted_plain(p.size());
  boxed.copy_to(std::span<Particle>(sorted));
  plain.copy_to(std::span<Particle>(sorted_plain));
  bool moved = false, same_particles = true;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    moved = moved || sorted[i].id != i;
    same_particles = same_particles && sorted[i].id == sorted_plain[i].id && sorted[i].pos.y == sorted_plain[i].pos.y;
  }
  CHECK(moved);
  CHECK(same_particles);

  // The last steps below hi read as the largest float below it: cell keys put them in the last cell.
  coalesce::host_vector<Particle, boxed_positions> edge_host(b);
  edge_host.assign(coalesce::host_vector<Particle>(p));
  auto const edge_columns = coalesce::detail::readable_position_columns_of(edge_host.storage(), &Particle::pos);
  CHECK(edge_columns.boxed);
  for (std::size_t i = 0; i < p.size(); i += 5)
    *reinterpret_cast<std::uint32_t*>(edge_columns.axis[0].address(i)) = ~0u;
  coalesce::vector<Particle, boxed_positions, Space> edge(edge_host);
  std::vector<Particle> edge_decoded(p.size());
  edge.copy_to(std::span<Particle>(edge_decoded));
  CHECK(edge_decoded[0].pos.x < 6.0f);
  coalesce::vector<Particle, coalesce::soa, Space> edge_plain(edge_decoded);
  coalesce::reorder_plan plan_edge, plan_edge_plain;
  coalesce::sort_by_key(edge, coalesce::cell_keys(edge, &Particle::pos, b, 1.0, plan_edge), plan_edge);
  coalesce::sort_by_key(edge_plain, coalesce::cell_keys(edge_plain, &Particle::pos, b, 1.0, plan_edge_plain),
                        plan_edge_plain);
  CHECK(plan_edge.permutation_on_host() == plan_edge_plain.permutation_on_host());

  // Halo shifts (which write images past the box) and sums of a member refuse box_fixed<wrap>
  // positions by name.
  CHECK_THROWS_WITH_AS((void)coalesce::detail::position_columns_of(boxed.storage(), &Particle::pos),
                       doctest::Contains("wraps at the vector's box"), coalesce::error);
  CHECK_THROWS_WITH_AS((void)coalesce::detail::summed_member_columns_of(boxed.storage(), &Particle::pos),
                       doctest::Contains("reverse() sums a member"), coalesce::error);
}
