// The four-at-a-time conversion kernels (included by convert_columns_cuda.cu only): contiguous,
// aligned columns of 2- and 4-byte words converted (float <-> half, bfloat16; float <-> 4-byte
// fixed point and box_fixed words) or kept, in vector loads and stores; and the batch description
// the word kernels share (conversion_words.cuh).
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
  double inverse_step[conversions_per_launch];       // encode4 into a box: 1 / step (encode_number)
  int count;
  std::size_t n;
};

// Column `index` of the conversion, moved by `op`, at the end of the batch (a run of one until a
// word run's head says otherwise); its place in the batch.
int append_column(quad_batch& batch, column_conversion const& col, std::size_t index, quad_op op) {
  int const at = batch.count++;
  batch.columns[at] = col;
  batch.column_index[at] = index;
  batch.op[at] = op;
  batch.run_length[at] = 1;
  return at;
}

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

// The four source elements [first, first + 4) of a quad column, as one vector load: 16 bytes of
// 4-byte elements (copy4, narrow, encode4, decode4), 8 bytes of 2-byte ones (copy2, widen, in .x
// and .y). Split from store_quad so that a kernel can have several columns' loads in flight before
// it converts the first (one column at a time, each thread waited for every load in turn).
__device__ uint4 load_quad(column_conversion const& col, quad_op op, std::size_t first) {
  if (op == quad_op::copy2 || op == quad_op::widen) {
    uint2 const two = *reinterpret_cast<uint2 const*>(col.src.base + first * 2);
    return make_uint4(two.x, two.y, 0, 0);
  }
  return *reinterpret_cast<uint4 const*>(col.src.base + first * 4);
}

// Four 4-byte elements' report of the formats that could not hold them: the first one reported.
__device__ void report_first_of_four(unsigned long long* first_failure, std::size_t column, std::size_t first,
                                     encode_status s0, encode_status s1, encode_status s2, encode_status s3) {
  unsigned const bad = (s0 != encode_status::ok) | (s1 != encode_status::ok) << 1 | (s2 != encode_status::ok) << 2 |
                       (s3 != encode_status::ok) << 3;
  if (bad != 0) report(first_failure, column, first + __ffs(bad) - 1);
}

// A float as a 4-byte stored number (fixed_point<std::int32_t, F> or box_fixed), the same bits as
// encode_floating writes: its common path in registers (through encode_floating's byte pointer,
// whose stores may be 2, 4 or 8 bytes wide, the words went through the stack), the rest (out of
// range, NaN, the last steps of a box, a step count near a half-integer) through encode_floating
// itself. inverse_step: 1 / f.step for a box, worked out on the host (a division per element made
// box encoding wait on its instructions: 0.80 of the copy ceiling; one per quad: 0.84-0.86).
__device__ std::uint32_t encode_number(float v, stored_format f, double inverse_step, encode_status& status) {
  status = encode_status::ok;
  if (f.kind == number_kind::fixed) {
    float const r = rintf(v * float_power_of_two(f.fraction_bits));
    if (r >= -float_power_of_two(31) && r < float_power_of_two(31))
      return static_cast<std::uint32_t>(static_cast<std::int32_t>(r));
  } else if (inverse_step > 0.0) {  // (0: no box given, the step 0; encode_floating reports it)
    // encode_box_fraction rounds the correctly rounded quotient (x - origin) / step. The product
    // with the rounded reciprocal lies within 2^-52 |q| of the exact quotient, and so does that
    // quotient: where the product is farther than 2^-50 |q| from a half-integer, both round to
    // the same integer. Only step counts in [0, 2^32) are taken here (no wrap to take, not the
    // box's last half step), so 2^-18 bounds that distance (nearer, NaN and infinities:
    // encode_floating's division; random coordinates about one in 2^17, but coordinates on a grid
    // finer than the step, e.g. floats near the origin of a power-of-two box, can be exact ties).
    double const q = (static_cast<double>(v) - f.origin) * inverse_step;
    double const r = rint(q);
    if (fabs(q - r) < 0.5 - 0x1p-18 && r >= 0.0 && r < power_of_two(32)) return static_cast<std::uint32_t>(r);
  }
  std::uint32_t word = 0;
  status = encode_floating(reinterpret_cast<std::byte*>(&word), v, f);
  return word;
}
// The float that decode<float> reads from a 4-byte stored number's word.
__device__ float decode_number(std::uint32_t word, stored_format f) {
  if (f.kind == number_kind::fixed)
    return static_cast<float>(static_cast<std::int32_t>(word)) * float_power_of_two(-f.fraction_bits);
  return box_read<float>(word, f);
}

