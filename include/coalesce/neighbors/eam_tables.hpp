// coalesce/neighbors/eam_tables.hpp - EAM potentials from the tabulated files users of LAMMPS,
// CoMD and DYNAMO have (setfl: several elements; funcfl: one), as a law for compute_many_body
// (many_body.hpp), interpolated as LAMMPS's pair_style eam does (its cubic splines), on host and GPU.
// A setfl file's tables are splined as LAMMPS splines them; a funcfl file's, LAMMPS first puts on a
// grid of one point fewer (PairEAM::file2array), so within two steps of a table's end (rho near its
// largest, r near the cutoff) the values here differ from LAMMPS's in their last digits.
//
//   coalesce::eam_file const cu = coalesce::read_funcfl("Cu_u3.eam");        // or read_setfl("CuAg.eam.alloy")
//   coalesce::eam_tables<float, coalesce::host> const tables(cu);             // splines in host memory
//   coalesce::verlet_list<coalesce::padded_columns, coalesce::host> near({.cutoff = cu.cutoff, .skin = 0.3});
//   coalesce::box const domain{.lo = {0, 0, 0}, .hi = {20, 20, 20}, .edges = coalesce::boundary::periodic};
//   near.build(h, &Particle::pos, domain);
//   coalesce::pair_totals const sums = coalesce::compute_many_body<&Particle::pos, &Particle::vel>(
//       h, near.view(h), domain, tables.law(), {.energy = true});
//
// A particle's type is its element's place in the file (0 for a funcfl file); compute_many_body
// refuses a type past the file's elements. Units are the file's
// (metal: eV, Angstrom). funcfl's effective charges Z(r) become r phi(r) = 27.2 * 0.529 * Z_i(r)
// Z_j(r) (Hartree and Bohr, as LAMMPS); a setfl file gives r phi(r) per pair of elements.
// LAMMPS's one refinement not taken: an embedding read past the table's last density is the last
// spline piece extended, not the linear extrapolation newer LAMMPS versions add.
//
// Bad input throws coalesce::error naming the file and what was wrong: a file that cannot be read,
// a header that is not a setfl/funcfl header, fewer numbers than the header promises, a grid
// spacing or count that is not positive.
#pragma once
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../memory/array.hpp"
#include "../memory/space.hpp"
#include "../memory/stream.hpp"
#include "many_body.hpp"

