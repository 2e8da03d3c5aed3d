// coalesce/core/stored_types.hpp - the number formats a member may be stored in, other than its
// own type, and the conversions between them (host and device code alike).
//
//   using a = coalesce::half;                             // IEEE binary16, for float or double members
//   using b = coalesce::bfloat16;                         // 8-bit exponent, 7-bit mantissa
//   using c = float;                                      // a double member stored as float
//   using d = std::int16_t;                               // an integer member in a narrower integer
//   using e = coalesce::fixed_point<std::int64_t, 32>;    // round(value * 2^32) as a 64-bit integer
//   using f = coalesce::fixed_point<std::int32_t, 20, coalesce::saturate>;  // out of range: clamped
//   using g = coalesce::bits<3>;                           // 0 .. 7 in 3 bits of a shared 32-bit word
//   using h = coalesce::signed_bits<5>;                    // -16 .. 15 in 5 bits
//   using i = coalesce::box_fixed<coalesce::wrap>;         // a coordinate as 32 bits of its box's length
//
// Every conversion into a stored format rounds to nearest, ties to even (the IEEE default, also for
// fixed point). A value the format cannot hold (a finite value beyond half's 65504, NaN into an
// integer or fixed-point member, a value outside the fixed-point or integer range) is an error
// (`report`, the default): `coalesce::error` on the host, a message and a trap in a kernel; with
// `saturate` it becomes the nearest value the format holds (NaN: zero); box_fixed also takes `wrap`
// (periodic: a coordinate past the box comes back in from the other side). The mapping adaptor that
// uses these formats is coalesce::stored_as (core/stored_as.hpp).
#pragma once
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "config.hpp"

// CUDA's own 16-bit types name the same formats (store<&P::vel, __half>). Only nvcc gets CUDA's
// headers from here (the device conversions use their intrinsics): a host-only file must not, since
// cuda_fp16.h brings CUDA's global float2, float4, make_float4, ... that particle codes often define
// themselves for their CPU builds (a redefinition error in the user's own header). The two names are
// declared as cuda_fp16.h / cuda_bf16.h declare them (`struct __half;`), so a host file that includes
// CUDA's headers itself, before or after this one, can still name them as format tags.
#if COALESCE_DEVICE_COMPILER
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
struct __half;
struct __nv_bfloat16;
#endif

