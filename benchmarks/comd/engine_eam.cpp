// engine_eam.cpp - CoMD's eamForce (eam.c) on the pair engine: the three passes (density, embedding,
// forces) run by compute_many_body over a list the library builds; the law is CoMD's, tables and
// interpolation, so that the energies are CoMD's.
//
// The tables come from the library's funcfl reader (read_funcfl), but not its splines: eam_tables
// interpolates as LAMMPS does (cubic splines), CoMD by its own three-point formula (interpolate()
// in eam.c: the value quadratic, the derivative linear between points, neither the other's exact
// derivative), and the two differ in the fourth digit of the energy. The law below reads the
// file's numbers with CoMD's formula. read_funcfl also keeps Z(r) only as r phi(r) = 27.2 * 0.529
// Z^2, LAMMPS's constants, where CoMD converts with hartreeToEv * bohrToAngs (27.21138505 *
// 0.52917721092, 0.07 % apart): the port divides LAMMPS's factor out again (a rounding of the
// last bit, not CoMD's bits).
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engines.hpp"

namespace comd {
namespace {

// One of CoMD's InterpolationObjects: n points from x0 = 0 a step apart, padded as eam.c pads
// them (values[-1] = values[0]; values[n] = values[n + 1] = values[n - 1]) and one more, which
// interpolate() reads at ii = n.
struct comd_table {
  std::vector<double> padded;
  double const* values = nullptr;  // padded.data() + 1
  int n = 0;
  double inv_dx = 0;

  comd_table(std::vector<double> const& data, double dx) : padded(data.size() + 4), n(static_cast<int>(data.size())) {
    values = padded.data() + 1;
    for (int i = 0; i < n; ++i) padded[i + 1] = data[static_cast<std::size_t>(i)];
    padded[0] = data.front();
    padded[n + 1] = padded[n + 2] = padded[n + 3] = data.back();
    inv_dx = 1.0 / dx;
  }
};

// What the law reads of a table: its values and CoMD's interpolate(), line for line.
struct table_view {
  double const* tt;
  int n;
  double inv_dx;
  void at(double r, double& f, double& df) const {
    if (r < 0.0) r = 0.0;
    r = r * inv_dx;
    int ii = static_cast<int>(std::floor(r));
    if (ii > n) {
      ii = n;
      r = n / inv_dx;
    }
    r = r - std::floor(r);
    double const g1 = tt[ii + 1] - tt[ii - 1];
    double const g2 = tt[ii + 2] - tt[ii];
    f = tt[ii] + 0.5 * r * (g1 + r * (tt[ii + 1] + tt[ii - 1] - 2.0 * tt[ii]));
    df = 0.5 * (g1 + r * (g2 - g1)) * inv_dx;
  }
};

// eamForce's law, as compute_many_body takes it (many_body.hpp).
struct comd_eam_law {
  table_view phi, rho, embedding;
  double cut;
  double cutoff() const { return cut; }
  double density(double r2, std::size_t, std::size_t) const {
    double f, df;
    rho.at(std::sqrt(r2), f, df);
    return f;
  }
  coalesce::embedding_value<double> embed(double rho_i, std::size_t) const {
    double f, df;
    embedding.at(rho_i, f, df);
    return {f, df};
  }
  // eamForce's two force terms: f_i -= dPhi dr / r, then f_i -= (dF_i + dF_j) dRho dr / r.
  coalesce::pair_value<double> pair(double r2, std::size_t, std::size_t, double df_i, double df_j) const {
    double const r = std::sqrt(r2);
    double p, dp, q, dq;
    phi.at(r, p, dp);
    rho.at(r, q, dq);
    return {-(dp + (df_i + df_j) * dq) / r, p};
  }
};

struct eam_tables {
  comd_table phi, rho, embedding;
  double cutoff;
  comd_eam_law law() const {
    auto v = [](comd_table const& t) { return table_view{t.values, t.n, t.inv_dx}; };
    return {v(phi), v(rho), v(embedding), cutoff};
  }
};

// eamReadFuncfl's tables from read_funcfl's numbers.
eam_tables comd_tables(coalesce::eam_file const& file) {
  std::vector<double> phi = file.r_phi.at(0);
  for (std::size_t i = 1; i < phi.size(); ++i) {
    double const z2 = phi[i] / (27.2 * 0.529);  // read_funcfl's factor out: Z(r)^2
    phi[i] = z2 / (static_cast<double>(i) * file.r_step) * (hartreeToEv * bohrToAngs);
  }
  phi[0] = phi[1] + (phi[1] - phi[2]);  // eam.c: "linear interpolation to get phi[0]"
  return {comd_table(phi, file.r_step), comd_table(file.density.at(0), file.r_step),
          comd_table(file.embedding.at(0), file.rho_step), file.cutoff};
}

// The library's own tables (eam_tables: LAMMPS's splines and constants) are the other choice, to
// show how far they are from CoMD's numbers (the driver's --lammps-splines; its check then fails).
using library_tables = coalesce::eam_tables<double, coalesce::device>;
void load_tables(std::unique_ptr<eam_tables>& into, coalesce::eam_file const& file) {
  into = std::make_unique<eam_tables>(comd_tables(file));
}
void load_tables(std::unique_ptr<library_tables>& into, coalesce::eam_file const& file) {
  into = std::make_unique<library_tables>(file);
}

// The port of eamForce over Tables (eam_tables: CoMD's interpolation; library_tables).
template <class Format, class Tables> struct eam_port {
  static inline port_options options;
  static inline std::string path;
  static inline std::unique_ptr<Tables> tables;
  static inline std::unique_ptr<port_list<Format>> list;

  static void setup(SimFlat* s) {
    coalesce::eam_file const file = coalesce::read_funcfl(path);
    load_tables(tables, file);
    if (file.cutoff != s->pot->cutoff) {
      throw std::runtime_error("comd: the port read cutoff " + std::to_string(file.cutoff) + " from " + path +
                               " but CoMD's potential has " + std::to_string(s->pot->cutoff));
    }
    list = std::make_unique<port_list<Format>>(s, file.cutoff, options);
  }
  static int force(SimFlat* s) {
    list->update(s);
    coalesce::pair_totals const sums = list->engine([] {
      return coalesce::compute_many_body<&engine_atom::pos, &engine_atom::force>(
          list->atoms(), list->view(), list->domain(), tables->law(), {.energy = true});
    });
    list->forces_out(s);
    s->ePotential = sums.energy;
    return 0;
  }
  static port_phases phases() { return list ? list->phases() : port_phases{}; }
};

template <class Format, class Tables> port make_over(port_options const& o, std::string const& p) {
  eam_port<Format, Tables>::options = o;
  eam_port<Format, Tables>::path = p;
  eam_port<Format, Tables>::list.reset();
  return {&eam_port<Format, Tables>::force, &eam_port<Format, Tables>::setup, &eam_port<Format, Tables>::phases};
}
template <class Format> port make(port_options const& o, std::string const& p) {
  return o.lammps_splines ? make_over<Format, library_tables>(o, p) : make_over<Format, eam_tables>(o, p);
}

}  // namespace

port make_eam_port(port_options const& o, std::string const& path) {
  if (o.format == "cluster_pairs") return make<coalesce::cluster_pairs>(o, path);
  if (o.format == "padded_rows") return make<coalesce::padded_rows>(o, path);
  throw std::runtime_error("comd: --format " + o.format +
                           " is not a list format of the port (cluster_pairs, padded_rows)");
}

}  // namespace comd