namespace coalesce {

// What a setfl or funcfl file holds, as read (double).
struct eam_file {
  std::vector<std::string> elements;           // setfl's names; funcfl: one, "" (its header line has none)
  std::vector<double> masses;                  // per element
  std::size_t rho_points = 0;                  // Nrho: embedding tables' points, rho = k * rho_step
  double rho_step = 0;                         // drho: the embedding tables' density spacing
  std::size_t r_points = 0;                    // Nr: density and pair tables' points, r = k * r_step
  double r_step = 0;                           // dr: the density and pair tables' distance spacing
  double cutoff = 0;                           // the potential's cutoff distance
  std::vector<std::vector<double>> embedding;  // F(rho) per element
  std::vector<std::vector<double>> density;    // rho(r) per element (the density it adds at r)
  std::vector<std::vector<double>> r_phi;      // r phi(r) per pair (a >= b): index a (a + 1) / 2 + b
};

// DYNAMO setfl (eam/alloy): 3 comment lines; the element count and names; Nrho drho Nr dr cutoff;
// per element a line (Z, mass, lattice constant, lattice) then F(rho) and rho(r); then r phi(r)
// for every pair a >= b in file order.
eam_file read_setfl(std::string const& path);
// DYNAMO funcfl (eam): a comment line; Z, mass, lattice constant, lattice; Nrho drho Nr dr cutoff;
// F(rho), Z(r), rho(r).
eam_file read_funcfl(std::string const& path);

namespace detail {

// LAMMPS's cubic spline through a table of n points a step apart: per piece m, seven coefficients,
// value ((c3 p + c4) p + c5) p + c6 and derivative (c0 p + c1) p + c2 at p in [0, 1] past point m.
std::vector<double> eam_spline(std::vector<double> const& f, double step);

// One table's splines as the law reads them: 7 coefficients per point, in the law's memory.
template <class Real> struct eam_table_view {
  Real const* coefficients = nullptr;
  std::size_t points = 0;
  Real inverse_step = 0;
  struct reading {
    Real value, derivative;
  };
  // The table at x (x >= 0), as LAMMPS reads it (its point m counted from 1): the piece below x,
  // p clamped to [0, 1] past the end.
  COALESCE_HOST_DEVICE COALESCE_INLINE reading at(Real x) const {
    Real p = x * inverse_step + Real(1);
    std::size_t m = p > Real(1) ? static_cast<std::size_t>(p) : 1;
    m = m < points - 1 ? m : points - 1;
    p -= static_cast<Real>(m);
    p = p < Real(1) ? p : Real(1);
    Real const* c = coefficients + 7 * (m - 1);
    return {((c[3] * p + c[4]) * p + c[5]) * p + c[6], (c[0] * p + c[1]) * p + c[2]};
  }
};

}  // namespace detail

// The law compute_many_body runs (copied into kernels: pointers into eam_tables' memory).
template <class Real> struct eam_law {
  static constexpr std::size_t max_elements = 8;  // the most elements a file may hold (eam_tables throws past it)
  Real reach = 0;                                 // the cutoff distance
  std::size_t elements = 0;                       // the file's elements: particle types [0, elements)
  detail::eam_table_view<Real> embedding[max_elements];   // F(rho) per element
  detail::eam_table_view<Real> density_of[max_elements];  // rho(r) per element: the density it adds at r
  detail::eam_table_view<Real> r_phi[max_elements * (max_elements + 1) / 2];  // r phi(r) per pair a >= b

  COALESCE_HOST_DEVICE Real cutoff() const { return reach; }  // the file's cutoff, in Real
  std::size_t types() const { return elements; }              // compute_many_body checks every particle's type
  // The density a particle of element tj adds at distance^2 r2 (the receiver's element is not used).
  COALESCE_HOST_DEVICE Real density(Real r2, std::size_t, std::size_t tj) const {
    return density_of[tj].at(std::sqrt(r2)).value;
  }
  // F(rho) and dF/drho of element t.
  COALESCE_HOST_DEVICE embedding_value<Real> embed(Real rho, std::size_t t) const {
    auto const f = embedding[t].at(rho);
    return {f.value, f.derivative};
  }
  // Force / r and phi(r) of a pair of elements ti, tj at distance^2 r2, given their dF/drho.
  COALESCE_HOST_DEVICE pair_value<Real> pair(Real r2, std::size_t ti, std::size_t tj, Real dfi, Real dfj) const {
    Real const r = std::sqrt(r2), inverse = Real(1) / r;
    std::size_t const a = ti > tj ? ti : tj, b = ti > tj ? tj : ti;
    auto const z = r_phi[a * (a + 1) / 2 + b].at(r);
    Real const phi = z.value * inverse;
    Real const dphi = z.derivative * inverse - phi * inverse;
    // d rho_j / dr at i (j's element) times dF_i, d rho_i / dr at j times dF_j: one table read for
    // two particles of one element (a pure metal: every pair)
    Real const slope_j = density_of[tj].at(r).derivative;
    Real const slope_i = ti == tj ? slope_j : density_of[ti].at(r).derivative;
    Real const psi = dfi * slope_j + dfj * slope_i + dphi;
    return {-psi * inverse, phi};
  }
};

// The splines of an eam_file in Space's memory, in the law's precision.
template <class Real, class Space = device> class eam_tables {
 public:
  // The splines uploaded on `on` (returns when they are in place, as coalesce::array's upload).
  explicit eam_tables(eam_file const& file, stream on = default_stream);
  eam_tables(eam_tables const&) = delete;  // the law points into this object's memory
  eam_tables& operator=(eam_tables const&) = delete;
  eam_tables(eam_tables&&) noexcept = default;             // the memory moves along: earlier laws stay valid
  eam_tables& operator=(eam_tables&&) noexcept = default;  // the same; the tables held before are freed
  // The law for compute_many_body, by value; it points into this object's memory (valid while it lives).
  eam_law<Real> law() const { return law_; }
  double cutoff() const { return static_cast<double>(law_.reach); }  // the file's cutoff, for a list's cutoff

 private:
  std::vector<array<Real, Space>> tables_;
  eam_law<Real> law_{};
};

template <class Real, class Space> eam_tables<Real, Space>::eam_tables(eam_file const& file, stream on) {
  std::size_t const n = file.elements.size();
  if (n == 0 || n > eam_law<Real>::max_elements) {
    detail::throw_error("eam_tables: " + std::to_string(n) + " elements; 1 to " +
                        std::to_string(eam_law<Real>::max_elements));
  }
  law_.reach = static_cast<Real>(file.cutoff);
  law_.elements = n;
  auto const table = [&](std::vector<double> const& f, double step) {
    std::vector<double> const spline = detail::eam_spline(f, step);
    tables_.emplace_back(std::vector<Real>(spline.begin(), spline.end()), on);
    return detail::eam_table_view<Real>{tables_.back().data(), f.size(), static_cast<Real>(1.0 / step)};
  };
  tables_.reserve(2 * n + n * (n + 1) / 2);
  for (std::size_t e = 0; e < n; ++e) {
    law_.embedding[e] = table(file.embedding[e], file.rho_step);
    law_.density_of[e] = table(file.density[e], file.r_step);
  }
  for (std::size_t p = 0; p < n * (n + 1) / 2; ++p) law_.r_phi[p] = table(file.r_phi[p], file.r_step);
}

}  // namespace coalesce
