// coalesce/core/periodic_difference.hpp - a - b for positions stored as box_fixed, from the
// stored 32-bit fractions of the box, without decoding either position: periodic_difference (the
// minimum image, box_fixed<wrap>) and box_difference (the plain difference, any box_fixed).
//
//   using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
//   coalesce::host_vector<Particle, boxed> v(box);   // positions as 32-bit fractions of the box
//   v.resize(n, p);
//   auto const w = v.view();
//   vec3 const d = coalesce::periodic_difference(w[i][&Particle::pos], w[i + 1][&Particle::pos]);  // w[i] - w[i + 1], the minimum image
//   vec3 const e = coalesce::box_difference(w[i][&Particle::pos], w[i + 1][&Particle::pos]);       // w[i] - w[i + 1] as stored
//
// periodic_difference, per axis: the stored words' difference as a signed 32-bit integer (q_a - q_b
// modulo 2^32: the minimum image, exact in steps of the box) times the step, (hi - lo) / 2^32. A
// neighbour then costs 12 bytes of gathers and an integer subtraction per axis, where float
// positions need the image arithmetic (x - L * rint(x / L)) on top of 12 or 16 bytes. In float the
// result is at most three roundings from the exact difference (the step to float, the steps to
// float past 2^24, the product): relative error below 2^-22. Both operands must be stored as
// box_fixed<wrap> in the same box (a periodic box: for the other policies the minimum image is not
// the difference); anything else is an error, at compile time where the member is stored as its
// own type.
// box_difference: the words' difference as a 64-bit integer (never wrapped) times the step, for
// positions stored as box_fixed of any policy in the same box: a kernel over ghosts that are
// explicit images (coalesce::mpi halos of box_fixed<> positions in a box wider than the global
// one) keeps the steps' resolution that float positions lose away from the origin.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "error.hpp"
#include "reference.hpp"
#include "reflect.hpp"
#include "stored_types.hpp"

namespace coalesce {

namespace detail {
COALESCE_HOST_DEVICE inline void fail_box_difference(bool periodic, stored_format a, stored_format b) {
#if COALESCE_IN_DEVICE_CODE
  printf("coalesce: %s needs both members stored as %s in the same box (kinds %d and %d)\n",
         periodic ? "periodic_difference" : "box_difference", periodic ? "box_fixed<wrap>" : "box_fixed",
         static_cast<int>(a.kind), static_cast<int>(b.kind));
  __trap();
#else
  bool const both_boxed =
      a.kind == b.kind && a.kind == number_kind::box_fraction && (!periodic || (a.wraps && b.wraps));
  throw_error(std::string(periodic ? "periodic_difference needs both members stored as box_fixed<wrap>"
                                   : "box_difference needs both members stored as box_fixed") +
              " in the same box; got " + format_name(a) + " and " + format_name(b) +
              (both_boxed ? " in different boxes (copy one into a vector with the other's box)" : ""));
#endif
}

template <bool Periodic, class C, bool A, bool B>
COALESCE_HOST_DEVICE COALESCE_INLINE C box_leaf_difference(stored_ref<C, A> const& a, stored_ref<C, B> const& b) {
  static_assert(std::is_floating_point_v<C>,
                "coalesce: periodic_difference and box_difference take float or double coordinates");
  stored_format const f = a.format(), g = b.format();
  // The box compared as bits: the same frame's origin and step then compare equal at compile time
  // (a double compared with itself does not: NaN), and the check leaves the neighbour loop.
  bool const same_box = f.axis == g.axis &&
                        __builtin_bit_cast(std::uint64_t, f.origin) == __builtin_bit_cast(std::uint64_t, g.origin) &&
                        __builtin_bit_cast(std::uint64_t, f.step) == __builtin_bit_cast(std::uint64_t, g.step);
  if (f.kind != number_kind::box_fraction || g.kind != f.kind || !same_box || (Periodic && !(f.wraps && g.wraps)))
    fail_box_difference(Periodic, f, g);
  std::uint32_t const qa = load_bytes<std::uint32_t>(a.address()), qb = load_bytes<std::uint32_t>(b.address());
  if constexpr (Periodic) {
    return static_cast<C>(static_cast<std::int32_t>(qa - qb)) * static_cast<C>(f.step);
  } else {
    return static_cast<C>(static_cast<std::int64_t>(qa) - static_cast<std::int64_t>(qb)) * static_cast<C>(f.step);
  }
}
template <bool Periodic, class C, class D>
COALESCE_HOST_DEVICE COALESCE_INLINE C box_leaf_difference(C const&, D const&) requires std::is_arithmetic_v<C> {
  static_assert(sizeof(C) == 0,
                "coalesce: periodic_difference takes members stored as box_fixed<wrap> (box_difference: box_fixed) "
                "(a stored_as mapping); this member is stored as its own type");
  return C{};
}

template <bool Periodic, class R1, class L1, class U, class N1, bool C1, class S1, class R2, class L2, class N2,
          bool C2, class S2>
COALESCE_HOST_DEVICE COALESCE_INLINE U box_struct_difference(reference<R1, L1, U, N1, C1, S1> const& a,
                                                             reference<R2, L2, U, N2, C2, S2> const& b) {
  using info = reflect::members<U>;
  return [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
    return U{detail::box_leaf_difference<Periodic>(a.template get<K>(), b.template get<K>())...};
  }
  (std::make_index_sequence<info::count>{});
}
}  // namespace detail

// One coordinate: a - b, the minimum image. Both stored as box_fixed<wrap> in the same box; anything
// else throws coalesce::error on the host (a kernel traps).
template <class C, bool A, bool B>
COALESCE_HOST_DEVICE COALESCE_INLINE C periodic_difference(stored_ref<C, A> const& a, stored_ref<C, B> const& b) {
  return detail::box_leaf_difference<true>(a, b);
}
// One coordinate: a - b as stored (never wrapped). Both stored as box_fixed (any policy) in the same
// box; anything else throws coalesce::error on the host (a kernel traps).
template <class C, bool A, bool B>
COALESCE_HOST_DEVICE COALESCE_INLINE C box_difference(stored_ref<C, A> const& a, stored_ref<C, B> const& b) {
  return detail::box_leaf_difference<false>(a, b);
}

// A position struct (vec3, float3, double2 ...): member by member.
template <class R1, class L1, class U, class N1, bool C1, class S1, class R2, class L2, class N2, bool C2, class S2>
COALESCE_HOST_DEVICE COALESCE_INLINE U periodic_difference(reference<R1, L1, U, N1, C1, S1> const& a,
                                                           reference<R2, L2, U, N2, C2, S2> const& b) {
  return detail::box_struct_difference<true>(a, b);
}
// The same as stored: a position struct, member by member.
template <class R1, class L1, class U, class N1, bool C1, class S1, class R2, class L2, class N2, bool C2, class S2>
COALESCE_HOST_DEVICE COALESCE_INLINE U box_difference(reference<R1, L1, U, N1, C1, S1> const& a,
                                                      reference<R2, L2, U, N2, C2, S2> const& b) {
  return detail::box_struct_difference<false>(a, b);
}

}  // namespace coalesce
