// engine_lj.cpp - CoMD's ljForce (ljForce.c) on the pair engine: the same law, written once as an
// evaluator in double (CoMD's real_t), run by compute_pairs over a list the library builds.
//
// The law is ljForce's term for term: with s6 = sigma^6 and r6 = s6 / r^6 the pair's energy is
// 4 epsilon (r6 (r6 - 1) - eShift) and its force over r 4 epsilon r6 (12 r6 - 6) / r^2, where CoMD
// writes f_i -= dr * fr with fr the negated product (the same bits). CoMD's energy sums half a
// pair per atom over a full list; the engine sums each pair once.
#include <memory>
#include <stdexcept>

#include "engines.hpp"

namespace comd {
namespace {

// ljForce.c keeps its LjPotential private; the port needs sigma and epsilon, which follow the
// BasePotential members there.
struct lj_potential {
  BasePotential base;
  real_t sigma;
  real_t epsilon;
};

struct comd_lj {
  struct param_type {
    double s6, four_epsilon, shift;
  };
  coalesce::pair_value<double> operator()(double r2, param_type const& q) const {
    double const inv_r2 = 1.0 / r2;
    double const r6 = q.s6 * (inv_r2 * inv_r2 * inv_r2);
    return {q.four_epsilon * r6 * inv_r2 * (12.0 * r6 - 6.0), q.four_epsilon * (r6 * (r6 - 1.0) - q.shift)};
  }
};

template <class Format> struct lj_port {
  static inline port_options options;
  static inline std::unique_ptr<port_list<Format>> list;
  static inline coalesce::pair_table<comd_lj::param_type> table{1};

  static void setup(SimFlat* s) {
    auto const* pot = reinterpret_cast<lj_potential const*>(s->pot);
    double const sigma = pot->sigma, rcut = pot->base.cutoff, rcut2 = rcut * rcut;
    double const s6 = sigma * sigma * sigma * sigma * sigma * sigma;  // ljForce's product, in its order
    double const rcut6 = s6 / (rcut2 * rcut2 * rcut2);
    table.set(0, 0, {s6, 4.0 * pot->epsilon, 1.0 * rcut6 * (rcut6 - 1.0)}, rcut);
    list = std::make_unique<port_list<Format>>(s, rcut, options);
  }
  static int force(SimFlat* s) {
    list->update(s);
    coalesce::pair_totals const sums = list->engine([] {
      return coalesce::compute_pairs<&engine_atom::pos, &engine_atom::force>(
          list->atoms(), list->view(), list->domain(), comd_lj{}, table, {.energy = true});
    });
    list->forces_out(s);
    s->ePotential = sums.energy;
    return 0;
  }
  static port_phases phases() { return list ? list->phases() : port_phases{}; }
};

template <class Format> port make(port_options const& o) {
  lj_port<Format>::options = o;
  lj_port<Format>::list.reset();
  return {&lj_port<Format>::force, &lj_port<Format>::setup, &lj_port<Format>::phases};
}

}  // namespace

port make_lj_port(port_options const& o) {
  if (o.format == "cluster_pairs") return make<coalesce::cluster_pairs>(o);
  if (o.format == "padded_rows") return make<coalesce::padded_rows>(o);
  throw std::runtime_error("comd: --format " + o.format +
                           " is not a list format of the port (cluster_pairs, padded_rows)");
}

}  // namespace comd
