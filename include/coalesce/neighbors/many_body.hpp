// coalesce/neighbors/many_body.hpp - potentials of two pair passes through the pair engine: the
// embedded-atom method (EAM) and its kin (Finnis-Sinclair), where a particle's energy depends on a
// density summed over its neighbours. The user writes the law (three functions, as LAMMPS's
// pair_eam or HOOMD-blue's EAM have them); the engine runs the passes over any list, layout and
// precision, host or GPU memory.
//
//   // Finnis-Sinclair-like, one type: rho_j(r) = (rc - r)^2, F(rho) = -sqrt(rho), phi(r) = (rc - r)^4.
//   struct sutton {
//     float rc = 2.5f;
//     COALESCE_HOST_DEVICE float cutoff() const { return rc; }
//     // The density particle j (type tj) adds at particle i (type ti) at distance^2 r2.
//     COALESCE_HOST_DEVICE float density(float r2, std::size_t, std::size_t) const {
//       float const s = rc - std::sqrt(r2);
//       return s * s;
//     }
//     // The embedding energy F(rho) of a particle of type t and its derivative dF/drho.
//     COALESCE_HOST_DEVICE coalesce::embedding_value<float> embed(float rho, std::size_t) const {
//       float const root = std::sqrt(rho);
//       return {-root, root > 0 ? -0.5f / root : 0.f};
//     }
//     // The pair's force / r and pair energy from the pair potential phi and the densities'
//     // derivatives: -(phi'(r) + dF_i rho_j'(r) + dF_j rho_i'(r)) / r, and phi(r).
//     COALESCE_HOST_DEVICE coalesce::pair_value<float> pair(float r2, std::size_t, std::size_t, float dF_i,
//                                                           float dF_j) const {
//       float const r = std::sqrt(r2), s = rc - r;
//       float const dphi = -4.f * s * s * s, drho = -2.f * s;
//       return {-(dphi + (dF_i + dF_j) * drho) / r, s * s * s * s};
//     }
//   };
//   coalesce::box const domain{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::periodic};
//   coalesce::verlet_list<coalesce::padded_columns, coalesce::host> near({.cutoff = 2.5, .skin = 0.3});
//   near.build(h, &Particle::pos, domain);
//   coalesce::pair_totals const sums =
//       coalesce::compute_many_body<&Particle::pos, &Particle::vel>(h, near.view(h), domain, sutton{}, {.energy = true});
//
// The passes: (1) each particle's density, rho_i = sum over j in reach of density(r2, t_i, t_j)
// (a half list adds density(r2, t_j, t_i) into j too); (2) each particle's embedding, F(rho_i) into
// the energy and dF_i kept; (3) the forces, pair(r2, t_i, t_j, dF_i, dF_j) per pair in reach, as
// compute_pairs applies a pair law (pair_engine.hpp: the force member overwritten, Newton's third
// law on a half list). "In reach": r2 below cutoff()^2, the separation the minimum image along
// periodic axes. Energy (sum of F(rho_i) and of phi per pair) and virial (sum over pairs of r . F)
// in double, only when asked. The densities and derivatives live in scratch of the particles'
// memory for the call; every particle must be a row of the list (a list built over all of them).
//
// Ghosts (coalesce::mpi halos: a list built with list_rows{owned}, rows for the owned particles,
// neighbours among all): the force pass needs each ghost's dF, which only its owner knows. Pass an
// exchange, called between the embedding and the forces with the derivatives (a coalesce::array
// of particles.size() values in the particles' memory, the rows' filled): it fills the ghosts'.
//
//   coalesce::compute_many_body<&Particle::pos, &Particle::force>(
//       particles, near.view(particles), domain, law, {.energy = true}, coalesce::default_stream,
//       [&](auto& derivatives) { coalesce::mpi::forward(halo, derivatives); });
//
// The energy then counts the rows' particles (their embedding, half of each of their pairs: sum it
// over the ranks); the ghosts' forces are set to zero. A full list only (a half list would add
// densities and reactions into ghosts, which a reverse would have to bring home).
//
// Particle types: a law that has `types()` (eam_law: its elements) takes types below it; every
// particle's type is checked against it first. A law without it reads any type it is given.
//
// Bad input throws coalesce::error and writes nothing: a list with fewer rows than particles, a
// cutoff that is not positive and finite, a type at or past the law's types() (naming the
// particle), a position that is not finite.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../core/atomic.hpp"
#include "../core/box.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../memory/array.hpp"
#include "../memory/for_each.hpp"
#include "../memory/stream.hpp"
#include "../memory/vector.hpp"
#include "cluster_tile.hpp"
#include "list_traits.hpp"
#include "pair_engine.hpp"
#include "pair_law.hpp"

