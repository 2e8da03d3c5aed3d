// coalesce::compute_pairs in GPU memory: a force member stored as 64-bit fixed point gives
// bit-identical forces run to run, and over cluster_pairs the float member's forces within its
// rounding; bad input throws and writes nothing. And the pair laws'
// fast_reciprocal on the GPU (one instruction) within 1 ulp of 1 / x.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "pair_engine_common.hpp"

using namespace pair_engine_gpu_test;

TEST_CASE_TEMPLATE("compute_pairs in GPU memory: a fixed-point force member sums bit for bit alike run to run", Format,
                   coalesce::padded_columns, coalesce::cluster_pairs) {
  using summed =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;
  int const side = 10;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * 1.1, side * 1.1, side * 1.1}};
  auto const atoms = lattice(side, 1.1f, 8);
  std::vector<Atom> first;
  for (int run_index = 0; run_index < 3; ++run_index) {
    coalesce::device_vector<Atom, summed> v(atoms);
    coalesce::verlet_list<Format> list({.cutoff = 2.5, .skin = 0.3, .half = true});
    list.build(v, &Atom::pos, b);
    (void)coalesce::compute_pairs(v, &Atom::pos, &Atom::force, &Atom::type, list.view(v), b, lennard_jones{},
                                  two_types());
    std::vector<Atom> out(atoms.size());
    v.copy_to(std::span<Atom>(out));
    if (run_index == 0) {
      first = out;
      continue;
    }
    bool same = true;
    for (std::size_t i = 0; i < out.size(); ++i) {
      same = same && out[i].force.x == first[i].force.x && out[i].force.y == first[i].force.y &&
             out[i].force.z == first[i].force.z;
    }
    CHECK(same);
  }
}

// The cluster-pair loop keeps a fixed-point member's sums as the format's integers in slot order and
// stores them after the loop: the float member's forces within the rounding (each reaction sum and
// row sum rounded to 2^-32 once), on half and full lists; its input checked in the staging pass.
TEST_CASE("compute_pairs over cluster_pairs in GPU memory: a fixed-point member gets the float member's forces") {
  using summed =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;
  int const side = 9;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * 1.1, side * 1.1, side * 1.1}};
  auto const atoms = lattice(side, 1.1f, 6);
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::device_vector<Atom> plain(atoms);
    coalesce::device_vector<Atom, summed> fixed(atoms);
    coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = 2.5, .skin = 0.3, .half = half});
    list.build(plain, &Atom::pos, b);
    (void)coalesce::compute_pairs(plain, &Atom::pos, &Atom::force, &Atom::type, list.view(plain), b, lennard_jones{},
                                  two_types());
    list.build(fixed, &Atom::pos, b);
    (void)coalesce::compute_pairs(fixed, &Atom::pos, &Atom::force, &Atom::type, list.view(fixed), b, lennard_jones{},
                                  two_types());
    std::vector<Atom> want(atoms.size()), got(atoms.size());
    plain.copy_to(std::span<Atom>(want));
    fixed.copy_to(std::span<Atom>(got));
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
      float const w[3] = {want[i].force.x, want[i].force.y, want[i].force.z};
      float const g[3] = {got[i].force.x, got[i].force.y, got[i].force.z};
      for (int a = 0; a < 3; ++a) {
        worst = std::max(worst, std::abs(double(g[a]) - double(w[a])));
        largest = std::max(largest, std::abs(double(w[a])));
      }
    }
    CHECK(largest > 1.0);            // forces were computed
    CHECK(worst <= 1e-5 * largest);  // float sums in another order, against integers
    auto bad = atoms;                // refused in the staging pass, nothing written
    bad[31].pos.x = std::numeric_limits<float>::infinity();
    coalesce::device_vector<Atom, summed> refused(bad);
    CHECK_THROWS_WITH_AS(coalesce::compute_pairs(refused, &Atom::pos, &Atom::force, &Atom::type, list.view(), b,
                                                 lennard_jones{}, two_types()),
                         doctest::Contains("particle 31"), coalesce::error);
    std::vector<Atom> left(atoms.size());
    refused.copy_to(std::span<Atom>(left));
    bool untouched = true;
    for (auto const& a : left) untouched = untouched && a.force.x == 7 && a.force.y == 7 && a.force.z == 7;
    CHECK(untouched);
  }
}