// Float into and out of 4-byte stored numbers, four elements.
__device__ void encode_or_decode_quad(column_conversion const& col, quad_op op, std::size_t column, std::size_t first,
                                      uint4 raw, double inverse_step, unsigned long long* first_failure) {
  if (op == quad_op::decode4) {
    *reinterpret_cast<float4*>(col.dst.base + first * 4) =
        make_float4(decode_number(raw.x, col.from), decode_number(raw.y, col.from), decode_number(raw.z, col.from),
                    decode_number(raw.w, col.from));
    return;
  }
  encode_status s0, s1, s2, s3;
  uint4 const q = make_uint4(encode_number(__uint_as_float(raw.x), col.to, inverse_step, s0),
                             encode_number(__uint_as_float(raw.y), col.to, inverse_step, s1),
                             encode_number(__uint_as_float(raw.z), col.to, inverse_step, s2),
                             encode_number(__uint_as_float(raw.w), col.to, inverse_step, s3));
  *reinterpret_cast<uint4*>(col.dst.base + first * 4) = q;
  if (!col.to.saturates) report_first_of_four(first_failure, column, first, s0, s1, s2, s3);
}

// Converts (or keeps) and stores the four elements that load_quad read. Numbers: the batch may
// hold encode4 / decode4 columns; without them their double arithmetic and box code stay out of
// the kernel (in the half columns' kernel they spilled its registers: a 96-byte stack frame).
// inverse_step: the batch's, for an encode4 column into a box.
template <bool Numbers> __device__ void store_quad(column_conversion const& col, quad_op op, std::size_t column,
                                                   std::size_t first, uint4 raw, unsigned long long* first_failure,
                                                   double inverse_step = 0.0) {
  std::byte* const dst = col.dst.base;
  switch (op) {
    case quad_op::copy4:
      *reinterpret_cast<uint4*>(dst + first * 4) = raw;
      return;
    case quad_op::copy2:
      *reinterpret_cast<uint2*>(dst + first * 2) = make_uint2(raw.x, raw.y);
      return;
    case quad_op::narrow: {
      float const w[4] = {__uint_as_float(raw.x), __uint_as_float(raw.y), __uint_as_float(raw.z),
                          __uint_as_float(raw.w)};
      encode_status s[4] = {encode_status::ok, encode_status::ok, encode_status::ok, encode_status::ok};
      std::uint32_t b[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) b[k] = sixteen_bit_float(w[k], !is_infinite(w[k]), col.to, s[k]);
      *reinterpret_cast<uint2*>(dst + first * 2) = make_uint2(b[0] | (b[1] << 16), b[2] | (b[3] << 16));
      if (!col.to.saturates) report_first_of_four(first_failure, column, first, s[0], s[1], s[2], s[3]);
      return;
    }
    case quad_op::widen: {
      float4 out;
      out.x = sixteen_bit_float_value(static_cast<std::uint16_t>(raw.x & 0xffffu), col.from);
      out.y = sixteen_bit_float_value(static_cast<std::uint16_t>(raw.x >> 16), col.from);
      out.z = sixteen_bit_float_value(static_cast<std::uint16_t>(raw.y & 0xffffu), col.from);
      out.w = sixteen_bit_float_value(static_cast<std::uint16_t>(raw.y >> 16), col.from);
      *reinterpret_cast<float4*>(dst + first * 4) = out;
      return;
    }
    case quad_op::encode4:
    case quad_op::decode4:
      if constexpr (Numbers) {
        encode_or_decode_quad(col, op, column, first, raw, inverse_step, first_failure);
      } else {
        __trap();  // the batching sends number columns to number_columns_kernel only
      }
      return;
    default:  // word runs: conversion_words.cuh
      return;
  }
}

