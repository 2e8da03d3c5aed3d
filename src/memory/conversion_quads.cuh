// The four-at-a-time conversion kernel (included by convert_columns_cuda.cu only): contiguous,
// aligned columns of 2- and 4-byte words converted (float <-> half, bfloat16) or kept, in vector
// loads and stores; and the batch description the word kernels share (conversion_words.cuh).
#pragma once
#include "conversion_elements.cuh"

namespace coalesce::detail {
namespace {
// Contiguous columns, 16-byte aligned on both sides, that a thread moves four elements at a time,
// read and written as one vector each (8 or 16 bytes) and converted in registers: float <-> half or
// bfloat16 (the conversions of most stored columns) and the 2- and 4-byte columns of a converted
// blob that keep their format. Typed words: the general convert_element writes through byte
// pointers of run-time widths, which put the buffers in local memory (0.5 of the copy ceiling).
// All such columns of one conversion go in one launch (the same throughput as a launch per column on
// the H200: soa -> soa with vel as half 0.72-0.73 of the copy ceiling either way; fewer launches to
// queue).
// pack_word / unpack_word head a run of bit-packed fields of one contiguous word column (the
// word_run of the general kernel, four elements at a time); word_member columns are done by it.
// pack_fresh_word: a pack_word run that holds every field of its word (nothing else of the
// conversion writes that word), so the words are composed from zero instead of read first.
enum class quad_op : unsigned char {
  none,
  copy4,
  copy2,
  narrow,
  widen,
  encode4,  // float -> a 4-byte stored number (fixed_point<std::int32_t, F>, box_fixed)
  decode4,  // the other way
  pack_word,
  pack_fresh_word,
  unpack_word,
  word_member
};

// A packed field of a word run as the word kernel uses it, worked out once on the host: per element
// a range test and two or three shifts, instead of the formats' general code (which made the word
// kernel wait on its instructions, not its loads: 0.66 of the copy ceiling).
struct field_plan {
  std::int64_t lo = 0;      // the field's smallest value
  std::uint64_t span = 0;   // its largest value minus lo
  std::uint32_t mask = 0;   // its bits in the word
  unsigned char shift = 0;  // its bit offset
  unsigned char left = 0;   // unpacking: (word << left) >> right, arithmetic where signed
  unsigned char right = 0;
  bool is_signed = false;
  bool always_fits = false;  // unpacking: the destination column holds every value of the field
};

struct quad_batch {
  column_conversion columns[conversions_per_launch];
  std::size_t column_index[conversions_per_launch];
  quad_op op[conversions_per_launch];
  unsigned char run_length[conversions_per_launch];  // pack_word, unpack_word: the run's columns
  field_plan fields[conversions_per_launch];         // the word runs' columns
  int count;
  std::size_t n;
};

field_plan plan_of(stored_format packed, stored_format other) {
  field_plan p;
  unsigned const bits = packed.bit_count;
  p.is_signed = packed.kind == number_kind::packed_signed;
  p.lo = p.is_signed ? -(std::int64_t{1} << (bits - 1)) : 0;
  p.span = (std::uint64_t{1} << bits) - 1;
  p.mask = static_cast<std::uint32_t>(p.span << packed.bit_offset);
  p.shift = packed.bit_offset;
  p.left = static_cast<unsigned char>(32 - packed.bit_offset - bits);
  p.right = static_cast<unsigned char>(32 - bits);
  std::int64_t const hi = p.lo + static_cast<std::int64_t>(p.span);
  if (other.kind == number_kind::opaque) {
    p.always_fits = true;  // a bool byte: value != 0
  } else if (other.bytes == 8) {
    p.always_fits = other.kind == number_kind::signed_int || p.lo >= 0;
  } else if (other.kind == number_kind::unsigned_int) {
    p.always_fits = p.lo >= 0 && hi < (std::int64_t{1} << (8 * other.bytes));
  } else {
    std::int64_t const half = std::int64_t{1} << (8 * other.bytes - 1);
    p.always_fits = p.lo >= -half && hi < half;
  }
  return p;
}

bool is_sixteen_bit_float(stored_format f) {
  return f.kind == number_kind::ieee_half || f.kind == number_kind::bfloat16;
}
bool is_float(stored_format f) { return f.kind == number_kind::floating && f.bytes == 4; }

// Four elements of a column that keeps its 4-byte (Quad = uint4) or 2-byte (uint2) elements.
template <class Quad>
__device__ void copy_quad(column_conversion const& col, std::size_t first, std::size_t n, bool whole) {
  constexpr std::size_t element = sizeof(Quad) / 4;
  if (whole) {
    *reinterpret_cast<Quad*>(col.dst.base + first * element) =
        *reinterpret_cast<Quad const*>(col.src.base + first * element);
    return;
  }
  for (std::size_t i = first; i < n; ++i) copy_element(col.dst.address(i), col.src.address(i), element);
}

// Elements [first, first + 4) of one column; whole == false: only those below n, one by one.
__device__ void move_quad(column_conversion const& col, quad_op op, std::size_t column, std::size_t first,
                          std::size_t n, bool whole, unsigned long long* first_failure) {
  std::byte* const dst = col.dst.base;
  std::byte const* const src = col.src.base;
  switch (op) {
    case quad_op::copy4:
      copy_quad<uint4>(col, first, n, whole);
      return;
    case quad_op::copy2:
      copy_quad<uint2>(col, first, n, whole);
      return;
    case quad_op::narrow: {
      if (!whole) {
        for (std::size_t i = first; i < n; ++i) {
          float const v = reinterpret_cast<float const*>(src)[i];
          encode_status status = encode_status::ok;
          reinterpret_cast<std::uint16_t*>(dst)[i] = sixteen_bit_float(v, !is_infinite(v), col.to, status);
          if (status != encode_status::ok && !col.to.saturates) report(first_failure, column, i);
        }
        return;
      }
      float4 const w = *reinterpret_cast<float4 const*>(src + first * 4);
      encode_status s0 = encode_status::ok, s1 = s0, s2 = s0, s3 = s0;
      std::uint32_t const b0 = sixteen_bit_float(w.x, !is_infinite(w.x), col.to, s0);
      std::uint32_t const b1 = sixteen_bit_float(w.y, !is_infinite(w.y), col.to, s1);
      std::uint32_t const b2 = sixteen_bit_float(w.z, !is_infinite(w.z), col.to, s2);
      std::uint32_t const b3 = sixteen_bit_float(w.w, !is_infinite(w.w), col.to, s3);
      *reinterpret_cast<uint2*>(dst + first * 2) = make_uint2(b0 | (b1 << 16), b2 | (b3 << 16));
      unsigned const bad = (s0 != encode_status::ok) | (s1 != encode_status::ok) << 1 | (s2 != encode_status::ok) << 2 |
                           (s3 != encode_status::ok) << 3;
      if (bad != 0 && !col.to.saturates) report(first_failure, column, first + __ffs(bad) - 1);
      return;
    }
    case quad_op::widen:
      if (!whole) {
        for (std::size_t i = first; i < n; ++i)
          reinterpret_cast<float*>(dst)[i] =
              sixteen_bit_float_value(reinterpret_cast<std::uint16_t const*>(src)[i], col.from);
        return;
      } else {
        uint2 const w = *reinterpret_cast<uint2 const*>(src + first * 2);
        float4 out;
        out.x = sixteen_bit_float_value(static_cast<std::uint16_t>(w.x & 0xffffu), col.from);
        out.y = sixteen_bit_float_value(static_cast<std::uint16_t>(w.x >> 16), col.from);
        out.z = sixteen_bit_float_value(static_cast<std::uint16_t>(w.y & 0xffffu), col.from);
        out.w = sixteen_bit_float_value(static_cast<std::uint16_t>(w.y >> 16), col.from);
        *reinterpret_cast<float4*>(dst + first * 4) = out;
      }
      return;
    default:  // encode4, decode4: number_columns_kernel; word runs: conversion_words.cuh
      return;
  }
}

// Thread q: elements [4q, 4q + 4) of every column of the batch; the thread past the last whole
// quad takes the last n % 4 elements.
// 6 blocks of 256 per SM: 38 registers without spills (50 unbounded, 45 % of the warps resident;
// the kernel waits on its loads).
__global__ void __launch_bounds__(256, 6)
    quad_columns_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    for (int c = 0; c < batch.count; ++c)
      move_quad(batch.columns[c], batch.op[c], batch.column_index[c], 4 * q, batch.n, q < quads, first_failure);
  }
}