namespace coalesce {

// An embedding function's value F(rho) and derivative dF/drho.
template <class Real> struct embedding_value {
  Real value = 0;       // F(rho), the embedding energy
  Real derivative = 0;  // dF/drho
};

// The law of a many-body (EAM-style) potential: cutoff(), density(r2, ti, tj), embed(rho, t) and
// pair(r2, ti, tj, dF_i, dF_j), callable in kernels (COALESCE_HOST_DEVICE). The real type of
// density() is the arithmetic of all three passes.
template <class E>
concept many_body_law = requires(E const& e, float r2, std::size_t t) {
  {e.cutoff()};
  {e.density(r2, t, t)};
  {e.embed(e.density(r2, t, t), t).derivative};
  {e.pair(r2, t, t, e.density(r2, t, t), e.density(r2, t, t)).force_over_r};
};
namespace detail {
// The law's type count where it says one (types()), else no limit.
template <class Law> std::size_t law_types(Law const& law) {
  if constexpr (requires { law.types(); }) {
    return static_cast<std::size_t>(law.types());
  } else {
    return static_cast<std::size_t>(-1);
  }
}
}  // namespace detail
template <class E> using many_body_real_t =
    std::remove_cvref_t<decltype(std::declval<E const&>().density(0.0f, std::size_t{}, std::size_t{}))>;

namespace detail {

// For every neighbour j of row i within reach: visit(j, d, r2) with d = x_i - x_j (minimum image).
template <class Real, class List, class View, class PositionMember, class Visit>
COALESCE_HOST_DEVICE COALESCE_INLINE void for_each_in_reach(List const& list, View const& v, PositionMember position,
                                                            std::size_t i, Real const (&len)[3],
                                                            bool const (&periodic)[3], Real reach2, Visit&& visit) {
  auto const xi = v[i][position.pointer];
  Real const x0 = coordinate<Real>(xi, 0), x1 = coordinate<Real>(xi, 1), x2 = coordinate<Real>(xi, 2);
  for_each_neighbor(list, i, [&](std::uint32_t j) {
    auto const xj = v[j][position.pointer];
    Real const d[3] = {x0 - nearest_image(x0, coordinate<Real>(xj, 0), periodic[0], len[0]),
                       x1 - nearest_image(x1, coordinate<Real>(xj, 1), periodic[1], len[1]),
                       x2 - nearest_image(x2, coordinate<Real>(xj, 2), periodic[2], len[2])};
    Real const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r2 < reach2) visit(j, d, r2);
  });
}

// No exchange: every particle is a row of the list.
struct no_exchange {};
// The caller's exchange as the passes take it: type-erased, since nvcc refuses an extended lambda
// in a function templated on a type local to another function (the caller's lambda). Null: none.
template <class Real, class Space> struct exchange_ref {
  void* exchange = nullptr;
  void (*call)(void*, array<Real, Space>&) = nullptr;
};

// The embedding pass (2) of run_many_body: dF(rho) of each row kept, F into the energy. A named
// functor, not an extended lambda: it is short, and nvcc's short __host__ __device__ lambdas
// instantiated alike by several translation units crash the host at the launch (pair_engine.hpp's
// staged_warps says where that was found).
template <bool Energy, class Real, class View, class TypeMember, class Law, class Sums> struct embed_rows {
  View v;
  TypeMember type_member;
  Law law;
  Real const* rho_of;
  Real* dF;
  Sums s;
  std::size_t rows;
  COALESCE_HOST_DEVICE void operator()(std::size_t i) const {
    embedding_value<Real> const f = law.embed(rho_of[i], type_of(v[i], type_member));
    dF[i] = f.derivative;
    if constexpr (Energy) add_row_sums<true, false>(s, static_cast<double>(f.value), 0.0, i, rows);
  }
};

template <bool Energy, bool Virial, class Law, class T, class L, class Space, class PositionMember, class ForceMember,
          class TypeMember, class List>
pair_totals run_many_body(vector<T, L, Space>& particles, PositionMember position, ForceMember force,
                          TypeMember type_member, List const& list, box const& domain, Law const& law, bool half,
                          stream on, exchange_ref<many_body_real_t<Law>, Space> exchange) {
  bool const exchanges = exchange.call != nullptr;
  using Real = many_body_real_t<Law>;
  constexpr char const* caller = "compute_many_body";
  std::size_t const n = particles.size();
  std::size_t const rows = list_traits<List>::size(list);
  if (!exchanges && rows != n) {
    throw_error(std::string(caller) + ": the list has " + std::to_string(rows) + " rows for " + std::to_string(n) +
                " particles; every particle's density is needed, so build the list over all of them, or, where "
                "the rest are a halo's ghosts, pass an exchange that fills their embedding derivatives "
                "(coalesce::mpi::forward; many_body.hpp shows how)");
  }
  if (exchanges && rows > n) {
    throw_error(std::string(caller) + ": the list has " + std::to_string(rows) + " rows for " + std::to_string(n) +
                " particles; build it over these particles (list_rows{owned} for a halo's)");
  }
  if (exchanges && half) {
    throw_error(std::string(caller) +
                ": a half list with an exchange: its densities and reactions would go into ghosts, which only a "
                "reverse brings home; build a full list (list_params::half = false)");
  }
  double const cutoff = static_cast<double>(law.cutoff());
  if (!(cutoff > 0) || !std::isfinite(cutoff)) {
    throw_error(std::string(caller) + ": the law's cutoff() is " + std::to_string(cutoff) +
                "; it must be positive and finite");
  }
  auto v = particles.view();
  using position_leaf = std::remove_cvref_t<decltype(v[0][position.pointer][0])>;
  static_assert(!(std::is_same_v<position_leaf, double> && std::is_same_v<Real, float>),
                "coalesce::compute_many_body: the law computes in float (its density() returns float) but the "
                "positions are double; write the law in double or store the positions as float");
  // Checks first, nothing written: a type outside the law's, a position that is not finite.
  check_pair_input<Real>(particles, position, type_member, law_types(law), "the law's", caller, on);
  Real len[3];
  bool periodic[3];
  for (int a = 0; a < 3; ++a) {
    len[a] = static_cast<Real>(domain.hi[a] - domain.lo[a]);
    periodic[a] = domain.periodic(a);
  }
  // The reach squared in the loop's type: as a float the smallest float at least the double (as
  // pair_table::cutoff2_float), so that float and double loops keep the same pairs.
  Real reach2 = static_cast<Real>(cutoff * cutoff);
  if (static_cast<double>(reach2) < cutoff * cutoff) {
    reach2 = std::nextafter(reach2, std::numeric_limits<Real>::infinity());
  }
  // Per particle between the passes (zeroed): its density, then dF/drho, the rows' from the embedding,
  // the rest (ghosts) from the exchange, which takes the array as it is (a halo's forward).
  array<Real, Space> densities(n, on), derivatives(n, on);
  Real* const rho_of = densities.data();
  Real* const dF = derivatives.data();
  vector<pair_sums, soa, Space> sums(Energy || Virial ? pair_sum_slots : 0, pair_sums{0, 0}, on);
  auto s = sums.view();
  // (1) Densities.
  for_each_index(
      Space{}, rows,
      [=] COALESCE_HOST_DEVICE(std::size_t i) {
        std::size_t const ti = type_of(v[i], type_member);
        Real rho = 0;
        for_each_in_reach<Real>(list, v, position, i, len, periodic, reach2,
                                [&](std::uint32_t j, Real const(&)[3], Real r2) {
                                  std::size_t const tj = type_of(v[j], type_member);
                                  rho += law.density(r2, ti, tj);
                                  if (half) atomic_add(rho_of[j], law.density(r2, tj, ti));
                                });
        if (half) {
          atomic_add(rho_of[i], rho);
        } else {
          rho_of[i] = rho;
        }
      },
      on);
  // (2) Embedding of the rows: dF kept, F into the energy.
  using embedding = embed_rows<Energy, Real, decltype(v), TypeMember, Law, decltype(s)>;
  for_each_index(Space{}, rows, embedding{v, type_member, law, rho_of, dF, s, rows}, on);
  if (exchanges) {
    // The embedding writes the derivatives on `on`; the exchange (a halo's forward, on the halo's
    // stream) reads them: they must be there first. (Its forward returns with the ghosts' in place.)
    if constexpr (std::is_same_v<Space, device>) synchronize(device{on});
    exchange.call(exchange.exchange, derivatives);
    if (derivatives.size() != n) {
      throw_error(std::string(caller) + ": the exchange left " + std::to_string(derivatives.size()) +
                  " derivatives for " + std::to_string(n) + " particles; it must fill them in place");
    }
  }
  // (3) Forces (a half list: reactions into j, every force zeroed first).
  if (half) zero_forces<Space>(v, force, 0, n, on);
  for_each_index(
      Space{}, rows,
      [=] COALESCE_HOST_DEVICE(std::size_t i) {
        (void)s, (void)rows;  // (as above)
        std::size_t const ti = type_of(v[i], type_member);
        Real const dFi = dF[i];
        Real f0 = 0, f1 = 0, f2 = 0;
        double energy = 0, virial = 0;
        for_each_in_reach<Real>(list, v, position, i, len, periodic, reach2,
                                [&](std::uint32_t j, Real const(&d)[3], Real r2) {
                                  std::size_t const tj = type_of(v[j], type_member);
                                  pair_value<Real> const p = law.pair(r2, ti, tj, dFi, dF[j]);
                                  f0 += p.force_over_r * d[0];
                                  f1 += p.force_over_r * d[1];
                                  f2 += p.force_over_r * d[2];
                                  if (half) {
                                    atomic_add(v[j][force.pointer][0], -p.force_over_r * d[0]);
                                    atomic_add(v[j][force.pointer][1], -p.force_over_r * d[1]);
                                    atomic_add(v[j][force.pointer][2], -p.force_over_r * d[2]);
                                  }
                                  double const share = half ? 1.0 : 0.5;
                                  if constexpr (Energy) energy += share * static_cast<double>(p.energy);
                                  if constexpr (Virial) {
                                    virial += share * static_cast<double>(p.force_over_r) * static_cast<double>(r2);
                                  }
                                });
        finish_row_force(v, force, i, f0, f1, f2, half);
        if constexpr (Energy || Virial) add_row_sums<Energy, Virial>(s, energy, virial, i, rows);
      },
      on);
  // Rows past the list's (a halo's ghosts) get no force of their own.
  zero_forces<Space>(v, force, rows, n - rows, on);
  return read_pair_totals<Energy, Virial>(sums, on);
}

template <class Law, class T, class L, class Space, class PositionMember, class ForceMember, class TypeMember,
          class List, class Exchange>
pair_totals dispatch_many_body(vector<T, L, Space>& particles, PositionMember position, ForceMember force,
                               TypeMember type_member, List const& list, box const& domain, Law const& law,
                               pair_options options, stream on, Exchange& exchange) {
  bool const half = list_is_half(list, options.half, "compute_many_body");
  using Real = many_body_real_t<Law>;
  exchange_ref<Real, Space> erased;
  if constexpr (!std::is_same_v<std::remove_cv_t<Exchange>, no_exchange>) {
    static_assert(std::is_invocable_v<Exchange&, array<Real, Space>&>,
                  "coalesce::compute_many_body: the exchange is called with the derivatives, a "
                  "coalesce::array<Real, Space>& (Real: the law's type; Space: the particles'), as "
                  "[&](auto& derivatives) { coalesce::mpi::forward(halo, derivatives); }");
    erased.exchange = const_cast<void*>(static_cast<void const*>(&exchange));
    erased.call = [](void* self, array<Real, Space>& derivatives) { (*static_cast<Exchange*>(self))(derivatives); };
  }
  auto run = [&]<bool E, bool W>() {
    return run_many_body<E, W>(particles, position, force, type_member, list, domain, law, half, on, erased);
  };
  if (options.energy && options.virial) return run.template operator()<true, true>();
  if (options.energy) return run.template operator()<true, false>();
  if (options.virial) return run.template operator()<false, true>();
  return run.template operator()<false, false>();
}

}  // namespace detail

