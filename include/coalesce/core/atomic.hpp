// coalesce/core/atomic.hpp - atomic_add through a proxy: scattered sums (a half-list force kernel
// that adds the reaction to particle j) on any mapping, on the host (OpenMP threads) and in kernels.
//
//   using summed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::fixed_point<std::int64_t, 32>>>;
//   coalesce::host_vector<Particle, summed> sums(n);
//   auto v = sums.view();
//   coalesce::atomic_add(v[i][&Particle::vel], vec3{0.5f, -1.0f, 2.0f});   // a vec3: one atomic add per leaf
//   coalesce::atomic_add(v[i][&Particle::mass], 1.0f);                      // one leaf (a float: float atomics)
//   vec3 const total = v[i][&Particle::vel];                                // read back as float
//
// Where the member is stored as fixed_point<std::int64_t, F> (core/stored_as.hpp), each addend
// is rounded to a multiple of 2^-F (checked: an addend beyond the format is an error) and added as
// an integer: integer addition is associative, so the sum is bit-identical in any thread order and
// after any reorder (OpenMM's approach to deterministic forces). The running sum must stay inside
// the format (+-2^31 for 32 fraction bits); integer overflow there wraps and is not detected.
// Floating members (float, double, or stored as float/double) use floating atomics: their sums
// depend on the order. Members stored as half or bfloat16, or as integers narrower than 4 bytes,
// cannot be added atomically: an error.
#pragma once
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "reference.hpp"
#include "stored_types.hpp"

namespace coalesce {

namespace detail {
template <class A> COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add_scalar(A* target, A value) {
#if COALESCE_IN_DEVICE_CODE
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    atomicAdd(target, value);
  } else if constexpr (std::is_integral_v<A> && sizeof(A) == 8) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target), static_cast<unsigned long long>(value));
  } else if constexpr (std::is_integral_v<A> && sizeof(A) == 4) {
    atomicAdd(reinterpret_cast<unsigned*>(target), static_cast<unsigned>(value));
  } else {
    static_assert(sizeof(A) == 0, "coalesce: atomic_add needs a float, double or 4- or 8-byte integer member");
  }
#else
  static_assert((std::is_floating_point_v<A> || std::is_integral_v<A>)&&(sizeof(A) == 4 || sizeof(A) == 8),
                "coalesce: atomic_add needs a float, double or 4- or 8-byte integer member");
  std::atomic_ref<A>(*target).fetch_add(value, std::memory_order_relaxed);
#endif
}

COALESCE_HOST_DEVICE inline void fail_atomic(stored_format f) {
#if COALESCE_IN_DEVICE_CODE
  printf(
      "coalesce: atomic_add into a member stored as a %d-byte format of kind %d is not supported; store it as "
      "coalesce::fixed_point<std::int64_t, F>, float or double\n",
      static_cast<int>(f.bytes), static_cast<int>(f.kind));
  __trap();
#else
  throw_error("atomic_add into a member stored as " + format_name(f) +
              " is not supported; store it as coalesce::fixed_point<std::int64_t, F> (deterministic), float or double");
#endif
}
}  // namespace detail

// A leaf stored as its own type.
template <class A, class V>
requires(std::is_arithmetic_v<A> && !std::is_const_v<A>) COALESCE_HOST_DEVICE COALESCE_INLINE
    void atomic_add(A& target, V value) {
  detail::atomic_add_scalar(&target, static_cast<A>(value));
}

// A leaf stored in another format.
template <class C, class V>
COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add(stored_ref<C, false> const& target, V value) {
  stored_format const f = target.format();
  std::byte* const p = target.address();
  C const addend = static_cast<C>(value);
  if (f.kind == number_kind::fixed || f.kind == number_kind::signed_int || f.kind == number_kind::unsigned_int) {
    if (f.bytes != 4 && f.bytes != 8) return detail::fail_atomic(f);
    alignas(8) std::byte encoded[8];
    if (detail::encode(encoded, addend, f) != detail::encode_status::ok && !f.saturates) detail::fail_store(f);
    if (f.bytes == 8) {
      detail::atomic_add_scalar(reinterpret_cast<std::int64_t*>(p), detail::load_bytes<std::int64_t>(encoded));
    } else {
      detail::atomic_add_scalar(reinterpret_cast<std::int32_t*>(p), detail::load_bytes<std::int32_t>(encoded));
    }
  } else if (f.kind == number_kind::floating) {
    if (f.bytes == 8) {
      detail::atomic_add_scalar(reinterpret_cast<double*>(p), static_cast<double>(addend));
    } else {
      detail::atomic_add_scalar(reinterpret_cast<float*>(p), static_cast<float>(addend));
    }
  } else {
    detail::fail_atomic(f);
  }
}

// A nested struct (a vec3 force): one atomic add per member, each leaf on its own.
template <class Root, class Layout, class U, class Node>
COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add(reference<Root, Layout, U, Node, false> const& target,
                                                     U const& value) {
  using info = reflect::members<U>;
  auto const* bytes = reinterpret_cast<std::byte const*>(&value);
  [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
    (atomic_add(target.template get<K>(),
                *reinterpret_cast<typename info::template type<K> const*>(bytes + info::offsets[K])),
     ...);
  }
  (std::make_index_sequence<info::count>{});
}

}  // namespace coalesce
