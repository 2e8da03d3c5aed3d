// The first of two translation units that instantiate the engines alike (two_units.hpp).
#include <doctest/doctest.h>

#include "two_units.hpp"

TEST_CASE("compute_pairs and compute_many_body instantiated alike in two .cu files run from both, alike") {
  two_units_test::energies const here = two_units_test::run_here();
  two_units_test::energies const there = two_units_test::run_in_unit_b();
  CHECK(here.pairs < 0);  // an LJ solid at spacing 1.1 (two types): bound
  CHECK(here.many_body < 0);
  CHECK(here.pairs == doctest::Approx(there.pairs).epsilon(1e-6));
  CHECK(here.many_body == doctest::Approx(there.many_body).epsilon(1e-6));
}