// Float columns into and out of 4-byte stored numbers (fixed_point<std::int32_t, F>, box_fixed),
// four elements per thread, each with the general kernel's encoding (encode_floating, decode), in
// a launch of their own: in the quad kernel their double arithmetic and box calls spilled the half
// columns' registers (a 96-byte stack frame).
__device__ void encode_or_decode_quad(column_conversion const& col, quad_op op, std::size_t column, std::size_t first,
                                      std::size_t n, bool whole, unsigned long long* first_failure) {
  if (!whole) {
    for (std::size_t i = first; i < n; ++i) {
      auto const status = convert_element(col.dst.address(i), col.to, col.src.address(i), col.from);
      if (status != encode_status::ok && !col.to.saturates) report(first_failure, column, i);
    }
    return;
  }
  if (op == quad_op::decode4) {
    uint4 const w = *reinterpret_cast<uint4 const*>(col.src.base + first * 4);
    float4 out;
    out.x = decode<float>(reinterpret_cast<std::byte const*>(&w.x), col.from);
    out.y = decode<float>(reinterpret_cast<std::byte const*>(&w.y), col.from);
    out.z = decode<float>(reinterpret_cast<std::byte const*>(&w.z), col.from);
    out.w = decode<float>(reinterpret_cast<std::byte const*>(&w.w), col.from);
    *reinterpret_cast<float4*>(col.dst.base + first * 4) = out;
    return;
  }
  float4 const v = *reinterpret_cast<float4 const*>(col.src.base + first * 4);
  uint4 q;
  encode_status const s0 = encode_floating(reinterpret_cast<std::byte*>(&q.x), v.x, col.to);
  encode_status const s1 = encode_floating(reinterpret_cast<std::byte*>(&q.y), v.y, col.to);
  encode_status const s2 = encode_floating(reinterpret_cast<std::byte*>(&q.z), v.z, col.to);
  encode_status const s3 = encode_floating(reinterpret_cast<std::byte*>(&q.w), v.w, col.to);
  *reinterpret_cast<uint4*>(col.dst.base + first * 4) = q;
  unsigned const bad = (s0 != encode_status::ok) | (s1 != encode_status::ok) << 1 | (s2 != encode_status::ok) << 2 |
                       (s3 != encode_status::ok) << 3;
  if (bad != 0 && !col.to.saturates) report(first_failure, column, first + __ffs(bad) - 1);
}

__global__ void __launch_bounds__(256, 4)
    number_columns_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    for (int c = 0; c < batch.count; ++c)
      encode_or_decode_quad(batch.columns[c], batch.op[c], batch.column_index[c], 4 * q, batch.n, q < quads,
                            first_failure);
  }
}

}  // namespace
}  // namespace coalesce::detail
