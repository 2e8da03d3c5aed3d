// coalesce/core/periodic_difference.hpp - a - b for positions stored as box_fixed<wrap>: the
// minimum image, from the stored 32-bit fractions of the box, without decoding either position.
//
//   using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
//   coalesce::host_vector<Particle, boxed> v(box);   // positions as 32-bit fractions of the box
//   v.resize(n, p);
//   auto const w = v.view();
//   vec3 const d = coalesce::periodic_difference(w[i][&Particle::pos], w[i + 1][&Particle::pos]);  // w[i] - w[i + 1], the minimum image
//
// Per axis: the stored words' difference as a signed 32-bit integer (q_a - q_b modulo 2^32: the
// minimum image, exact in steps of the box) times the step, (hi - lo) / 2^32. A neighbour then costs
// 12 bytes of gathers and an integer subtraction per axis, where float positions need the image
// arithmetic (x - L * rint(x / L)) on top of 12 or 16 bytes. In float the result is at most three
// roundings from the exact difference (the step to float, the steps to float past 2^24, the
// product): relative error below 2^-22. Both operands must be stored as box_fixed<wrap> in the same box (a periodic box: for the
// other policies the minimum image is not the difference); anything else is an error, at compile
// time where the member is stored as its own type.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "error.hpp"
#include "reference.hpp"
#include "reflect.hpp"
#include "stored_types.hpp"

namespace coalesce {

namespace detail {
COALESCE_HOST_DEVICE inline void fail_periodic_difference(stored_format a, stored_format b) {
#if COALESCE_IN_DEVICE_CODE
  printf(
      "coalesce: periodic_difference needs both members stored as box_fixed<wrap> in the same box (kinds %d and "
      "%d)\n",
      static_cast<int>(a.kind), static_cast<int>(b.kind));
  __trap();
#else
  throw_error("periodic_difference needs both members stored as box_fixed<wrap> in the same box; got " +
              format_name(a) + " and " + format_name(b) +
              (a.kind == b.kind && a.kind == number_kind::box_fraction && a.wraps && b.wraps
                   ? " in different boxes (copy one into a vector with the other's box)"
                   : ""));
#endif
}

template <class C, bool A, bool B>
COALESCE_HOST_DEVICE COALESCE_INLINE C periodic_leaf_difference(stored_ref<C, A> const& a, stored_ref<C, B> const& b) {
  static_assert(std::is_floating_point_v<C>, "coalesce: periodic_difference takes float or double coordinates");
  stored_format const f = a.format(), g = b.format();
  // The box compared as bits: the same frame's origin and step then compare equal at compile time
  // (a double compared with itself does not: NaN), and the check leaves the neighbour loop.
  bool const same_box = f.axis == g.axis &&
                        __builtin_bit_cast(std::uint64_t, f.origin) == __builtin_bit_cast(std::uint64_t, g.origin) &&
                        __builtin_bit_cast(std::uint64_t, f.step) == __builtin_bit_cast(std::uint64_t, g.step);
  if (f.kind != number_kind::box_fraction || !f.wraps || g.kind != f.kind || !g.wraps || !same_box)
    fail_periodic_difference(f, g);
  auto const steps =
      static_cast<std::int32_t>(load_bytes<std::uint32_t>(a.address()) - load_bytes<std::uint32_t>(b.address()));
  return static_cast<C>(steps) * static_cast<C>(f.step);
}
template <class C, class D>
COALESCE_HOST_DEVICE COALESCE_INLINE C periodic_leaf_difference(C const&, D const&) requires std::is_arithmetic_v<C> {
  static_assert(sizeof(C) == 0,
                "coalesce: periodic_difference takes members stored as box_fixed<wrap> (a stored_as mapping); this "
                "member is stored as its own type");
  return C{};
}
}  // namespace detail

// One coordinate.
template <class C, bool A, bool B>
COALESCE_HOST_DEVICE COALESCE_INLINE C periodic_difference(stored_ref<C, A> const& a, stored_ref<C, B> const& b) {
  return detail::periodic_leaf_difference(a, b);
}

// A position struct (vec3, float3, double2 ...): member by member.
template <class R1, class L1, class U, class N1, bool C1, class S1, class R2, class L2, class N2, bool C2, class S2>
COALESCE_HOST_DEVICE COALESCE_INLINE U periodic_difference(reference<R1, L1, U, N1, C1, S1> const& a,
                                                           reference<R2, L2, U, N2, C2, S2> const& b) {
  using info = reflect::members<U>;
  return [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
    return U{detail::periodic_leaf_difference(a.template get<K>(), b.template get<K>())...};
  }
  (std::make_index_sequence<info::count>{});
}

}  // namespace coalesce
