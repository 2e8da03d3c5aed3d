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
template <class Root, class Layout, class U, class Node, class Storage>
COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add(reference<Root, Layout, U, Node, false, Storage> const& target,
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

// A sum in registers kept as the integers of a fixed-point format: each addend is rounded to a
// multiple of 2^-F, then added exactly. A force kernel sums a particle's own pairs in one and adds
// it with atomic_add: the total is the same integer whatever the order of the pairs (a half list
// puts a pair in the row of its lower index, so a reorder changes which particle sums it):
//
//   coalesce::fixed_sum<vec3, coalesce::fixed_point<std::int64_t, 32>> fi;
//   fi += vec3{s * dx, s * dy, s * dz};                  // per pair
//   coalesce::atomic_add(v[i][&Atom::force], fi);        // integers into the fixed-point member
//
// U is a floating type or a struct of floating members (vec3, float3, double3).
template <class U, class Format> class fixed_sum {
  static_assert(detail::format_of<Format>::value.kind == number_kind::fixed,
                "coalesce: fixed_sum<U, Format> needs Format = coalesce::fixed_point<std::int64_t or std::int32_t, F>");
  static constexpr std::size_t count = [] {
    if constexpr (std::is_floating_point_v<U>) {
      return std::size_t{1};
    } else {
      return reflect::members<U>::count;
    }
  }();
  static constexpr stored_format format = detail::format_of<Format>::value;

 public:
  using value_type = U;  // what is summed: a floating type or a struct of floating members
  // Each leaf's running sum: the format's integer (std::int64_t or std::int32_t).
  using integer = std::conditional_t<format.bytes == 8, std::int64_t, std::int32_t>;

  // Adds value, each leaf rounded to a multiple of 2^-F. An addend the format cannot hold throws
  // coalesce::error on the host (a kernel traps), unless the format saturates; the running sum
  // wraps undetected where it leaves the format.
  COALESCE_HOST_DEVICE COALESCE_INLINE fixed_sum& operator+=(U const& value) {
    for_each_leaf(value, [&](std::size_t k, auto leaf) COALESCE_INLINE_LAMBDA {
      integer addend;
      if (detail::encode(reinterpret_cast<std::byte*>(&addend), leaf, format) != detail::encode_status::ok &&
          !format.saturates)
        detail::fail_store(format);
      raw_[k] += addend;
    });
    return *this;
  }
  // Leaf k's sum as the format's integer (what atomic_add adds).
  COALESCE_HOST_DEVICE COALESCE_INLINE integer raw(std::size_t k) const { return raw_[k]; }
  // The sum as U (each leaf decoded from its integer).
  COALESCE_HOST_DEVICE COALESCE_INLINE U value() const {
    U out{};
    auto* bytes = reinterpret_cast<std::byte*>(&out);
    if constexpr (std::is_floating_point_v<U>) {
      out = detail::decode<U>(reinterpret_cast<std::byte const*>(&raw_[0]), format);
    } else {
      [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
        ((*reinterpret_cast<typename reflect::members<U>::template type<K>*>(bytes + reflect::members<U>::offsets[K]) =
              detail::decode<typename reflect::members<U>::template type<K>>(
                  reinterpret_cast<std::byte const*>(&raw_[K]), format)),
         ...);
      }
      (std::make_index_sequence<count>{});
    }
    return out;
  }

 private:
  template <class F> COALESCE_HOST_DEVICE COALESCE_INLINE static void for_each_leaf(U const& value, F&& f) {
    if constexpr (std::is_floating_point_v<U>) {
      f(std::size_t{0}, value);
    } else {
      auto const* bytes = reinterpret_cast<std::byte const*>(&value);
      [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
        static_assert((std::is_floating_point_v<typename reflect::members<U>::template type<K>> && ...),
                      "coalesce: fixed_sum<U, Format> sums a floating type or a struct of floating members");
        (f(K, *reinterpret_cast<typename reflect::members<U>::template type<K> const*>(
                  bytes + reflect::members<U>::offsets[K])),
         ...);
      }
      (std::make_index_sequence<count>{});
    }
  }
  integer raw_[count] = {};
};

namespace detail {
// One leaf of a fixed_sum into its target leaf: the integer itself where the leaf is stored in
// the sum's format, else the decoded value through the leaf's own atomic_add.
template <class Target, class Integer>
COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add_raw(Target&& target, Integer raw, stored_format f) {
  if constexpr (requires { target.format(); }) {
    if (target.format() == f) {
      atomic_add_scalar(reinterpret_cast<Integer*>(target.address()), raw);
      return;
    }
  }
  using T0 = std::remove_cvref_t<Target>;
  if constexpr (requires { typename T0::value_type; }) {
    atomic_add(target, decode<typename T0::value_type>(reinterpret_cast<std::byte const*>(&raw), f));
  } else {
    atomic_add(target, decode<T0>(reinterpret_cast<std::byte const*>(&raw), f));
  }
}
}  // namespace detail

// A fixed_sum into a leaf: its integer where the leaf is stored in the sum's format (exact in any
// order), else the decoded sum through the leaf's own atomic_add.
template <class C, class Format>
COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add(stored_ref<C, false> const& target,
                                                     fixed_sum<C, Format> const& sum) {
  detail::atomic_add_raw(target, sum.raw(0), detail::format_of<Format>::value);
}
// A fixed_sum of a struct into a nested struct member (a vec3 force): each leaf as above.
template <class Root, class Layout, class U, class Node, class Format, class Storage>
COALESCE_HOST_DEVICE COALESCE_INLINE void atomic_add(reference<Root, Layout, U, Node, false, Storage> const& target,
                                                     fixed_sum<U, Format> const& sum) {
  [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
    (detail::atomic_add_raw(target.template get<K>(), sum.raw(K), detail::format_of<Format>::value), ...);
  }
  (std::make_index_sequence<reflect::members<U>::count>{});
}

}  // namespace coalesce