namespace coalesce {

// What a conversion does with a value the stored format cannot hold.
struct report {};    // an error (the default)
struct saturate {};  // the nearest value the format holds; NaN becomes zero
struct wrap {};      // box_fixed only: the value's periodic image inside the box (NaN: an error)

// IEEE binary16 (largest finite value 65504) with a policy: half_format<saturate> clamps.
template <class OnOverflow = report> struct half_format {};
// bfloat16 (float's 8-bit exponent, a 7-bit mantissa) with a policy: bfloat16_format<saturate> clamps.
template <class OnOverflow = report> struct bfloat16_format {};
using half = half_format<report>;          // binary16; a value beyond +-65504 is an error
using bfloat16 = bfloat16_format<report>;  // bfloat16; a value beyond its range is an error

// A signed integer holding round(value * 2^FractionBits).
template <class Int, int FractionBits, class OnOverflow = report> struct fixed_point {
  static_assert(std::is_same_v<Int, std::int32_t> || std::is_same_v<Int, std::int64_t>,
                "coalesce: fixed_point<Int, FractionBits> stores in std::int32_t or std::int64_t");
  static_assert(FractionBits >= 0 && FractionBits < static_cast<int>(8 * sizeof(Int)),
                "coalesce: fixed_point<Int, FractionBits> needs 0 <= FractionBits < the integer's bits");
  static_assert(std::is_same_v<OnOverflow, report> || std::is_same_v<OnOverflow, saturate>,
                "coalesce: a stored format's overflow policy is coalesce::report or coalesce::saturate");
};

// A coordinate relative to its vector's box (vector::set_box): lo + q * (hi - lo) / 2^32 with q an
// unsigned 32-bit integer, so the resolution is the same everywhere in the box and, with `wrap`,
// the periodic wrap is exact (a position that leaves through one face stores its image; q_i - q_j
// as std::int32_t is the minimum-image separation in steps). For float and double members of up
// to three leaves (a vec3: leaf k is axis k). Keys, neighbour lists, migration and halos take
// positions in their own type or fixed_point only (they refuse it, naming the format).
template <class OnOverflow = report> struct box_fixed {
  static_assert(std::is_same_v<OnOverflow, report> || std::is_same_v<OnOverflow, saturate> ||
                    std::is_same_v<OnOverflow, wrap>,
                "coalesce: box_fixed's overflow policy is coalesce::report, coalesce::saturate or coalesce::wrap");
};

// An integer (or bool) member in `Bits` bits (1 to 32): the bit-packed members of a record share
// 32-bit words, filled in member order (stored_as places them), so a 3-bit type id and a 1-bit
// flag take 4 bits of one word instead of 4 and 1 bytes of their own.
template <unsigned Bits, class OnOverflow = report> struct bits {
  static_assert(Bits >= 1 && Bits <= 32, "coalesce: bits<N> stores an integer in 1 to 32 bits");
  static_assert(std::is_same_v<OnOverflow, report> || std::is_same_v<OnOverflow, saturate>,
                "coalesce: a stored format's overflow policy is coalesce::report or coalesce::saturate");
};
// The same for a signed integer member: two's complement in `Bits` bits (2 to 32).
template <unsigned Bits, class OnOverflow = report> struct signed_bits {
  static_assert(Bits >= 2 && Bits <= 32, "coalesce: signed_bits<N> stores a signed integer in 2 to 32 bits");
  static_assert(std::is_same_v<OnOverflow, report> || std::is_same_v<OnOverflow, saturate>,
                "coalesce: a stored format's overflow policy is coalesce::report or coalesce::saturate");
};

// What kind of number a stored format holds (stored_format::kind).
enum class number_kind : std::uint8_t {
  opaque,           // bytes, never converted (enums, user types, bool)
  ieee_half,        // binary16
  bfloat16,         // bfloat16
  floating,         // float (4 bytes) or double (8)
  signed_int,       // 1, 2, 4 or 8 bytes
  unsigned_int,     // 1, 2, 4 or 8 bytes
  fixed,            // signed 4 or 8 bytes, `fraction_bits`
  packed_unsigned,  // `bit_count` bits at `bit_offset` of a 32-bit word (bytes: 4) that others share
  packed_signed,    // the same, two's complement
  box_fraction,     // unsigned 4 bytes: origin + q * step (box_fixed; origin, step from the box of `axis`)
};

// A stored format as a run-time value: what the type-erased copies and the proxies dispatch on
// (host and device code; format_name(f) spells it for messages).
struct stored_format {
  number_kind kind = number_kind::opaque;  // which family, and so which fields below apply
  std::uint8_t bytes = 0;                  // stored bytes per value (packed: 4, the word; 0: an opaque type over 255)
  std::uint8_t fraction_bits = 0;          // fixed: the value is the integer times 2^-fraction_bits
  bool saturates = false;                  // out-of-range values clamp instead of being an error
  std::uint8_t bit_offset = 0;             // packed: where in the word (stored_as assigns it)
  std::uint8_t bit_count = 0;              // packed: how many bits
  bool wraps = false;                      // box_fraction: periodic
  std::uint8_t axis = 0;                   // box_fraction: the box axis (the leaf's place in its member)
  double origin = 0.0;                     // box_fraction: the box's lo on that axis, and its length / 2^32;
  double step = 0.0;                       //   0 until a storage fills them in (layout_storage::format_at)
  // Field by field, the box included (two boxes' box_fixed formats differ).
  friend constexpr bool operator==(stored_format const&, stored_format const&) = default;
};

namespace detail {

COALESCE_HOST_DEVICE COALESCE_INLINE constexpr bool is_packed(stored_format f) {
  return f.kind == number_kind::packed_unsigned || f.kind == number_kind::packed_signed;
}

// The format of a type stored as itself.
template <class C> constexpr stored_format natural_format() {
  if constexpr (std::is_floating_point_v<C> && (sizeof(C) == 4 || sizeof(C) == 8)) {
    return {number_kind::floating, sizeof(C), 0, false};
  } else if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    return {std::is_signed_v<C> ? number_kind::signed_int : number_kind::unsigned_int, sizeof(C), 0, false};
  } else {
    return {number_kind::opaque, static_cast<std::uint8_t>(sizeof(C) < 256 ? sizeof(C) : 0), 0, false};
  }
}

// The run-time description of a format tag (half, fixed_point<...>, float, std::int16_t, ...).
template <class Format> struct format_of;
template <class P> struct format_of<half_format<P>> {
  static constexpr stored_format value{number_kind::ieee_half, 2, 0, std::is_same_v<P, saturate>};
};
template <class P> struct format_of<bfloat16_format<P>> {
  static constexpr stored_format value{number_kind::bfloat16, 2, 0, std::is_same_v<P, saturate>};
};
template <class Int, int F, class P> struct format_of<fixed_point<Int, F, P>> {
  static constexpr stored_format value{number_kind::fixed, sizeof(Int), static_cast<std::uint8_t>(F),
                                       std::is_same_v<P, saturate>};
};
template <unsigned B, class P> struct format_of<bits<B, P>> {
  static constexpr stored_format value{number_kind::packed_unsigned, 4, 0,
                                       std::is_same_v<P, saturate>,  0, static_cast<std::uint8_t>(B)};
};
template <unsigned B, class P> struct format_of<signed_bits<B, P>> {
  static constexpr stored_format value{number_kind::packed_signed,  4, 0,
                                       std::is_same_v<P, saturate>, 0, static_cast<std::uint8_t>(B)};
};
template <class P> struct format_of<box_fixed<P>> {
  static constexpr stored_format value{number_kind::box_fraction, 4, 0, std::is_same_v<P, saturate>, 0, 0,
                                       std::is_same_v<P, wrap>};
};
template <> struct format_of<__half> : format_of<half> {};
template <> struct format_of<__nv_bfloat16> : format_of<bfloat16> {};
template <class Format>
requires std::is_arithmetic_v<Format>
struct format_of<Format> {
  static constexpr stored_format value = natural_format<Format>();
};
template <class Format>
concept number_format = requires {
  format_of<Format>::value;
};

// Whether a member of type C may be stored in format F: floating members in any floating or
// fixed-point format, integer members in integers and bits, bool members in bits.
template <class C> constexpr bool can_store_as(stored_format f) {
  if constexpr (std::is_floating_point_v<C>) {
    return f.kind == number_kind::ieee_half || f.kind == number_kind::bfloat16 || f.kind == number_kind::floating ||
           f.kind == number_kind::fixed || f.kind == number_kind::box_fraction;
  } else if constexpr (std::is_same_v<C, bool>) {
    return is_packed(f);
  } else if constexpr (std::is_integral_v<C>) {
    return f.kind == number_kind::signed_int || f.kind == number_kind::unsigned_int || is_packed(f);
  } else {
    return false;
  }
}

inline std::string format_name(stored_format f) {
  switch (f.kind) {
    case number_kind::ieee_half:
      return f.saturates ? "half_format<saturate>" : "half";
    case number_kind::bfloat16:
      return f.saturates ? "bfloat16_format<saturate>" : "bfloat16";
    case number_kind::floating:
      return f.bytes == 4 ? "float" : "double";
    case number_kind::signed_int:
      return "std::int" + std::to_string(8 * f.bytes) + "_t";
    case number_kind::unsigned_int:
      return "std::uint" + std::to_string(8 * f.bytes) + "_t";
    case number_kind::fixed:
      return "fixed_point<std::int" + std::to_string(8 * f.bytes) + "_t, " + std::to_string(f.fraction_bits) +
             (f.saturates ? ", saturate>" : ">");
    case number_kind::packed_unsigned:
    case number_kind::packed_signed:
      return std::string(f.kind == number_kind::packed_signed ? "signed_bits<" : "bits<") +
             std::to_string(f.bit_count) + (f.saturates ? ", saturate>" : ">");
    case number_kind::box_fraction:
      return f.wraps ? "box_fixed<wrap>" : f.saturates ? "box_fixed<saturate>" : "box_fixed<>";
    default:
      return "bytes";
  }
}

// ---------------------------------------------------------------------- bit-level helpers
template <class To, class From> COALESCE_HOST_DEVICE COALESCE_INLINE To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}
// Stored values are aligned to their size in every mapping (core/stored_as.hpp places them so), so
// they are read and written as their type: one load or store, never byte by byte.
template <class U> COALESCE_HOST_DEVICE COALESCE_INLINE U load_bytes(std::byte const* p) {
  return *reinterpret_cast<U const*>(p);
}
template <class U> COALESCE_HOST_DEVICE COALESCE_INLINE void store_bytes(std::byte* p, U value) {
  *reinterpret_cast<U*>(p) = value;
}
// 2^e as a double, exact, for |e| < 1023.
COALESCE_HOST_DEVICE COALESCE_INLINE double power_of_two(int e) {
  return bits_as<double>(static_cast<std::uint64_t>(1023 + e) << 52);
}
COALESCE_HOST_DEVICE COALESCE_INLINE float float_power_of_two(int e) {  // -126 <= e <= 127
  return bits_as<float>(static_cast<std::uint32_t>(127 + e) << 23);
}