// The many-body law over every pair of `list`, every particle of type 0. Forces into `force`
// (overwritten), positions from `position`. `exchange` (optional): called with the embedding
// derivatives before the force pass, to fill those of a halo's ghosts (the header's first lines).
template <class Law, class T, class L, class Space, class Pos, class Force, class List,
          class Exchange = detail::no_exchange>
requires many_body_law<Law> && neighbor_list_view<List> pair_totals compute_many_body(
    vector<T, L, Space>& particles, Pos T::*position, Force T::*force, List const& list, box const& domain,
    Law const& law, pair_options options = {}, stream on = default_stream, Exchange&& exchange = Exchange{}) {
  return detail::dispatch_many_body(particles, detail::member_handle<Pos, T>{position},
                                    detail::member_handle<Force, T>{force}, detail::no_type_member{}, list, domain, law,
                                    options, on, exchange);
}

// The same with each particle's type read from the member `type` (passed to the law as is).
template <class Law, class T, class L, class Space, class Pos, class Force, class Type, class List,
          class Exchange = detail::no_exchange>
requires many_body_law<Law> && neighbor_list_view<List> && std::is_integral_v<Type> pair_totals
compute_many_body(vector<T, L, Space>& particles, Pos T::*position, Force T::*force, Type T::*type, List const& list,
                  box const& domain, Law const& law, pair_options options = {}, stream on = default_stream,
                  Exchange&& exchange = Exchange{}) {
  return detail::dispatch_many_body(particles, detail::member_handle<Pos, T>{position},
                                    detail::member_handle<Force, T>{force}, detail::member_handle<Type, T>{type}, list,
                                    domain, law, options, on, exchange);
}

