// The GPU pair engine tests' shared parts (tests/gpu/pair_engine_*_test.cu): two-type LJ atoms on a
// jittered lattice, bonded chains to exclude, and the check that compute_pairs in GPU memory gives
// the host's forces, energy and virial (within float rounding: the sums' order differs). One file
// per group of formats, so that the build compiles their kernels on several cores.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "pair_law_reference.hpp"

// A named namespace: nvcc's extended lambdas (the engine's kernels) cannot name types of an
// anonymous one in their enclosing function's template arguments.
namespace pair_engine_gpu_test {

struct fvec3 {
  float x, y, z;
};
struct Atom {
  fvec3 pos;
  fvec3 force;
  std::uint32_t type;
};

using coalesce_test::lennard_jones;  // the CPU tests' law (pair_law_reference.hpp)

// The same law declared branch-free: the warp loop evaluates it for every pair slot, no branch.
struct lennard_jones_branch_free : lennard_jones {
  static constexpr bool branch_free = true;
};

inline coalesce::pair_table<lennard_jones::param_type> two_types() {
  coalesce::pair_table<lennard_jones::param_type> t(2);
  t.set(0, 0, {1.0f, 1.0f}, 2.5);
  t.set(0, 1, {0.8f, 1.21f}, 2.2);
  t.set(1, 1, {1.3f, 0.81f}, 2.0);
  return t;
}

// A simple cubic lattice, jittered, sorted along z then y then x (the cluster build's spatial order).
inline std::vector<Atom> lattice(int side, float spacing, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> jitter(-0.1f, 0.1f);
  std::vector<Atom> out;
  for (int z = 0; z < side; ++z)
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x) {
        Atom a{};
        a.pos = {(x + 0.5f) * spacing + jitter(rng), (y + 0.5f) * spacing + jitter(rng),
                 (z + 0.5f) * spacing + jitter(rng)};
        a.type = static_cast<std::uint32_t>((x + y + z) % 2);
        a.force = {7, 7, 7};
        out.push_back(a);
      }
  return out;
}

// Bonded chains of 4 along x (the lattice's order: atom (x, y, z) is (z * side + y) * side + x), each
// with its two 1-3 pairs, and every fifth bond given again reversed (counted once).
inline std::vector<std::uint32_t> chains_along_x(int side) {
  std::vector<std::uint32_t> bonds;
  int given = 0;
  for (int row = 0; row < side * side; ++row) {
    for (int x = 0; x + 1 < side; ++x) {
      auto const i = static_cast<std::uint32_t>(row * side + x);
      if (x % 4 != 3) {
        bonds.insert(bonds.end(), {i, i + 1});
        if (++given % 5 == 0) bonds.insert(bonds.end(), {i + 1, i});
      }
      if (x % 4 < 2 && x + 2 < side) bonds.insert(bonds.end(), {i, i + 2});
    }
  }
  return bonds;
}

// Exclude: the bonds as pair_exclusions<Space>; else the form without exclusions (its own kernels:
// chosen when compiling, so that each test compiles only the kernels it runs).
template <class Format, class Layout, class Space, bool Exclude = false, class Law = lennard_jones>
std::tuple<std::vector<Atom>, coalesce::pair_totals> run(std::vector<Atom> const& atoms, coalesce::box const& b,
                                                         bool half, std::vector<std::uint32_t> const& bonds = {}) {
  coalesce::vector<Atom, Layout, Space> v(atoms);
  coalesce::verlet_list<Format, Space> list({.cutoff = 2.5, .skin = 0.3, .half = half});
  list.build(v, &Atom::pos, b);
  // the members as template arguments: the form whose loop names them as a user's kernel does
  coalesce::pair_totals totals;
  if constexpr (!Exclude) {
    totals = coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(v, list.view(v), b, Law{}, two_types(),
                                                                            {.energy = true, .virial = true});
  } else {
    coalesce::pair_exclusions<Space> const excluded(atoms.size(), bonds);
    totals = coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(v, list.view(v), b, Law{}, two_types(),
                                                                            excluded, {.energy = true, .virial = true});
  }
  std::vector<Atom> out(atoms.size());
  v.copy_to(std::span<Atom>(out));
  return {out, totals};
}

// The largest force component of the host's run and the largest difference of the device's from it.
inline std::pair<double, double> largest_and_worst(std::vector<Atom> const& host, std::vector<Atom> const& device) {
  double largest = 0, worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    float const h[3] = {host[i].force.x, host[i].force.y, host[i].force.z};
    float const g[3] = {device[i].force.x, device[i].force.y, device[i].force.z};
    for (int a = 0; a < 3; ++a) {
      largest = std::max(largest, static_cast<double>(std::abs(h[a])));
      worst = std::max(worst, static_cast<double>(std::abs(h[a] - g[a])));
    }
  }
  return {largest, worst};
}

// other_images: the device's particles given at other periodic images (every third moved by a
// whole box length or two along some axes), the host's in the box: the same forces.
template <class Format, class Layout, bool Exclude = false, class Law = lennard_jones>
void check_device_against_host(bool half, bool other_images = false) {
  CAPTURE(half);
  CAPTURE(Exclude);
  CAPTURE(other_images);
  int const side = 12;
  float const spacing = 1.1f;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * spacing, side * spacing, side * spacing}};
  auto const atoms = lattice(side, spacing, 3);
  auto moved = atoms;
  if (other_images) {
    float const length = side * spacing;
    for (std::size_t i = 0; i < moved.size(); i += 3) {
      moved[i].pos.x += static_cast<float>(static_cast<int>(i % 5) - 2) * length;
      moved[i].pos.z -= static_cast<float>(i % 2) * length;
    }
  }
  std::vector<std::uint32_t> const bonds = Exclude ? chains_along_x(side) : std::vector<std::uint32_t>{};
  auto const [host, host_totals] = run<Format, Layout, coalesce::host, Exclude>(atoms, b, half, bonds);
  auto const [device, device_totals] = run<Format, Layout, coalesce::device, Exclude, Law>(moved, b, half, bonds);
  if constexpr (Exclude) {  // the exclusions took pairs away (the host's loop is checked against O(N^2) on the CPU)
    double const all_pairs = std::get<1>(run<Format, Layout, coalesce::host>(atoms, b, half)).energy;
    CHECK(host_totals.energy != doctest::Approx(all_pairs).epsilon(1e-3));
  }
  auto const [largest, worst] = largest_and_worst(host, device);
  CHECK(largest > 0);
  // Positions moved by one or two box lengths lose up to two bits (|x| up to 3L), so the device's
  // separations differ from the host's by a few 1e-6: times the LJ force's gradient near r = 0.9
  // (~2e3), forces differ by ~1e-2 at most (the H100, 2026-12-06: 8.1e-3 of 355).
  double const tolerance = other_images ? 5e-5 * largest + 1e-3 : 1e-5 * largest + 1e-4;
  CHECK(worst <= tolerance);
  CHECK(device_totals.energy == doctest::Approx(host_totals.energy).epsilon(1e-6));
  CHECK(device_totals.virial == doctest::Approx(host_totals.virial).epsilon(1e-6));
}

}  // namespace pair_engine_gpu_test