TEST_CASE(
    "compute_pairs in GPU memory refuses a type outside the table, exclusions of another count, and writes nothing") {
  auto atoms = lattice(6, 1.1f, 2);
  atoms[40].type = 5;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6.6, 6.6, 6.6}};
  coalesce::device_vector<Atom> v(atoms);
  coalesce::verlet_list<coalesce::csr> list({.cutoff = 2.5, .skin = 0.3});
  list.build(v, &Atom::pos, b);
  CHECK_THROWS_WITH_AS(
      coalesce::compute_pairs(v, &Atom::pos, &Atom::force, &Atom::type, list.view(v), b, lennard_jones{}, two_types()),
      doctest::Contains("particle 40 has type 5"), coalesce::error);
  // exclusions built for another particle count
  atoms[40].type = 1;
  coalesce::device_vector<Atom> good(atoms);
  coalesce::pair_exclusions<> const fewer(atoms.size() - 1, std::vector<std::uint32_t>{0, 1});
  CHECK_THROWS_WITH_AS((coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(
                           good, list.view(), b, lennard_jones{}, two_types(), fewer)),
                       doctest::Contains("the exclusions were built for 215 particles"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::pair_exclusions<>(atoms.size(), std::vector<std::uint32_t>{3, 216}),
                       doctest::Contains("pair 0 (3, 216) names particle 216"), coalesce::error);
  {
    std::vector<Atom> left(atoms.size());
    good.copy_to(std::span<Atom>(left));
    bool none_written = true;
    for (auto const& a : left) none_written = none_written && a.force.x == 7 && a.force.y == 7 && a.force.z == 7;
    CHECK(none_written);
  }
  std::vector<Atom> out(atoms.size());
  v.copy_to(std::span<Atom>(out));
  bool untouched = true;
  for (auto const& a : out) untouched = untouched && a.force.x == 7 && a.force.y == 7 && a.force.z == 7;
  CHECK(untouched);
}

// The cluster-pair loop that sums forces in slots checks its input in the staging pass (no pass of
// its own): the same refusals, named the same way, with nothing written, on half and full lists.
TEST_CASE("compute_pairs over cluster_pairs in GPU memory refuses a bad type or position in its staging pass") {
  auto const atoms = lattice(6, 1.1f, 2);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6.6, 6.6, 6.6}};
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::device_vector<Atom> built(atoms);
    coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = 2.5, .skin = 0.3, .half = half});
    list.build(built, &Atom::pos, b);
    std::vector<Atom> order(atoms.size());
    built.copy_to(std::span<Atom>(order));  // the particles as the list holds them (unsorted: the input order)
    auto refused = [&](std::vector<Atom> const& input, char const* says) {
      coalesce::device_vector<Atom> v(input);
      CHECK_THROWS_WITH_AS(coalesce::compute_pairs(v, &Atom::pos, &Atom::force, &Atom::type, list.view(), b,
                                                   lennard_jones{}, two_types()),
                           doctest::Contains(says), coalesce::error);
      std::vector<Atom> left(input.size());
      v.copy_to(std::span<Atom>(left));
      bool untouched = true;
      for (auto const& a : left) untouched = untouched && a.force.x == 7 && a.force.y == 7 && a.force.z == 7;
      CHECK(untouched);
    };
    auto bad_type = order;
    bad_type[40].type = 5;
    refused(bad_type, "particle 40 has type 5");
    auto bad_position = order;
    bad_position[77].pos.y = std::numeric_limits<float>::quiet_NaN();
    refused(bad_position, "particle 77 has a position that is not finite");
    // and the good input computes
    coalesce::device_vector<Atom> v(order);
    CHECK_NOTHROW(coalesce::compute_pairs(v, &Atom::pos, &Atom::force, &Atom::type, list.view(), b, lennard_jones{},
                                          two_types()));
  }
}

namespace {
struct reciprocal_case {
  float x;
  float r;
};
// fast_reciprocal over the values, on the GPU (a named functor: the engine's rule for device code in
// several .cu files).
struct reciprocal_pass {
  decltype(std::declval<coalesce::device_vector<reciprocal_case>&>().view()) v;
  COALESCE_HOST_DEVICE void operator()(std::size_t i) const {
    v[i][&reciprocal_case::r] = coalesce::fast_reciprocal(static_cast<float>(v[i][&reciprocal_case::x]));
  }
};
}  // namespace

TEST_CASE("fast_reciprocal on the GPU: 1 / x within 1 ulp of the exact quotient, for r^2 from 1e-6 to 1e6") {
  std::vector<reciprocal_case> cases;
  for (int k = 0; k <= 12000; ++k)
    cases.push_back({std::pow(10.0f, -6.0f + 12.0f * static_cast<float>(k) / 12000.0f), 0});
  coalesce::device_vector<reciprocal_case> d(cases);
  coalesce::for_each_index(coalesce::device{}, d.size(), reciprocal_pass{d.view()});
  std::vector<reciprocal_case> out(cases.size());
  d.copy_to(std::span<reciprocal_case>(out));
  int outside = 0;
  for (auto const& c : out) {
    float const exact = static_cast<float>(1.0 / static_cast<double>(c.x));  // correctly rounded
    bool const within_ulp = c.r >= std::nextafter(exact, 0.0f) && c.r <= std::nextafter(exact, 2.0f * exact);
    if (!within_ulp) ++outside;
  }
  CHECK(outside == 0);
}
