// compute_pairs in GPU memory with pair_options::round_each_pair (each pair's force rounded to the
// fixed-point force member before it is summed) and pair_options::rows (some rows of a full list):
// the same bits over every list format, full and half lists (open box), the particles in another
// order; two passes over a full list's rows give one pass's bits and write nothing else. The host's
// cases: tests/pair_engine_options_test.cpp.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "pair_engine_common.hpp"

using namespace pair_engine_gpu_test;

namespace pair_engine_gpu_test {

using fixed_forces =
    coalesce::stored_as<coalesce::soa, coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;

// The forces of `atoms` in GPU memory over a list of Format, given back in the order of `atoms`.
template <class Format> std::vector<fvec3> device_forces(std::vector<Atom> const& atoms, coalesce::box const& b,
                                                         bool half, coalesce::pair_options options) {
  coalesce::device_vector<Atom, fixed_forces> v(atoms);
  coalesce::verlet_list<Format> list({.cutoff = 2.5, .skin = 0.3, .half = half});
  list.build(v, &Atom::pos, b);
  coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(v, list.view(v), b, lennard_jones{}, two_types(),
                                                                 options);
  std::vector<Atom> out(atoms.size());
  v.copy_to(std::span<Atom>(out));
  std::vector<fvec3> f(atoms.size());
  for (std::size_t i = 0; i < atoms.size(); ++i) f[i] = out[i].force;
  return f;
}

inline std::size_t differing(std::vector<fvec3> const& a, std::vector<fvec3> const& b) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) count += a[i].x != b[i].x || a[i].y != b[i].y || a[i].z != b[i].z;
  return count;
}

}  // namespace pair_engine_gpu_test

TEST_CASE("compute_pairs in GPU memory, round_each_pair: the same bits over every format, full and half, any order") {
  for (bool const periodic : {true, false}) {
    CAPTURE(periodic);
    int const side = 10;
    float const spacing = 1.1f, length = side * spacing;
    coalesce::box const b{.lo = {0, 0, 0},
                          .hi = {length, length, length},
                          .edges = periodic ? coalesce::boundary::periodic : coalesce::boundary::clamped};
    auto const atoms = lattice(side, spacing, 17);
    // The same atoms shuffled; shuffled[k] is atoms[order[k]].
    std::vector<std::size_t> order(atoms.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937(5));
    std::vector<Atom> shuffled(atoms.size());
    for (std::size_t k = 0; k < atoms.size(); ++k) shuffled[k] = atoms[order[k]];
    auto const back_in_order = [&](std::vector<fvec3> const& f) {
      std::vector<fvec3> out(f.size());
      for (std::size_t k = 0; k < f.size(); ++k) out[order[k]] = f[k];
      return out;
    };
    coalesce::pair_options const rounded{.round_each_pair = true};
    auto const first = device_forces<coalesce::padded_columns>(atoms, b, false, rounded);
    CHECK(differing(first, back_in_order(device_forces<coalesce::padded_columns>(shuffled, b, false, rounded))) == 0);
    CHECK(differing(first, device_forces<coalesce::padded_rows>(atoms, b, false, rounded)) == 0);
    CHECK(differing(first, back_in_order(device_forces<coalesce::csr>(shuffled, b, false, rounded))) == 0);
    CHECK(differing(first, device_forces<coalesce::cluster_pairs>(atoms, b, false, rounded)) == 0);
    if (!periodic) {  // inside an open box a pair's two separations are exact negatives
      CHECK(differing(first, device_forces<coalesce::padded_columns>(atoms, b, true, rounded)) == 0);
      CHECK(differing(first, back_in_order(device_forces<coalesce::cluster_pairs>(shuffled, b, true, rounded))) == 0);
    }
    // Within float rounding of the plain pass.
    auto const plain = device_forces<coalesce::padded_columns>(atoms, b, false, {});
    double largest = 0, worst = 0;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
      float const p[3] = {plain[i].x, plain[i].y, plain[i].z}, r[3] = {first[i].x, first[i].y, first[i].z};
      for (int a = 0; a < 3; ++a) {
        largest = std::max(largest, double(std::abs(p[a])));
        worst = std::max(worst, double(std::abs(p[a] - r[a])));
      }
    }
    CHECK(largest > 1);
    CHECK(worst <= 1e-5 * largest + 1e-6);
  }
}

TEST_CASE("compute_pairs in GPU memory, rows: two passes give one pass's bits and write nothing else") {
  int const side = 9;
  float const spacing = 1.1f, length = side * spacing;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {length, length, length}, .edges = coalesce::boundary::periodic};
  auto const atoms = lattice(side, spacing, 23);  // forces start at 7, 7, 7
  auto const passes = [&](std::vector<coalesce::pair_rows> const& parts, bool rounded) {
    coalesce::device_vector<Atom, fixed_forces> v(atoms);
    coalesce::verlet_list<coalesce::padded_columns> list({.cutoff = 2.5, .skin = 0.3});
    list.build(v, &Atom::pos, b);
    for (coalesce::pair_rows const rows : parts) {
      coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(v, list.view(v), b, lennard_jones{}, two_types(),
                                                                     {.round_each_pair = rounded, .rows = rows});
    }
    std::vector<Atom> out(atoms.size());
    v.copy_to(std::span<Atom>(out));
    return out;
  };
  for (bool const rounded : {false, true}) {
    CAPTURE(rounded);
    auto const whole = passes({{}}, rounded);
    auto const split = passes({{.first = 0, .count = 300}, {.first = 300}}, rounded);
    auto const middle = passes({{.first = 100, .count = 64}}, rounded);
    std::size_t differ = 0, outside_changed = 0, inside_same = 0;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
      differ += whole[i].force.x != split[i].force.x || whole[i].force.z != split[i].force.z;
      bool const inside = i >= 100 && i < 164;
      outside_changed += !inside && middle[i].force.x != 7.f;
      inside_same += inside && middle[i].force.x == whole[i].force.x && middle[i].force.y == whole[i].force.y;
    }
    CHECK(differ == 0);
    CHECK(outside_changed == 0);
    CHECK(inside_same == 64);
  }
}
