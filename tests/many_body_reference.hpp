// What the compute_many_body tests share (tests/many_body_test.cpp, tests/mpi/many_body_halo_test.cpp):
// an EAM-style law of two particle types and its O(N^2) double-precision reference.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace coalesce_test::many_body {

// rho contributed by a neighbour of type b: A_b (rc - r)^2; F_t(rho) = -B_t sqrt(rho);
// phi_ab(r) = C_ab (rc - r)^4. The types differ in every function, so a pass that mixed up i and
// j (whose density, whose derivative) gives other forces.
template <class Real> struct two_type_eam {
  Real rc = Real(2.4);
  Real a[2] = {Real(1.0), Real(0.6)};
  Real b[2] = {Real(1.0), Real(1.7)};
  Real c[2][2] = {{Real(0.05), Real(0.08)}, {Real(0.08), Real(0.03)}};
  COALESCE_HOST_DEVICE Real cutoff() const { return rc; }
  COALESCE_HOST_DEVICE Real density(Real r2, std::size_t, std::size_t tj) const {
    Real const s = rc - std::sqrt(r2);
    return a[tj] * s * s;
  }
  COALESCE_HOST_DEVICE coalesce::embedding_value<Real> embed(Real rho, std::size_t t) const {
    Real const root = std::sqrt(rho);
    return {-b[t] * root, root > Real(0) ? -b[t] / (Real(2) * root) : Real(0)};
  }
  COALESCE_HOST_DEVICE coalesce::pair_value<Real> pair(Real r2, std::size_t ti, std::size_t tj, Real dfi,
                                                       Real dfj) const {
    Real const r = std::sqrt(r2), s = rc - r;
    Real const dphi = Real(-4) * c[ti][tj] * s * s * s;
    // d rho_j(r)/dr at i is -2 A_tj s; at j from i, -2 A_ti s
    Real const psi = dphi + dfi * (Real(-2) * a[tj] * s) + dfj * (Real(-2) * a[ti] * s);
    return {-psi / r, c[ti][tj] * s * s * s * s};
  }
};
static_assert(coalesce::many_body_law<two_type_eam<float>>);

struct reference {
  std::vector<std::array<double, 3>> force;
  double energy = 0, virial = 0;
};

// Every pair once in double, minimum image along periodic axes: densities, embedding, forces.
reference brute_force(std::vector<coalesce_test::Particle> const& p, coalesce::box const& box) {
  two_type_eam<double> const law;
  std::size_t const n = p.size();
  auto const separation = [&](std::size_t i, std::size_t j) {
    std::array<double, 3> d = {double(p[i].pos.x) - p[j].pos.x, double(p[i].pos.y) - p[j].pos.y,
                               double(p[i].pos.z) - p[j].pos.z};
    for (int a = 0; a < 3; ++a) {
      double const l = box.hi[a] - box.lo[a];
      if (box.periodic(a)) d[a] -= l * std::round(d[a] / l);
    }
    return d;
  };
  auto const r2_of = [](std::array<double, 3> const& d) { return d[0] * d[0] + d[1] * d[1] + d[2] * d[2]; };
  std::vector<double> rho(n, 0.0), dF(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      double const r2 = r2_of(separation(i, j));
      if (!(r2 < law.rc * law.rc)) continue;
      rho[i] += law.density(r2, p[i].id, p[j].id);
      rho[j] += law.density(r2, p[j].id, p[i].id);
    }
  }
  reference r;
  r.force.assign(n, {0, 0, 0});
  for (std::size_t i = 0; i < n; ++i) {
    auto const e = law.embed(rho[i], p[i].id);
    r.energy += e.value;
    dF[i] = e.derivative;
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      auto const d = separation(i, j);
      double const r2 = r2_of(d);
      if (!(r2 < law.rc * law.rc)) continue;
      auto const q = law.pair(r2, p[i].id, p[j].id, dF[i], dF[j]);
      for (int a = 0; a < 3; ++a) {
        r.force[i][a] += q.force_over_r * d[a];
        r.force[j][a] -= q.force_over_r * d[a];
      }
      r.energy += q.energy;
      r.virial += q.force_over_r * r2;
    }
  }
  return r;
}

}  // namespace coalesce_test::many_body
