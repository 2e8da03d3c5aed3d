// One sort for the particles and the list: verlet_list::cell_keys gives the list's own cells as
// sort keys; after sort_by_key with them the build finds the particles in its cell order and
// skips its sort (cell_sorts() says so), holding exactly the pairs within the reach; keys of
// another grid (coalesce::cell_keys, Hilbert) still give the right list, the list sorting itself.
// Host and device memory (GPU memory in CUDA builds), every format.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

template <class T, class L, class S> std::vector<Particle> on_host(coalesce::vector<T, L, S> const& v) {
  std::vector<Particle> out(v.size());
  v.copy_to(std::span<Particle>(out));
  return out;
}

// Sorts `p` by the list's cells, builds, and checks: no sort by the list, the pairs of the sorted
// particles, a permutation of the particles, each cell's particles where cell_offsets says.
template <class Format, class Space> void check_one_sort(char const* what, std::vector<Particle> const& p,
                                                         coalesce::box const& b, std::array<bool, 3> periodic,
                                                         coalesce::list_params params) {
  CAPTURE(what);
  CAPTURE(params.half);
  coalesce::vector<Particle, coalesce::soa, Space> v(p);
  coalesce::verlet_list<Format, Space> list(params);
  coalesce::reorder_plan plan;
  auto const keys = list.cell_keys(v, &Particle::pos, b, periodic, plan);
  CHECK(keys.size == p.size());
  CHECK(keys.cells == std::uint64_t{keys.grid[0]} * keys.grid[1] * keys.grid[2]);
  coalesce::sort_by_key(v, keys, plan);
  // Each cell's particles start where cell_offsets says (memory of Space: read through a copy).
  auto const in_space = coalesce::cell_offsets(plan, keys);
  REQUIRE(in_space.size() == keys.cells + 1);
  std::vector<std::uint32_t> offsets(in_space.size());
  coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, offsets.data(),
                               coalesce::detail::kind_of_space<Space>, in_space.data(),
                               offsets.size() * sizeof(std::uint32_t));
  CHECK(offsets.back() == p.size());
  for (std::size_t c = 0; c < keys.cells; ++c) CHECK(offsets[c] <= offsets[c + 1]);
  list.build(v, &Particle::pos, b, periodic);
  CHECK(list.cell_sorts() == 0);  // the plan's sort served the list
  auto const sorted = on_host(v);
  std::vector<bool> seen(p.size(), false);
  for (auto const& q : sorted) {
    REQUIRE(q.id < p.size());
    CHECK_FALSE(seen[q.id]);  // a permutation: nothing dropped or duplicated
    seen[q.id] = true;
  }
  auto const expected = brute_force(sorted, b, periodic, params.cutoff + params.skin, params.half);
  auto const rows = list.rows_on_host();
  CHECK(sorted_rows(rows) == expected);
  // A second build of the same particles: the same rows, entry for entry, and still no sort.
  list.build(v, &Particle::pos, b, periodic);
  CHECK(list.rows_on_host() == rows);
  CHECK(list.cell_sorts() == 0);
  // Host and device memory hold the same list.
  coalesce::vector<Particle, coalesce::aos, coalesce::host> h(sorted);
  coalesce::verlet_list<Format, coalesce::host> host_list(params);
  host_list.build(h, &Particle::pos, b, periodic);
  CHECK(host_list.rows_on_host() == rows);
  CHECK(host_list.cell_sorts() == 0);
}

