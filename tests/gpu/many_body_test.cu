// coalesce::compute_many_body in GPU memory: the host's forces, energy and virial (the host's
// passes are checked against O(N^2) in tests/many_body_test.cpp) for an EAM-style law of two
// types, a row format and cluster_pairs, full and half lists; the same law from eam_tables in GPU
// memory.
#include <cmath>
#include <span>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "many_body_reference.hpp"
#include "pair_engine_common.hpp"

namespace pair_engine_gpu_test {

using coalesce_test::many_body::two_type_eam;  // the CPU tests' law (many_body_reference.hpp)

template <class Format, class Space, class Law>
std::tuple<std::vector<Atom>, coalesce::pair_totals> run_many_body(std::vector<Atom> const& atoms,
                                                                   coalesce::box const& b, bool half, Law const& law) {
  coalesce::vector<Atom, coalesce::soa, Space> v(atoms);
  coalesce::verlet_list<Format, Space> list({.cutoff = 2.4, .skin = 0.3, .half = half});
  list.build(v, &Atom::pos, b);
  auto const totals = coalesce::compute_many_body<&Atom::pos, &Atom::force, &Atom::type>(
      v, list.view(v), b, law, {.energy = true, .virial = true});
  std::vector<Atom> out(atoms.size());
  v.copy_to(std::span<Atom>(out));
  return {out, totals};
}

}  // namespace pair_engine_gpu_test

using namespace pair_engine_gpu_test;

TEST_CASE_TEMPLATE("compute_many_body in GPU memory gives the host's forces and sums, full and half", Format,
                   coalesce::padded_columns, coalesce::cluster_pairs) {
  int const side = 12;
  float const spacing = 1.1f;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * spacing, side * spacing, side * spacing}};
  auto const atoms = lattice(side, spacing, 3);
  for (bool const half : {false, true}) {
    CAPTURE(half);
    auto const [host, host_totals] = run_many_body<Format, coalesce::host>(atoms, b, half, two_type_eam<float>{});
    auto const [device, device_totals] = run_many_body<Format, coalesce::device>(atoms, b, half, two_type_eam<float>{});
    auto const [largest, worst] = largest_and_worst(host, device);
    CHECK(largest > 0.01);
    CHECK(worst <= 1e-5 * largest + 1e-5);
    CHECK(device_totals.energy == doctest::Approx(host_totals.energy).epsilon(1e-6));
    CHECK(device_totals.virial == doctest::Approx(host_totals.virial).epsilon(1e-6));
  }
}

namespace pair_engine_gpu_test {
// Two elements' tables made in memory (what read_setfl returns), of the functions above.
inline coalesce::eam_file two_element_tables() {
  coalesce::eam_file f;
  f.elements = {"Aa", "Bb"};
  f.masses = {1.0, 2.0};
  f.rho_points = 400;
  f.rho_step = 0.05;
  f.r_points = 500;
  f.cutoff = 2.4;
  f.r_step = f.cutoff / 499;
  two_type_eam<float> const law;
  for (std::size_t e = 0; e < 2; ++e) {
    std::vector<double> embedding(f.rho_points), density(f.r_points);
    for (std::size_t k = 0; k < f.rho_points; ++k) embedding[k] = law.embed(float(k * f.rho_step), e).value;
    for (std::size_t k = 0; k < f.r_points; ++k) {
      double const r = k * f.r_step;
      density[k] = law.density(float(r * r), 0, e);
    }
    f.embedding.push_back(embedding);
    f.density.push_back(density);
  }
  for (std::size_t a = 0; a < 2; ++a) {
    for (std::size_t b = 0; b <= a; ++b) {
      std::vector<double> r_phi(f.r_points);
      for (std::size_t k = 0; k < f.r_points; ++k) {
        double const r = k * f.r_step;
        r_phi[k] = r * law.pair(float(r * r), a, b, 0.f, 0.f).energy;
      }
      f.r_phi.push_back(r_phi);
    }
  }
  return f;
}
}  // namespace pair_engine_gpu_test

TEST_CASE("eam_tables in GPU memory: compute_many_body gives the host tables' forces and energy") {
  int const side = 12;
  float const spacing = 1.1f;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * spacing, side * spacing, side * spacing}};
  auto const atoms = lattice(side, spacing, 3);
  coalesce::eam_file const file = two_element_tables();
  coalesce::eam_tables<float, coalesce::host> const on_host(file);
  coalesce::eam_tables<float, coalesce::device> const on_device(file);
  auto const [host, host_totals] =
      run_many_body<coalesce::cluster_pairs, coalesce::host>(atoms, b, true, on_host.law());
  auto const [device, device_totals] =
      run_many_body<coalesce::cluster_pairs, coalesce::device>(atoms, b, true, on_device.law());
  auto const [largest, worst] = largest_and_worst(host, device);
  CHECK(largest > 0.01);
  CHECK(worst <= 1e-5 * largest + 1e-5);
  CHECK(device_totals.energy == doctest::Approx(host_totals.energy).epsilon(1e-6));
}