// Elements [first, n) of one column (fewer than four: the last n % 4), one by one. The half
// conversions with their own code, not convert_element's: its general paths spilled the registers
// of the kernels without numbers.
template <bool Numbers> __device__ void move_tail(column_conversion const& col, quad_op op, std::size_t column,
                                                  std::size_t first, std::size_t n, unsigned long long* first_failure) {
  for (std::size_t i = first; i < n; ++i) {
    switch (op) {
      case quad_op::copy4:
      case quad_op::copy2:
        copy_element(col.dst.address(i), col.src.address(i), col.width);
        break;
      case quad_op::narrow: {
        float const v = reinterpret_cast<float const*>(col.src.base)[i];
        encode_status status = encode_status::ok;
        reinterpret_cast<std::uint16_t*>(col.dst.base)[i] = sixteen_bit_float(v, !is_infinite(v), col.to, status);
        if (status != encode_status::ok && !col.to.saturates) report(first_failure, column, i);
        break;
      }
      case quad_op::widen:
        reinterpret_cast<float*>(col.dst.base)[i] =
            sixteen_bit_float_value(reinterpret_cast<std::uint16_t const*>(col.src.base)[i], col.from);
        break;
      case quad_op::encode4:
      case quad_op::decode4:
        if constexpr (Numbers) {
          auto const status = convert_element(col.dst.address(i), col.to, col.src.address(i), col.from);
          if (status != encode_status::ok && !col.to.saturates) report(first_failure, column, i);
        } else {
          __trap();  // the batching sends number columns to number_columns_kernel only
        }
        break;
      default:
        break;
    }
  }
}

// Elements [first, first + 4) of one column; whole == false: only those below n, one by one. For
// the word kernels, which take no number columns.
__device__ void move_quad(column_conversion const& col, quad_op op, std::size_t column, std::size_t first,
                          std::size_t n, bool whole, unsigned long long* first_failure) {
  if (whole) {
    store_quad<false>(col, op, column, first, load_quad(col, op, first), first_failure);
  } else {
    move_tail<false>(col, op, column, first, n, first_failure);
  }
}

// Thread q: elements [4q, 4q + 4) of every column of the batch, the loads of four columns in
// flight together; the thread past the last whole quad takes the last n % 4 elements.
// Without numbers 6 blocks of 256 per SM (the kernel waits on its loads; one column at a time it
// took 38 registers, 50 unbounded). With numbers (encode4 / decode4 columns in the batch) 4 blocks.
// Group: the columns whose loads are in flight together (two: 40 registers without spills in the
// kernel without numbers, where four spilled).
template <bool Numbers, int Group>
__device__ void quad_columns(quad_batch const& batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    std::size_t const first = 4 * q;
    if (q == quads) {
      for (int c = 0; c < batch.count; ++c)
        move_tail<Numbers>(batch.columns[c], batch.op[c], batch.column_index[c], first, batch.n, first_failure);
      continue;
    }
    for (int c0 = 0; c0 < batch.count; c0 += Group) {
      uint4 raw[Group];
#pragma unroll
      for (int j = 0; j < Group; ++j) {
        if (c0 + j < batch.count) raw[j] = load_quad(batch.columns[c0 + j], batch.op[c0 + j], first);
      }
#pragma unroll
      for (int j = 0; j < Group; ++j) {
        if (c0 + j < batch.count)
          store_quad<Numbers>(batch.columns[c0 + j], batch.op[c0 + j], batch.column_index[c0 + j], first, raw[j],
                              first_failure, batch.inverse_step[c0 + j]);
      }
    }
  }
}
__global__ void __launch_bounds__(256, 6)
    quad_columns_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  quad_columns<false, 2>(batch, first_failure);
}
__global__ void __launch_bounds__(256, 4)
    number_columns_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  quad_columns<true, 4>(batch, first_failure);
}
bool has_numbers(quad_batch const& batch) {
  for (int c = 0; c < batch.count; ++c) {
    if (batch.op[c] == quad_op::encode4 || batch.op[c] == quad_op::decode4) return true;
  }
  return false;
}

}  // namespace
}  // namespace coalesce::detail