template <class Format, class Space> void check_formats_and_cases() {
  coalesce::box const box6{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  std::array<bool, 3> const all{true, true, true}, none{false, false, false}, slab{false, true, true};
  for (bool half : {false, true}) {
    coalesce::list_params const params{.cutoff = 1.0, .skin = 0.2, .half = half};
    check_one_sort<Format, Space>("random, periodic", random_particles(700, 0.0f, 6.0f, 3), box6, all, params);
    check_one_sort<Format, Space>("clustered, on and past every face", clustered_particles(500, 6.0f, 5), box6, all,
                                  params);
    check_one_sort<Format, Space>("random, open box", random_particles(400, 0.0f, 6.0f, 7), box6, none, params);
    check_one_sort<Format, Space>("periodic in y and z only", random_particles(400, 0.0f, 6.0f, 9), box6, slab, params);
    // Many more cells than particles: the build's grid coarsens, and the keys' grid with it.
    coalesce::box const large{.lo = {0, 0, 0}, .hi = {40, 40, 40}};
    check_one_sort<Format, Space>("sparse, coarsened grid", random_particles(60, 0.0f, 40.0f, 15), large, all, params);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("verlet_list::cell_keys + sort_by_key: the build sorts nothing and holds the same pairs", Format,
                   coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters) {
  check_formats_and_cases<Format, coalesce::host>();
  check_formats_and_cases<Format, coalesce::device>();
}

TEST_CASE_TEMPLATE("particles in another order: the list sorts itself and is still right", Space, coalesce::host,
                   coalesce::device) {
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {9, 9, 9}};
  std::array<bool, 3> const all{true, true, true};
  coalesce::list_params const params{.cutoff = 1.2, .skin = 0.3};
  auto const p = random_particles(2000, 0.0f, 9.0f, 71);
  coalesce::vector<Particle, coalesce::soa, Space> v(p);
  coalesce::verlet_list<coalesce::padded_columns, Space> list(params);
  list.build(v, &Particle::pos, b);  // random order
  CHECK(list.cell_sorts() == 1);
  // Cell keys of another grid (cells of 1.0, not the list's 1.5): in order for those cells, not
  // for the list's, so the list sorts, and its rows are those of the particles as they are.
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, coalesce::cell_keys(v, &Particle::pos, b, 1.0, plan), plan);
  list.build(v, &Particle::pos, b);
  CHECK(list.cell_sorts() == 2);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(on_host(v), b, all, 1.5, false));
  // Hilbert order: the same.
  coalesce::sort_by_key(v, coalesce::hilbert_keys(v, &Particle::pos, b, plan), plan);
  list.build(v, &Particle::pos, b);
  CHECK(list.cell_sorts() == 3);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(on_host(v), b, all, 1.5, false));
  // The list's keys, then a particle moved across a cell face before the build: out of order by
  // one, which the build notices (it sorts) instead of reading wrong cells.
  coalesce::sort_by_key(v, list.cell_keys(v, &Particle::pos, b, plan), plan);
  auto moved = on_host(v);
  moved[10].pos.x = std::fmod(moved[10].pos.x + 4.5f, 9.0f);
  coalesce::vector<Particle, coalesce::soa, Space> w(moved);
  list.build(w, &Particle::pos, b);
  CHECK(list.cell_sorts() == 4);
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(moved, b, all, 1.5, false));
  // The list's keys on the unmoved particles: no sort.
  list.build(v, &Particle::pos, b);
  CHECK(list.cell_sorts() == 4);
}

TEST_CASE_TEMPLATE("verlet_list::cell_keys refuses what build() refuses, and an empty set is fine", Space,
                   coalesce::host, coalesce::device) {
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  auto p = random_particles(100, 0.0f, 6.0f, 23);
  p[37].pos.y = std::numeric_limits<float>::quiet_NaN();
  coalesce::vector<Particle, coalesce::soa, Space> v(p);
  coalesce::verlet_list<coalesce::csr, Space> list({.cutoff = 1.0, .skin = 0.2});
  coalesce::reorder_plan plan;
  CHECK_THROWS_WITH_AS((void)list.cell_keys(v, &Particle::pos, b, plan), doctest::Contains("particle 37"),
                       coalesce::error);
  CHECK(on_host(v)[37].id == 37);  // nothing moved
  coalesce::verlet_list<coalesce::csr, Space> wide({.cutoff = 2.9, .skin = 0.2});
  CHECK_THROWS_WITH_AS((void)wide.cell_keys(v, &Particle::pos, b, plan), doctest::Contains("more than half"),
                       coalesce::error);
  coalesce::vector<Particle, coalesce::soa, Space> none(std::size_t{0});
  auto const keys = list.cell_keys(none, &Particle::pos, b, plan);
  CHECK(keys.size == 0);
  coalesce::sort_by_key(none, keys, plan);
  list.build(none, &Particle::pos, b);
  CHECK(list.size() == 0);
}