// The members as template arguments (the faster form, as for compute_pairs).
template <auto Position, auto Force, class Law, class T, class L, class Space, class List,
          class Exchange = detail::no_exchange>
requires many_body_law<Law> && neighbor_list_view<List> pair_totals
compute_many_body(vector<T, L, Space>& particles, List const& list, box const& domain, Law const& law,
                  pair_options options = {}, stream on = default_stream, Exchange&& exchange = Exchange{}) {
  static_assert(detail::is_member_of<T>(Position) && detail::is_member_of<T>(Force),
                "coalesce::compute_many_body<Position, Force>: both are pointers to members of the particles' type");
  return detail::dispatch_many_body(particles, detail::constant_member<Position>{}, detail::constant_member<Force>{},
                                    detail::no_type_member{}, list, domain, law, options, on, exchange);
}

// The same with each particle's type read from the integer member Type.
template <auto Position, auto Force, auto Type, class Law, class T, class L, class Space, class List,
          class Exchange = detail::no_exchange>
requires many_body_law<Law> && neighbor_list_view<List> pair_totals
compute_many_body(vector<T, L, Space>& particles, List const& list, box const& domain, Law const& law,
                  pair_options options = {}, stream on = default_stream, Exchange&& exchange = Exchange{}) {
  static_assert(detail::is_member_of<T>(Position) && detail::is_member_of<T>(Force) && detail::is_member_of<T>(Type),
                "coalesce::compute_many_body<Position, Force, Type>: all three are pointers to members of the "
                "particles' type");
  static_assert(detail::is_integral_member(Type), "coalesce::compute_many_body: the type member is an integer");
  return detail::dispatch_many_body(particles, detail::constant_member<Position>{}, detail::constant_member<Force>{},
                                    detail::constant_member<Type>{}, list, domain, law, options, on, exchange);
}

}  // namespace coalesce
