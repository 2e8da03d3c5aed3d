// coalesce/neighbors/pair_law.hpp - what a pair law is to the pair engine (pair_engine.hpp): the
// value it returns, the concept it meets, and how the engine's loops read a particle's position and
// type (shared by the generic loop and the cluster-pair loop, cluster_pair_loop.hpp).
//
//   struct soft_repulsion {
//     struct param_type {
//       float a;
//     };
//     COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
//       return {4.f * q.a / (r2 * r2 * r2), q.a / (r2 * r2)};  // U = a / r^4, F / r = 4 a / r^6
//     }
//   };
//   static_assert(coalesce::pair_evaluator<soft_repulsion>);
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"

namespace coalesce {

// What the pair law returns for one pair: the force divided by the distance (the force on i is
// force_over_r * (x_i - x_j)) and the pair's energy (read only when energy is asked).
template <class Real> struct pair_value {
  Real force_over_r = 0;  // |F| / r: the force on i is force_over_r * (x_i - x_j)
  Real energy = 0;        // the pair's potential energy (read only when energy is asked)
};

// The pair law: a type with a param_type and operator()(r2, param) -> pair_value<Real>, callable in
// kernels (COALESCE_HOST_DEVICE). Real (float or double) is the arithmetic of the whole pair loop.
template <class E>
concept pair_evaluator = requires {
  typename E::param_type;
};

// A law that declares `static constexpr bool branch_free = true;` may be called for every pair the
// loop meets, in reach or not: the cluster-pair loop on the GPU then evaluates it for each of its
// pairs at once (at half the type pair's cutoff squared for a pair out of reach, its value dropped,
// as the CPU's SIMD loop always does) instead of branching around it per pair. Declare it when the
// law is cheap (Lennard-Jones, soft repulsions); leave it out when it does costly work per call.
template <class E> consteval bool declares_branch_free() {
  if constexpr (requires { E::branch_free; }) {
    return static_cast<bool>(E::branch_free);
  } else {
    return false;
  }
}
// True when the evaluator E declares branch_free (above): the GPU cluster-pair loop then evaluates
// it for every pair slot; on the H100 (LJ, 4M atoms, 2026-12-06) 1.68 -> 1.62 ms a force pass.
template <class E> constexpr bool branch_free_law = declares_branch_free<E>();

// 1 / x for a pair law's r^2, one instruction on the GPU in float: PTX's rcp.approx.ftz.f32 (at
// most 1 ulp from the exact quotient; a subnormal x reads as zero, which no r^2 of a pair within a
// cutoff is). `1.f / r2` compiles to IEEE division with a branch around its slow path, and
// `__fdividef(1.f, r2)` to five instructions that rescale subnormals unless the whole program is
// built with -ftz=true. Measured (LJ, 4M particles, H100, 2026-12-06, neighbor_build): the
// cluster-pair loop 4 % faster than with __fdividef; the generic loop over padded_columns 7 %
// slower (the same loop body but for the reciprocal: nvcc schedules the gather loop around the
// inline PTX differently). Doubles and the host divide.
template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real fast_reciprocal(Real x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<Real, float>) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
  } else {
    return Real(1) / x;
  }
#else
  return Real(1) / x;
#endif
}

// The evaluator's real type: what its operator() returns pair_value of.
template <class E> using pair_real_t =
    decltype(std::declval<E const&>()(0.0f, std::declval<typename E::param_type const&>()).force_over_r);

namespace detail {

// A position's coordinate d (vec3, float4, std::array: any member of uniform leaves).
template <class Real, class Ref> COALESCE_HOST_DEVICE COALESCE_INLINE Real coordinate(Ref const& position, int d) {
  return static_cast<Real>(position[d]);
}

// The cutoff squared of the type pair (a, b) in the loop's type: as a float the smallest float at
// least the double (pair_table::cutoff2_float), so that r2 < it holds exactly when double(r2) <
// cutoff2 and a float loop compares without converting. Both pair loops test against it.
template <class Real, class Table>
COALESCE_HOST_DEVICE COALESCE_INLINE Real cutoff2_in(Table const& table, std::size_t a, std::size_t b) {
  if constexpr (std::is_same_v<Real, float>) {
    return table.cutoff2_float(a, b);
  } else {
    return static_cast<Real>(table.cutoff2(a, b));
  }
}

struct no_type_member {};

// A member pointer as the engine's kernels capture it: nvcc writes the types an extended lambda
// captures (and its enclosing function's parameter types) into generated code, and spells a
// pointer to a member of class type there in a form it then cannot parse (`vec3 ::ns::P::*`); a
// struct templated on the two classes spells fine.
template <class M, class U> struct member_handle { M U::*pointer; };

// A member known when compiling (compute_pairs<&T::pos, &T::force>): the same `pointer`, a constant.
template <auto Member> struct constant_member { static constexpr auto pointer = Member; };

template <class T, class M, class U> constexpr bool is_member_of(M U::*) { return std::is_same_v<T, U>; }
template <class T, class V> constexpr bool is_member_of(V) { return false; }
template <class M, class U> constexpr bool is_integral_member(M U::*) { return std::is_integral_v<M>; }

template <class T, class M>
COALESCE_HOST_DEVICE COALESCE_INLINE std::size_t type_of(T const& particle, M const& member) {
  if constexpr (std::is_same_v<M, no_type_member>) {
    (void)particle;
    (void)member;
    return 0;
  } else {
    return static_cast<std::size_t>(particle[member.pointer]);
  }
}

}  // namespace detail

}  // namespace coalesce