// float -> binary16 bits, round to nearest even (F. Giesen's float_to_half_fast3_rtne): the
// subnormal case lets the FPU round by adding a magic number; the normal case adds the rounding
// bias to the bits.
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint16_t float_to_half_bits(float value) {
#if COALESCE_IN_DEVICE_CODE
  return __half_as_ushort(__float2half_rn(value));
#else
  std::uint32_t f = bits_as<std::uint32_t>(value);
  std::uint32_t const sign = f & 0x80000000u;
  f ^= sign;
  std::uint16_t out;
  if (f >= (127u + 16u) << 23) {  // >= 2^16 (or inf, NaN): inf, or a quiet NaN
    out = f > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (f < (113u << 23)) {  // below 2^-14: a subnormal half, or zero
    std::uint32_t const magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    out = static_cast<std::uint16_t>(bits_as<std::uint32_t>(bits_as<float>(f) + bits_as<float>(magic)) - magic);
  } else {
    std::uint32_t const odd = (f >> 13) & 1u;
    f += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    out = static_cast<std::uint16_t>(f >> 13);
  }
  return static_cast<std::uint16_t>(out | (sign >> 16));
#endif
}
COALESCE_HOST_DEVICE COALESCE_INLINE float half_bits_to_float(std::uint16_t h) {
#if COALESCE_IN_DEVICE_CODE
  return __half2float(__ushort_as_half(h));
#else
  std::uint32_t const shifted_exponent = 0x7c00u << 13;
  std::uint32_t out = (h & 0x7fffu) << 13;
  std::uint32_t const exponent = shifted_exponent & out;
  out += (127u - 15u) << 23;
  if (exponent == shifted_exponent) {
    out += (128u - 16u) << 23;  // inf, NaN
  } else if (exponent == 0) {   // zero, subnormal: renormalise through the FPU
    out += 1u << 23;
    out = bits_as<std::uint32_t>(bits_as<float>(out) - bits_as<float>(113u << 23));
  }
  return bits_as<float>(out | ((h & 0x8000u) << 16));
#endif
}
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint16_t float_to_bfloat16_bits(float value) {
#if COALESCE_IN_DEVICE_CODE
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
#else
  std::uint32_t const f = bits_as<std::uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
#endif
}
COALESCE_HOST_DEVICE COALESCE_INLINE float bfloat16_bits_to_float(std::uint16_t b) {
  return bits_as<float>(static_cast<std::uint32_t>(b) << 16);
}

// Infinity test on the bits (unaffected by fast-math options that let compilers assume finite values).
COALESCE_HOST_DEVICE COALESCE_INLINE bool is_infinite(float x) {
  return (bits_as<std::uint32_t>(x) & 0x7fffffffu) == 0x7f800000u;
}
COALESCE_HOST_DEVICE COALESCE_INLINE bool is_infinite(double x) {
  return (bits_as<std::uint64_t>(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull;
}

// A double rounded to float toward zero with the lowest bit set when inexact ("round to odd"):
// rounding that float to half or bfloat16 then rounds the double correctly (no double rounding,
// as float keeps more than two bits beyond either).
COALESCE_HOST_DEVICE COALESCE_INLINE float round_to_odd_float(double value) {
  float f = static_cast<float>(value);
  if (!(f == f) || static_cast<double>(f) == value || is_infinite(f)) return f;
  std::uint32_t b = bits_as<std::uint32_t>(f);
  bool const away_from_zero = value > 0 ? static_cast<double>(f) > value : static_cast<double>(f) < value;
  if (away_from_zero) b -= 1;  // step back toward zero (the magnitude's bits)
  return bits_as<float>(b | 1u);
}

// ---------------------------------------------------------------------- encode / decode
// What an encode found: fine, or a value the format cannot hold (written saturated when the
// format saturates).
enum class encode_status : std::uint8_t { ok, out_of_range, not_a_number };

COALESCE_HOST_DEVICE COALESCE_INLINE double clamp_to(double x, double lo, double hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// An integer format's range as doubles ([lo, hi) with hi exclusive: 2^63 is not an int64).
COALESCE_HOST_DEVICE COALESCE_INLINE void integer_range(stored_format f, double& lo, double& hi_exclusive) {
  double const span = power_of_two(8 * f.bytes - (f.kind == number_kind::unsigned_int ? 0 : 1));
  lo = f.kind == number_kind::unsigned_int ? 0.0 : -span;
  hi_exclusive = span;
}

// Rounds x to an integer of format f (nearest, ties to even) and stores it.
COALESCE_HOST_DEVICE COALESCE_INLINE encode_status store_rounded_integer(std::byte* p, double x, stored_format f) {
  encode_status status = encode_status::ok;
  double lo, hi;
  integer_range(f, lo, hi);
  if (!(x == x)) {
    status = encode_status::not_a_number;
    x = 0.0;
  }
#if COALESCE_IN_DEVICE_CODE
  double r = rint(x);
#else
  double r = std::nearbyint(x);
#endif
  if (r < lo || r >= hi) {
    status = encode_status::out_of_range;
    r = r < lo ? lo : hi - (f.bytes == 8 ? 1024.0 : 1.0);  // the largest double below 2^63 (or the int max)
  }
  if (f.kind == number_kind::unsigned_int) {
    auto const u = static_cast<std::uint64_t>(r);
    switch (f.bytes) {
      case 1:
        store_bytes(p, static_cast<std::uint8_t>(u));
        break;
      case 2:
        store_bytes(p, static_cast<std::uint16_t>(u));
        break;
      case 4:
        store_bytes(p, static_cast<std::uint32_t>(u));
        break;
      default:
        store_bytes(p, u);
        break;
    }
  } else {
    auto const s = static_cast<std::int64_t>(r);
    switch (f.bytes) {
      case 1:
        store_bytes(p, static_cast<std::int8_t>(s));
        break;
      case 2:
        store_bytes(p, static_cast<std::int16_t>(s));
        break;
      case 4:
        store_bytes(p, static_cast<std::int32_t>(s));
        break;
      default:
        store_bytes(p, s);
        break;
    }
  }
  return status;
}

COALESCE_HOST_DEVICE COALESCE_INLINE std::int64_t load_signed(std::byte const* p, unsigned bytes) {
  switch (bytes) {
    case 1:
      return load_bytes<std::int8_t>(p);
    case 2:
      return load_bytes<std::int16_t>(p);
    case 4:
      return load_bytes<std::int32_t>(p);
    default:
      return load_bytes<std::int64_t>(p);
  }
}
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint64_t load_unsigned(std::byte const* p, unsigned bytes) {
  switch (bytes) {
    case 1:
      return load_bytes<std::uint8_t>(p);
    case 2:
      return load_bytes<std::uint16_t>(p);
    case 4:
      return load_bytes<std::uint32_t>(p);
    default:
      return load_bytes<std::uint64_t>(p);
  }
}

// A packed field's value (bits, signed_bits) in its word: its bits, sign-extended for signed_bits.
// At most 32 bits, so every value of either kind is an int64.
COALESCE_HOST_DEVICE COALESCE_INLINE std::int64_t packed_field(std::uint32_t word, stored_format f) {
  std::uint64_t const raw =
      (static_cast<std::uint64_t>(word) >> f.bit_offset) & ((std::uint64_t{1} << f.bit_count) - 1);
  if (f.kind != number_kind::packed_signed) return static_cast<std::int64_t>(raw);
  std::uint64_t const sign = std::uint64_t{1} << (f.bit_count - 1);
  return static_cast<std::int64_t>(raw ^ sign) - static_cast<std::int64_t>(sign);
}
// The same, read from the word at p.
COALESCE_HOST_DEVICE COALESCE_INLINE std::int64_t load_packed(std::byte const* p, stored_format f) {
  return packed_field(load_bytes<std::uint32_t>(p), f);
}
// Writes a packed field's bits (`raw`, already in range) into the word at p, leaving the other
// fields' bits alone. Atomic, on the GPU and the host: the fields of one word belong to different
// members, which different threads may write at the same time. `owned`: the caller's thread is
// the only one touching the word now (the conversion kernels, which give each element's columns
// to one thread, or run the columns one after another): a plain read-modify-write.
COALESCE_HOST_DEVICE COALESCE_INLINE void store_packed(std::byte* p, std::uint64_t raw, stored_format f,
                                                       bool owned = false) {
  std::uint32_t const mask = static_cast<std::uint32_t>(((std::uint64_t{1} << f.bit_count) - 1) << f.bit_offset);
  std::uint32_t const bits = static_cast<std::uint32_t>(raw << f.bit_offset) & mask;
  if (owned) {
    store_bytes(p, (load_bytes<std::uint32_t>(p) & ~mask) | bits);
    return;
  }
  // One compare-and-swap: two writers of the same field leave one of their values (an and then an
  // or, two atomics, could interleave into a mix of both), and a reader never sees it cleared.
#if COALESCE_IN_DEVICE_CODE
  auto* word = reinterpret_cast<unsigned int*>(p);
  unsigned int seen = *reinterpret_cast<unsigned int volatile*>(word);
  for (;;) {
    unsigned int const was = atomicCAS(word, seen, (seen & ~mask) | bits);
    if (was == seen) break;
    seen = was;
  }
#else
  std::atomic_ref<std::uint32_t> word(*reinterpret_cast<std::uint32_t*>(p));
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  while (!word.compare_exchange_weak(seen, (seen & ~mask) | bits, std::memory_order_relaxed)) {
  }
#endif
}

// `narrow` (a float, rounded to odd from a double where it came from one) as half or bfloat16
// bits; a finite source that rounds to infinity is out of range (saturated where f says so).
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint16_t sixteen_bit_float(float narrow, bool finite_source, stored_format f,
                                                                     encode_status& status) {
  bool const is_half = f.kind == number_kind::ieee_half;
  std::uint16_t bits = is_half ? float_to_half_bits(narrow) : float_to_bfloat16_bits(narrow);
  std::uint16_t const infinity = is_half ? 0x7c00 : 0x7f80;
  if ((bits & 0x7fffu) == infinity && finite_source) {  // a finite value too large
    status = encode_status::out_of_range;
    if (f.saturates) bits = static_cast<std::uint16_t>((bits & 0x8000u) | (infinity - 1u));
  }
  return bits;
}
COALESCE_HOST_DEVICE COALESCE_INLINE float sixteen_bit_float_value(std::uint16_t bits, stored_format f) {
  return f.kind == number_kind::ieee_half ? half_bits_to_float(bits) : bfloat16_bits_to_float(bits);
}

// The box's hi on a box_fraction format's axis: origin + 2^32 * step (one rounding).
COALESCE_HOST_DEVICE COALESCE_INLINE double box_end(stored_format f) {
#if COALESCE_IN_DEVICE_CODE
  return fma(power_of_two(32), f.step, f.origin);
#else
  return std::fma(power_of_two(32), f.step, f.origin);
#endif
}

// x in steps of the box (box_fixed): q = round((x - origin) / step), ties to even, as an unsigned
// 32-bit integer; with `wrap` q is taken modulo 2^32 (the image inside the box), which is exact for
// |q| < 2^52 (beyond that a double no longer holds every step: out of range). A format whose box
// was never given (step 0) holds nothing.
COALESCE_HOST_DEVICE COALESCE_INLINE encode_status encode_box_fraction(std::byte* p, double x, stored_format f) {
  stored_format const as_int{number_kind::unsigned_int, 4, 0, f.saturates};
  if (!(f.step > 0.0)) {
    store_bytes(p, std::uint32_t{0});
    return encode_status::out_of_range;
  }
  double steps = (x - f.origin) / f.step;
  // Up to hi itself is the last step (a read of the last steps as float can round to hi).
  if (!f.wraps && steps >= power_of_two(32) - 0.5 && x <= box_end(f)) steps = power_of_two(32) - 1.0;
  if (f.wraps && steps > -power_of_two(52) && steps < power_of_two(52)) {
#if COALESCE_IN_DEVICE_CODE
    double const r = rint(steps);
#else
    double const r = std::nearbyint(steps);
#endif
    double const turns = static_cast<double>(static_cast<std::int64_t>(r) >> 32);  // floor(r / 2^32)
    steps = r - turns * power_of_two(32);                                          // in [0, 2^32), exact
  }
  return store_rounded_integer(p, steps, as_int);
}

// Writes `value` (a floating computed value) in format f. Boxes = false: f is not box_fixed (the
// conversion kernels route those elsewhere, and leave that branch's registers out).
template <class C, bool Boxes = true>
COALESCE_HOST_DEVICE COALESCE_INLINE encode_status encode_floating(std::byte* p, C value, stored_format f) {
  switch (f.kind) {
    case number_kind::ieee_half:
    case number_kind::bfloat16: {
      float const narrow = sizeof(C) == 4 ? static_cast<float>(value) : round_to_odd_float(static_cast<double>(value));
      encode_status status = encode_status::ok;
      store_bytes(p, sixteen_bit_float(narrow, !is_infinite(value), f, status));
      return status;
    }
    case number_kind::floating: {
      if (f.bytes == 8) {
        store_bytes(p, static_cast<double>(value));
        return encode_status::ok;
      }
      float const narrow = static_cast<float>(value);
      if (is_infinite(narrow) && !is_infinite(value)) {
        store_bytes(p, f.saturates
                           ? (value < 0 ? -std::numeric_limits<float>::max() : std::numeric_limits<float>::max())
                           : narrow);
        return encode_status::out_of_range;
      }
      store_bytes(p, narrow);
      return encode_status::ok;
    }
    case number_kind::fixed: {
      if constexpr (std::is_same_v<C, float>) {
        // A float scaled by 2^F (F < 64) is exact in float unless it overflows to infinity, so
        // rounding it there gives the integer the double path gives, in a few single-precision
        // instructions (fixed_sum adds one per leaf per pair). NaN, infinities (an overflow
        // included) and values out of the integer's range fail the range test and take the
        // double path below, which reports or saturates them.
        float const scaled = value * float_power_of_two(f.fraction_bits);
#if COALESCE_IN_DEVICE_CODE
        float const r = rintf(scaled);
#else
        float const r = std::nearbyint(scaled);
#endif
        float const span = float_power_of_two(8 * static_cast<int>(f.bytes) - 1);
        if (r >= -span && r < span) {
          if (f.bytes == 8) {
            store_bytes(p, static_cast<std::int64_t>(r));
          } else {
            store_bytes(p, static_cast<std::int32_t>(r));
          }
          return encode_status::ok;
        }
      }
      double scaled = static_cast<double>(value) * power_of_two(f.fraction_bits);
      stored_format const as_int{number_kind::signed_int, f.bytes, 0, f.saturates};
      return store_rounded_integer(p, scaled, as_int);
    }
    case number_kind::box_fraction:
      if constexpr (Boxes) return encode_box_fraction(p, static_cast<double>(value), f);
      return encode_status::out_of_range;
    default:
      return store_rounded_integer(p, static_cast<double>(value), f);
  }
}

// `value` as packed format f's bits (two's complement for signed_bits), with the range check:
// [0, 2^bits) or [-2^(bits-1), 2^(bits-1)). Out of range: `status` says so, and the bits are the
// nearest value the field holds (what a saturating field stores; a reporting one stores nothing).
template <class C>
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint64_t packed_raw(C value, stored_format f, encode_status& status) {
  bool const is_signed = f.kind == number_kind::packed_signed;
  std::int64_t const lo = is_signed ? -(std::int64_t{1} << (f.bit_count - 1)) : 0;
  std::int64_t const hi = (std::int64_t{1} << (f.bit_count - (is_signed ? 1 : 0))) - 1;  // inclusive
  bool below, above;
  if constexpr (std::is_signed_v<C>) {
    below = static_cast<std::int64_t>(value) < lo;
    above = static_cast<std::int64_t>(value) > hi;
  } else {
    below = false;
    above = static_cast<std::uint64_t>(value) > static_cast<std::uint64_t>(hi);
  }
  status = below || above ? encode_status::out_of_range : encode_status::ok;
  return static_cast<std::uint64_t>(below ? lo : (above ? hi : static_cast<std::int64_t>(value)));
}
// The word with field f set to `raw` (packed_raw's bits).
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint32_t with_field(std::uint32_t word, std::uint64_t raw, stored_format f) {
  std::uint32_t const mask = static_cast<std::uint32_t>(((std::uint64_t{1} << f.bit_count) - 1) << f.bit_offset);
  return (word & ~mask) | (static_cast<std::uint32_t>(raw << f.bit_offset) & mask);
}

// True when the integer format f (not bit-packed) holds v.
COALESCE_HOST_DEVICE COALESCE_INLINE bool integer_fits(std::int64_t v, stored_format f) {
  if (f.kind == number_kind::unsigned_int)
    return v >= 0 && (f.bytes == 8 || static_cast<std::uint64_t>(v) < (std::uint64_t{1} << (8 * f.bytes)));
  std::int64_t const half_range = f.bytes == 8 ? 0 : std::int64_t{1} << (8 * f.bytes - 1);
  return f.bytes == 8 || (v >= -half_range && v < half_range);
}

// Writes `value` (an integer computed value) in integer format f.
template <class C> COALESCE_HOST_DEVICE COALESCE_INLINE encode_status encode_integer(std::byte* p, C value,
                                                                                     stored_format f,
                                                                                     bool owned = false) {
  if (is_packed(f)) {  // nothing written when out of range (unless the field saturates)
    encode_status status = encode_status::ok;
    std::uint64_t const raw = packed_raw(value, f, status);
    if (status != encode_status::ok && !f.saturates) return status;
    store_packed(p, raw, f, owned);
    return status;
  }
  bool fits;
  if constexpr (std::is_signed_v<C>) {
    fits = integer_fits(static_cast<std::int64_t>(value), f);
  } else {
    auto const v = static_cast<std::uint64_t>(value);
    unsigned const bits = 8 * f.bytes - (f.kind == number_kind::signed_int ? 1 : 0);
    fits = bits >= 64 || v < (std::uint64_t{1} << bits);
  }
  if (!fits) {
    if (!f.saturates) return encode_status::out_of_range;  // nothing written: the caller reports
    double lo, hi;
    integer_range(f, lo, hi);
    store_rounded_integer(p, std::is_signed_v<C> && value < 0 ? lo : hi, f);
    return encode_status::out_of_range;
  }
  switch (f.bytes) {
    case 1:
      store_bytes(p, static_cast<std::uint8_t>(value));
      break;
    case 2:
      store_bytes(p, static_cast<std::uint16_t>(value));
      break;
    case 4:
      store_bytes(p, static_cast<std::uint32_t>(value));
      break;
    default:
      store_bytes(p, static_cast<std::uint64_t>(value));
      break;
  }
  return encode_status::ok;
}

template <class C> COALESCE_HOST_DEVICE COALESCE_INLINE encode_status encode(std::byte* p, C value, stored_format f) {
  if constexpr (std::is_floating_point_v<C>) {
    return encode_floating(p, value, f);
  } else if constexpr (std::is_same_v<C, bool>) {
    if (is_packed(f)) return encode_integer(p, static_cast<unsigned>(value), f);
    memcpy(p, &value, sizeof(C));
    return encode_status::ok;
  } else if constexpr (std::is_integral_v<C>) {
    return encode_integer(p, value, f);
  } else {
    memcpy(p, &value, sizeof(C));
    return encode_status::ok;
  }
}

// The next C above (up) or below x.
template <class C> COALESCE_HOST_DEVICE COALESCE_INLINE C next_toward(C x, bool up) {
  C const to = up ? std::numeric_limits<C>::infinity() : -std::numeric_limits<C>::infinity();
#if COALESCE_IN_DEVICE_CODE
  if constexpr (std::is_same_v<C, float>) {
    return nextafterf(x, to);
  } else {
    return nextafter(x, to);
  }
#else
  return std::nextafter(x, to);
#endif
}

COALESCE_HOST_DEVICE COALESCE_INLINE double box_fraction_value(std::uint32_t q, stored_format f) {
#if COALESCE_IN_DEVICE_CODE
  return fma(static_cast<double>(q), f.step, f.origin);
#else
  return std::fma(static_cast<double>(q), f.step, f.origin);
#endif
}

// Stored word q as C: origin + q * step in one rounding (fma: the host and the GPU read the same
// double), then to C, kept inside [lo, hi) as C sees it: the last steps would round to hi (outside
// the box: a cell index one past the last), and a lo that C does not hold could round below lo
// (which box_fixed<> would refuse when written back). Every reader (proxies, conversions) gets it.
template <class C> COALESCE_HOST_DEVICE COALESCE_INLINE C box_read(std::uint32_t q, stored_format f) {
  double const v = box_fraction_value(q, f);
  if constexpr (std::is_floating_point_v<C>) {
    C r = static_cast<C>(v);
    double const hi = box_end(f);
    while (static_cast<double>(r) >= hi) r = next_toward<C>(r, false);
    while (static_cast<double>(r) < f.origin) r = next_toward<C>(r, true);
    return r;
  } else {
    return static_cast<C>(v);
  }
}

template <class C> COALESCE_HOST_DEVICE COALESCE_INLINE C decode(std::byte const* p, stored_format f) {
  if constexpr (std::is_arithmetic_v<C> && !std::is_same_v<C, bool>) {
    switch (f.kind) {
      case number_kind::ieee_half:
        return static_cast<C>(half_bits_to_float(load_bytes<std::uint16_t>(p)));
      case number_kind::bfloat16:
        return static_cast<C>(bfloat16_bits_to_float(load_bytes<std::uint16_t>(p)));
      case number_kind::floating:
        return f.bytes == 4 ? static_cast<C>(load_bytes<float>(p)) : static_cast<C>(load_bytes<double>(p));
      case number_kind::fixed:
        if constexpr (std::is_same_v<C, float>) {
          // A 32-bit q read as float: (float)q times 2^-F is exact scaling of one rounding, the
          // same value as rounding q * 2^-F from a double, without the double conversions (a
          // neighbour kernel gathering fixed-point positions does three per neighbour).
          if (f.bytes == 4)
            return static_cast<float>(load_bytes<std::int32_t>(p)) * float_power_of_two(-f.fraction_bits);
        }
        return static_cast<C>(static_cast<double>(load_signed(p, f.bytes)) * power_of_two(-f.fraction_bits));
      case number_kind::box_fraction:
        return box_read<C>(load_bytes<std::uint32_t>(p), f);
      case number_kind::signed_int:
        return static_cast<C>(load_signed(p, f.bytes));
      case number_kind::unsigned_int:
        return static_cast<C>(load_unsigned(p, f.bytes));
      case number_kind::packed_unsigned:
      case number_kind::packed_signed:
        return static_cast<C>(load_packed(p, f));
      default:
        return load_bytes<C>(p);
    }
  } else if constexpr (std::is_same_v<C, bool>) {
    return is_packed(f) ? load_packed(p, f) != 0 : load_bytes<bool>(p);
  } else {
    return load_bytes<C>(p);
  }
}

// One element from format `from` to format `to` (the type-erased conversions' inner step):
// through int64/uint64 between integer formats; through float from float, half and bfloat16
// (which float holds exactly: one conversion instruction each way on the GPU); through double
// otherwise. Its callers (the conversion kernels) own the destination element while they convert
// it, so a packed word is updated with a plain read-modify-write (store_packed's `owned`).
// An element into or out of a box_fixed column, through double (what the proxies read and write).
// Not inlined on the GPU: its double division would cost the conversion kernel's other paths
// registers (30 -> 38).
// (inline: one definition in every translation unit that includes this, nvcc's included.)
#if COALESCE_DEVICE_COMPILER
inline __noinline__
#else
inline
#endif
    COALESCE_HOST_DEVICE encode_status
    convert_box_element(std::byte* dst, stored_format to, std::byte const* src, stored_format from) {
  bool const float_holds_it = from.kind == number_kind::ieee_half || from.kind == number_kind::bfloat16 ||
                              (from.kind == number_kind::floating && from.bytes == 4);
  // Out of a box into float: the float a proxy reads (box_read<float>, inside [lo, hi)).
  bool const float_reads_it =
      from.kind == number_kind::box_fraction && to.kind == number_kind::floating && to.bytes == 4;
  if (float_holds_it || float_reads_it) return encode_floating(dst, decode<float>(src, from), to);
  return encode_floating(dst, decode<double>(src, from), to);
}

COALESCE_HOST_DEVICE COALESCE_INLINE encode_status convert_element(std::byte* dst, stored_format to,
                                                                   std::byte const* src, stored_format from) {
  if (to.kind == number_kind::box_fraction || from.kind == number_kind::box_fraction)
    return convert_box_element(dst, to, src, from);
  auto const integer = [](stored_format f) {
    return f.kind == number_kind::signed_int || f.kind == number_kind::unsigned_int || is_packed(f);
  };
  // A bool member (stored as its byte) into or out of bits.
  bool const boolean = from.kind == number_kind::opaque && from.bytes == 1 && is_packed(to);
  if (boolean) return encode_integer(dst, static_cast<unsigned>(load_bytes<std::uint8_t>(src) != 0), to, true);
  if (to.kind == number_kind::opaque && to.bytes == 1 && is_packed(from)) {
    store_bytes(dst, static_cast<std::uint8_t>(load_packed(src, from) != 0));
    return encode_status::ok;
  }
  if (integer(from) && integer(to)) {
    if (from.kind == number_kind::signed_int) return encode_integer(dst, load_signed(src, from.bytes), to, true);
    if (is_packed(from)) return encode_integer(dst, load_packed(src, from), to, true);
    return encode_integer(dst, load_unsigned(src, from.bytes), to, true);
  }
  bool const float_holds_it = from.kind == number_kind::ieee_half || from.kind == number_kind::bfloat16 ||
                              (from.kind == number_kind::floating && from.bytes == 4);
  if (float_holds_it) return encode_floating<float, false>(dst, decode<float>(src, from), to);
  return encode_floating<double, false>(dst, decode<double>(src, from), to);
}

}  // namespace detail
}  // namespace coalesce
