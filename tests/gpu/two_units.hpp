// One user's program in two .cu files that both call compute_pairs and compute_many_body on the same
// particles, list and laws: every template of the engines is then instantiated alike in both
// translation units (two_units_a_test.cu, two_units_b_test.cu). A kernel whose instantiation is
// shared so crashed the host at its launch (an nvcc __host__ __device__ lambda in a function both
// units instantiate: compute_pairs' input checks, 2026-12-05), while one unit alone ran.
#pragma once
#include <cmath>

#include <coalesce/coalesce.hpp>

#include "pair_engine_common.hpp"

namespace two_units_test {

using pair_engine_gpu_test::Atom;  // the GPU engine tests' atoms, lattice and LJ law
using pair_engine_gpu_test::lennard_jones;

// rho = sum (rc - r)^2, F = -sqrt(rho), phi = 0.05 (rc - r)^4.
struct soft_embedding {
  COALESCE_HOST_DEVICE float cutoff() const { return 2.4f; }
  COALESCE_HOST_DEVICE float density(float r2, std::size_t, std::size_t) const {
    float const s = 2.4f - std::sqrt(r2);
    return s * s;
  }
  COALESCE_HOST_DEVICE coalesce::embedding_value<float> embed(float rho, std::size_t) const {
    float const root = std::sqrt(rho);
    return {-root, root > 0.f ? -0.5f / root : 0.f};
  }
  COALESCE_HOST_DEVICE coalesce::pair_value<float> pair(float r2, std::size_t, std::size_t, float dfi,
                                                        float dfj) const {
    float const r = std::sqrt(r2), s = 2.4f - r;
    float const psi = -4.f * 0.05f * s * s * s + (dfi + dfj) * (-2.f * s);
    return {-psi / r, 0.05f * s * s * s * s};
  }
};

struct energies {
  double pairs = 0;
  double many_body = 0;
};

// The same work in either unit: a jittered cubic lattice, a padded list and a cluster-pair list,
// both engines, energies returned. `static`: each unit has its own copy, as two files of a program
// have their own functions; only the library's templates are shared between them.
// Space: coalesce::device (the GPU: what the two units share) or coalesce::host (the reference).
template <class Space> static energies run_in() {
  auto const atoms = pair_engine_gpu_test::lattice(12, 1.1f, 5);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {13.2, 13.2, 13.2}};
  coalesce::vector<Atom, coalesce::soa, Space> v(atoms);
  auto const table = pair_engine_gpu_test::two_types();
  energies out;
  coalesce::verlet_list<coalesce::padded_columns, Space> rows({.cutoff = 2.5, .skin = 0.3});
  rows.build(v, &Atom::pos, b);
  out.pairs = coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(v, rows.view(v), b, lennard_jones{}, table,
                                                                             {.energy = true})
                  .energy;
  coalesce::verlet_list<coalesce::cluster_pairs, Space> clusters({.cutoff = 2.5, .skin = 0.3, .half = true});
  clusters.build(v, &Atom::pos, b);
  out.pairs += coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(v, clusters.view(v), b, lennard_jones{},
                                                                              table, {.energy = true})
                   .energy;
  out.many_body = coalesce::compute_many_body<&Atom::pos, &Atom::force, &Atom::type>(v, rows.view(v), b,
                                                                                     soft_embedding{}, {.energy = true})
                      .energy;
  return out;
}

static energies run_here() { return run_in<coalesce::device>(); }

energies run_in_unit_b();  // two_units_b_test.cu

}  // namespace two_units_test
