// The first of two translation units that instantiate the engines alike (two_units.hpp).
#include <doctest/doctest.h>

#include "two_units.hpp"

TEST_CASE("compute_pairs and compute_many_body instantiated alike in two .cu files run from both, alike") {
  two_units_test::energies const here = two_units_test::run_here();
  two_units_test::energies const there = two_units_test::run_in_unit_b();
  // Both against the same work in host memory (the engines' host loops, checked against O(N^2) by
  // the CPU tests): the GPU's sums are right, not only alike.
  two_units_test::energies const reference = two_units_test::run_in<coalesce::host>();
  CHECK(reference.pairs != 0);
  CHECK(reference.many_body < 0);  // F = -sqrt(rho)
  CHECK(here.pairs == doctest::Approx(reference.pairs).epsilon(1e-5));
  CHECK(here.many_body == doctest::Approx(reference.many_body).epsilon(1e-5));
  CHECK(here.pairs == doctest::Approx(there.pairs).epsilon(1e-6));
  CHECK(here.many_body == doctest::Approx(there.many_body).epsilon(1e-6));
}
