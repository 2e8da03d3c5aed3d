// coalesce::compute_pairs in GPU memory over clusters and cluster_pairs (a warp per cluster): the
// host's forces, energy and virial, full and half lists, two layouts, with exclusions; and the
// cluster-pair list built in GPU memory is the host's, entry for entry.
#include <cstdint>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "pair_engine_common.hpp"

using namespace pair_engine_gpu_test;

TEST_CASE_TEMPLATE("compute_pairs in GPU memory gives the host's forces and sums: the cluster formats, full and half",
                   Format, coalesce::clusters, coalesce::cluster_pairs) {
  // aos for cluster_pairs (the warp loop reads records); each combination is a set of kernels to
  // compile: CI's time
  for (bool const half : {false, true}) {
    check_device_against_host<Format, coalesce::soa>(half);
    if constexpr (std::is_same_v<Format, coalesce::cluster_pairs>)
      check_device_against_host<Format, coalesce::aos>(half);
  }
}

TEST_CASE(
    "compute_pairs in GPU memory with exclusions gives the host's forces and sums: the warp loop, full and half") {
  for (bool const half : {false, true}) check_device_against_host<coalesce::cluster_pairs, coalesce::soa, true>(half);
}

TEST_CASE(
    "compute_pairs' warp loop: positions at other images, a branch-free law, with and without exclusions: the host's "
    "forces and sums") {
  // The loop stages positions into the box and skips the nearest image for rows a cutoff from every
  // face; the branch-free law is evaluated for every pair slot (empty ones too) and kept in reach.
  for (bool const half : {false, true}) {
    check_device_against_host<coalesce::cluster_pairs, coalesce::soa>(half, true);
    check_device_against_host<coalesce::cluster_pairs, coalesce::soa, false, lennard_jones_branch_free>(half, true);
    check_device_against_host<coalesce::cluster_pairs, coalesce::soa, true, lennard_jones_branch_free>(half);
  }
}

TEST_CASE(
    "cluster_pairs built in GPU memory is the host's list, entry for entry; sorted by its keys, both agree again") {
  int const side = 14;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * 1.1, side * 1.1, side * 1.1}};
  auto const atoms = lattice(side, 1.1f, 4);
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::host_vector<Atom> h(atoms);
    coalesce::device_vector<Atom> d(atoms);
    coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> on_host({.cutoff = 2.5, .skin = 0.3, .half = half});
    coalesce::verlet_list<coalesce::cluster_pairs> on_device({.cutoff = 2.5, .skin = 0.3, .half = half});
    on_host.build(h, &Atom::pos, b);
    on_device.build(d, &Atom::pos, b);
    CHECK(on_device.rows_on_host() == on_host.rows_on_host());
    CHECK(on_device.entries() == on_host.entries());
    CHECK(on_device.candidates() == on_host.candidates());
    CHECK(on_device.bytes() == on_host.bytes());
    coalesce::reorder_plan plan;
    coalesce::sort_by_key(d, on_device.cell_keys(d, &Atom::pos, b, plan), plan);
    auto const sorts = on_device.cell_sorts();
    on_device.build(d, &Atom::pos, b);
    CHECK(on_device.cell_sorts() == sorts);  // in the list's order already: no sort of its own
    std::vector<Atom> sorted(atoms.size());
    d.copy_to(std::span<Atom>(sorted));
    coalesce::host_vector<Atom> hs(sorted);
    on_host.build(hs, &Atom::pos, b);
    CHECK(on_device.rows_on_host() == on_host.rows_on_host());
  }
}

TEST_CASE("cluster_pairs in GPU memory: rows longer than the counting pass keeps are searched again, the same rows") {
  // A sparse set first (short rows: the next build keeps 32 entries per row), then a dense blob
  // whose rows hold over a hundred clusters: those rows come from the filling pass's own search.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> wide(0.f, 60.f), blob(20.f, 26.f);
  std::vector<Atom> sparse(400), dense(3000);
  for (auto& a : sparse) a.pos = {wide(rng), wide(rng), wide(rng)};
  for (auto& a : dense) a.pos = {blob(rng), blob(rng), blob(rng)};
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {60, 60, 60}};
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::verlet_list<coalesce::cluster_pairs> on_device({.cutoff = 2.5, .skin = 0.3, .half = half});
    coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> on_host({.cutoff = 2.5, .skin = 0.3, .half = half});
    coalesce::device_vector<Atom> first(sparse);
    on_device.build(first, &Atom::pos, b);
    coalesce::device_vector<Atom> d(dense);
    coalesce::host_vector<Atom> h(dense);
    on_device.build(d, &Atom::pos, b);
    on_host.build(h, &Atom::pos, b);
    CHECK(on_device.widest() > 32 * coalesce::cluster_pairs::cluster_size);  // rows past the kept room
    CHECK(on_device.rows_on_host() == on_host.rows_on_host());
  }
}
