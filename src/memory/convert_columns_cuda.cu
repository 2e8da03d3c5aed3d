// Columns that change number format on the way, in GPU memory: one launch per batch of columns,
// each thread converting elements of every column of the batch; the first element a format could
// not hold is kept as (column << 48 | element) with atomicMin and read back once.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <coalesce/memory/buffer.hpp>

#include "convert_columns.hpp"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {
namespace {
constexpr int conversions_per_launch = 16;
// Bit-packed fields that share one word go together: `pack` heads a run of columns written into
// one destination word (read once, every field inserted in registers, written once), `unpack` a
// run read out of one source word; `member` columns are done by their run's head. A field at a
// time would read and write its word once per field, each waiting for the last (0.3 of the copy
// ceiling for four fields on the H200).
enum class word_run : unsigned char { none, pack, unpack, member };
struct conversion_batch {
  column_conversion columns[conversions_per_launch];
  std::size_t column_index[conversions_per_launch];  // each column's index in the caller's list
  word_run run[conversions_per_launch];
  unsigned char run_length[conversions_per_launch];
  int count;
  std::size_t n;
};

// One element of a column that keeps its format: widths of 1, 2, 4 and 8 bytes as one access
// (columns are aligned to their element width), any other width byte by byte.
__device__ void copy_element(std::byte* dst, std::byte const* src, std::size_t width) {
  switch (width) {
    case 1:
      *dst = *src;
      return;
    case 2:
      *reinterpret_cast<std::uint16_t*>(dst) = *reinterpret_cast<std::uint16_t const*>(src);
      return;
    case 4:
      *reinterpret_cast<std::uint32_t*>(dst) = *reinterpret_cast<std::uint32_t const*>(src);
      return;
    case 8:
      *reinterpret_cast<std::uint64_t*>(dst) = *reinterpret_cast<std::uint64_t const*>(src);
      return;
    default:
      for (std::size_t b = 0; b < width; ++b) dst[b] = src[b];
  }
}

__device__ void report(unsigned long long* first_failure, std::size_t column, std::size_t i) {
  atomicMin(first_failure, (static_cast<unsigned long long>(column) << 48) | i);
}

// A packed field's bits from its source column (an integer or a bool byte), range-checked.
__device__ std::uint64_t field_bits(column_conversion const& col, std::size_t i, encode_status& status) {
  std::byte const* const src = col.src.address(i);
  switch (col.from.kind) {
    case number_kind::signed_int:
      return packed_raw(load_signed(src, col.from.bytes), col.to, status);
    case number_kind::unsigned_int:
      return packed_raw(load_unsigned(src, col.from.bytes), col.to, status);
    default:  // a bool member's byte
      return packed_raw(static_cast<unsigned>(load_bytes<std::uint8_t>(src) != 0), col.to, status);
  }
}

// Element i of the word run columns[head, end): the word read once, each field inserted (a refused
// value leaves its field as it was and is reported by its index), the word written once. Both
// conversion kernels' batches hold a run this way.
__device__ void pack_element(column_conversion const* columns, std::size_t const* index, int head, int end,
                             std::size_t i, unsigned long long* first_failure) {
  std::byte* const at = columns[head].dst.address(i);
  std::uint32_t word = load_bytes<std::uint32_t>(at);
  for (int c = head; c < end; ++c) {
    encode_status status = encode_status::ok;
    std::uint64_t const raw = field_bits(columns[c], i, status);
    if (status != encode_status::ok && !columns[c].to.saturates) {
      report(first_failure, index[c], i);
      continue;
    }
    word = with_field(word, raw, columns[c].to);
  }
  store_bytes(at, word);
}

// One field of a packed word into its own column's element at dst (an integer, or a bool byte).
__device__ encode_status unpack_field(std::uint32_t word, column_conversion const& col, std::byte* dst) {
  std::int64_t const value = packed_field(word, col.from);
  if (col.to.kind == number_kind::opaque) {  // a bool member's byte
    store_bytes(dst, static_cast<std::uint8_t>(value != 0));
    return encode_status::ok;
  }
  return encode_integer(dst, value, col.to, true);
}

__global__ void convert_columns_kernel(__grid_constant__ conversion_batch const batch,
                                       unsigned long long* first_failure) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < batch.n; i += threads) {
    for (int c = 0; c < batch.count; ++c) {
      if (batch.run[c] == word_run::member) continue;
      if (batch.run[c] == word_run::pack) {
        pack_element(batch.columns, batch.column_index, c, c + batch.run_length[c], i, first_failure);
        continue;
      }
      if (batch.run[c] == word_run::unpack) {
        std::uint32_t const word = load_bytes<std::uint32_t>(batch.columns[c].src.address(i));
        for (int f = c; f < c + batch.run_length[c]; ++f) {
          column_conversion const& col = batch.columns[f];
          encode_status const status = unpack_field(word, col, col.dst.address(i));
          if (status != encode_status::ok && !col.to.saturates) report(first_failure, batch.column_index[f], i);
        }
        continue;
      }
      column_conversion const& col = batch.columns[c];
      if (col.to == col.from && !is_packed(col.to)) {  // keeps its format (a packed field: its bits only)
        copy_element(col.dst.address(i), col.src.address(i), col.width);
        continue;
      }
      auto const status = convert_element(col.dst.address(i), col.to, col.src.address(i), col.from);
      if (status != encode_status::ok && !col.to.saturates) {
        atomicMin(first_failure, (static_cast<unsigned long long>(batch.column_index[c]) << 48) | i);
      }
    }
  }
}
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
    case quad_op::none:
      return;
  }
}

// Thread q: elements [4q, 4q + 4) of every column of the batch; the thread past the last whole
// quad takes the last n % 4 elements.
// 6 blocks of 256 per SM: 38 registers without spills (50 unbounded, 45 % of the warps resident;
// the kernel waits on its loads).
// Four consecutive elements of a contiguous integer (or bool byte) column of 1, 2 or 4 bytes: one
// vector load of 4, 8 or 16 bytes, widened later by widen_four (so that a run's loads can all be in
// flight before the first is used).
__device__ uint4 load_four_raw(column_conversion const& col, std::size_t first) {
  std::byte const* const at = col.src.base + first * col.from.bytes;
  if (col.from.bytes == 4) return *reinterpret_cast<uint4 const*>(at);
  if (col.from.bytes == 2) {
    uint2 const u = *reinterpret_cast<uint2 const*>(at);
    return make_uint4(u.x, u.y, 0, 0);
  }
  return make_uint4(*reinterpret_cast<std::uint32_t const*>(at), 0, 0, 0);
}

// The four values of load_four_raw as int64 (sign-extended where the column is signed).
__device__ void widen_four(column_conversion const& col, uint4 raw, std::int64_t (&v)[4]) {
  bool const is_signed = col.from.kind == number_kind::signed_int;
  if (col.from.bytes == 1) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      auto const b = static_cast<std::uint8_t>(raw.x >> (8 * k));
      // Each branch widened to int64 on its own: a conditional's common type of int32 and uint32
      // is uint32, which loses the sign.
      v[k] = col.from.kind == number_kind::opaque ? std::int64_t{b != 0}
             : is_signed                          ? std::int64_t{static_cast<std::int8_t>(b)}
                                                  : std::int64_t{b};
    }
  } else if (col.from.bytes == 2) {
    std::uint32_t const pair[2] = {raw.x, raw.y};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      auto const h = static_cast<std::uint16_t>(pair[k / 2] >> (16 * (k % 2)));
      v[k] = is_signed ? std::int64_t{static_cast<std::int16_t>(h)} : std::int64_t{h};
    }
  } else {
    std::uint32_t const w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = is_signed ? std::int64_t{static_cast<std::int32_t>(w[k])} : std::int64_t{w[k]};
  }
}

// A word run of the quad batch over elements [first, first + 4) (whole) or [first, n) one by one.
// fresh: the run holds every field of its words, which are composed from zero instead of read.
__device__ void pack_quad(quad_batch const& batch, int head, std::size_t first, std::size_t n, bool whole, bool fresh,
                          unsigned long long* first_failure) {
  int const end = head + batch.run_length[head];
  if (!whole) {
    for (std::size_t i = first; i < n; ++i)
      pack_element(batch.columns, batch.column_index, head, end, i, first_failure);
    return;
  }
  auto* const at = reinterpret_cast<uint4*>(batch.columns[head].dst.base + first * 4);
  std::uint32_t w[4] = {0, 0, 0, 0};
  if (!fresh) {
    uint4 const old = *at;
    w[0] = old.x, w[1] = old.y, w[2] = old.z, w[3] = old.w;
  }
  // Four columns' loads issued together, then packed: one at a time, each thread waited for every
  // column's load in turn (the word kernel at 0.6 of the copy ceiling's bandwidth).
  constexpr int group = 4;
  for (int c0 = head; c0 < end; c0 += group) {
    uint4 raw[group];
#pragma unroll
    for (int j = 0; j < group; ++j) {
      if (c0 + j < end) raw[j] = load_four_raw(batch.columns[c0 + j], first);
    }
#pragma unroll
    for (int j = 0; j < group; ++j) {
      int const c = c0 + j;
      if (c >= end) break;
      column_conversion const& col = batch.columns[c];
      field_plan const plan = batch.fields[c];
      std::int64_t v[4];
      widen_four(col, raw[j], v);
      bool in_range = true;
#pragma unroll
      for (int k = 0; k < 4; ++k) in_range = in_range && static_cast<std::uint64_t>(v[k] - plan.lo) <= plan.span;
      if (in_range) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          w[k] = (w[k] & ~plan.mask) | ((static_cast<std::uint32_t>(v[k]) << plan.shift) & plan.mask);
        continue;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {  // saturated or reported, element by element
        encode_status status = encode_status::ok;
        std::uint64_t const field = packed_raw(v[k], col.to, status);
        if (status != encode_status::ok && !col.to.saturates) {
          report(first_failure, batch.column_index[c], first + k);
          continue;
        }
        w[k] = with_field(w[k], field, col.to);
      }
    }
  }
  *at = make_uint4(w[0], w[1], w[2], w[3]);
}

// Four values into a contiguous column of 1, 2, 4 or 8-byte elements aligned to four of them: one
// vector store (two of 16 bytes for 8-byte elements). Element by element, a warp's store of 4-byte
// fields at a 16-byte stride wrote each sector four times (L2 saw 4x the bytes).
__device__ void store_four(std::byte* at, unsigned bytes, std::uint64_t const (&b)[4]) {
  switch (bytes) {
    case 1:
      *reinterpret_cast<std::uint32_t*>(at) =
          static_cast<std::uint32_t>((b[0] & 0xff) | (b[1] & 0xff) << 8 | (b[2] & 0xff) << 16 | (b[3] & 0xff) << 24);
      return;
    case 2:
      *reinterpret_cast<uint2*>(at) = make_uint2(static_cast<std::uint32_t>((b[0] & 0xffff) | (b[1] & 0xffff) << 16),
                                                 static_cast<std::uint32_t>((b[2] & 0xffff) | (b[3] & 0xffff) << 16));
      return;
    case 4:
      *reinterpret_cast<uint4*>(at) = make_uint4(static_cast<std::uint32_t>(b[0]), static_cast<std::uint32_t>(b[1]),
                                                 static_cast<std::uint32_t>(b[2]), static_cast<std::uint32_t>(b[3]));
      return;
    default:
      reinterpret_cast<ulonglong2*>(at)[0] = make_ulonglong2(b[0], b[1]);
      reinterpret_cast<ulonglong2*>(at)[1] = make_ulonglong2(b[2], b[3]);
      return;
  }
}

__device__ void unpack_quad(quad_batch const& batch, int head, std::size_t first, std::size_t n, bool whole,
                            unsigned long long* first_failure) {
  int const end = head + batch.run_length[head];
  std::size_t const last = whole ? first + 4 : n;
  std::uint32_t w[4] = {0, 0, 0, 0};
  if (whole) {
    uint4 const u = *reinterpret_cast<uint4 const*>(batch.columns[head].src.base + first * 4);
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // constant indices: the words stay in registers
      if (first + k < last) w[k] = load_bytes<std::uint32_t>(batch.columns[head].src.address(first + k));
    }
  }
  for (int c = head; c < end; ++c) {
    column_conversion const& col = batch.columns[c];
    field_plan const plan = batch.fields[c];
    if (whole && plan.always_fits) {
      std::uint64_t bits[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        std::uint32_t const up = w[k] << plan.left;
        std::int64_t const value =
            plan.is_signed ? std::int64_t{static_cast<std::int32_t>(up) >> plan.right} : std::int64_t{up >> plan.right};
        bits[k] = col.to.kind == number_kind::opaque ? std::uint64_t{value != 0} : static_cast<std::uint64_t>(value);
      }
      store_four(col.dst.base + first * col.to.bytes, col.to.bytes, bits);
      continue;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      std::size_t const i = first + k;
      if (i >= last) break;
      encode_status const status = unpack_field(w[k], col, col.dst.base + i * col.to.bytes);
      if (status != encode_status::ok && !col.to.saturates) report(first_failure, batch.column_index[c], i);
    }
  }
}

__global__ void __launch_bounds__(256, 6)
    quad_columns_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    for (int c = 0; c < batch.count; ++c)
      move_quad(batch.columns[c], batch.op[c], batch.column_index[c], 4 * q, batch.n, q < quads, first_failure);
  }
}

// The word runs, four elements per thread, and the quad columns that fit beside them: a launch of
// its own (in the quad kernel, bounded to 40 registers for the half columns, the runs spilled);
// 64 registers, no spills.
__global__ void __launch_bounds__(256, 4)
    word_columns_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    for (int c = 0; c < batch.count; ++c) {
      if (batch.op[c] == quad_op::pack_word || batch.op[c] == quad_op::pack_fresh_word)
        pack_quad(batch, c, 4 * q, batch.n, q < quads, batch.op[c] == quad_op::pack_fresh_word, first_failure);
      else if (batch.op[c] == quad_op::unpack_word)
        unpack_quad(batch, c, 4 * q, batch.n, q < quads, first_failure);
      else if (batch.op[c] != quad_op::word_member)
        move_quad(batch.columns[c], batch.op[c], batch.column_index[c], 4 * q, batch.n, q < quads, first_failure);
    }
  }
}

// The common word batch, specialised on the host: one word run of Fields fields (the batch's first
// columns) and up to max_shape_copies copy4 / copy2 columns after it. Every column is read at an
// index known at compile time (its description a constant-bank operand, not a parameter-space load
// per column per quad as in word_columns_kernel, which spent ~600 instructions per warp per quad
// interpreting its batch), and every load of a quad is issued before the first is used.
constexpr int max_shape_copies = 8;

template <int Fields> __device__ void pack_shape_quad(quad_batch const& batch, std::size_t first, bool fresh,
                                                      unsigned long long* first_failure) {
  auto* const at = reinterpret_cast<uint4*>(batch.columns[0].dst.base + first * 4);
  std::uint32_t w[4] = {0, 0, 0, 0};
  if (!fresh) {
    uint4 const old = *at;
    w[0] = old.x, w[1] = old.y, w[2] = old.z, w[3] = old.w;
  }
  // Four fields' loads in flight at a time (all of eight 4-byte fields spilled at 64 registers).
  constexpr int group = 4;
#pragma unroll
  for (int f0 = 0; f0 < Fields; f0 += group) {
    uint4 raw[group];
#pragma unroll
    for (int j = 0; j < group; ++j) {
      if (f0 + j < Fields) raw[j] = load_four_raw(batch.columns[f0 + j], first);
    }
#pragma unroll
    for (int j = 0; j < group; ++j) {
      int const f = f0 + j;
      if (f >= Fields) break;
      column_conversion const& col = batch.columns[f];
      field_plan const& plan = batch.fields[f];
      std::int64_t v[4];
      widen_four(col, raw[j], v);
      bool in_range = true;
#pragma unroll
      for (int k = 0; k < 4; ++k) in_range = in_range && static_cast<std::uint64_t>(v[k] - plan.lo) <= plan.span;
      if (in_range) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          w[k] = (w[k] & ~plan.mask) | ((static_cast<std::uint32_t>(v[k]) << plan.shift) & plan.mask);
        continue;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {  // saturated or reported, element by element
        encode_status status = encode_status::ok;
        std::uint64_t const field = packed_raw(v[k], col.to, status);
        if (status != encode_status::ok && !col.to.saturates) {
          report(first_failure, batch.column_index[f], first + k);
          continue;
        }
        w[k] = with_field(w[k], field, col.to);
      }
    }
  }
  *at = make_uint4(w[0], w[1], w[2], w[3]);
}

template <int Fields>
__device__ void unpack_shape_quad(quad_batch const& batch, std::size_t first, unsigned long long* first_failure) {
  uint4 const u = *reinterpret_cast<uint4 const*>(batch.columns[0].src.base + first * 4);
  std::uint32_t const w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int f = 0; f < Fields; ++f) {
    column_conversion const& col = batch.columns[f];
    field_plan const& plan = batch.fields[f];
    if (plan.always_fits) {
      std::uint64_t bits[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        std::uint32_t const up = w[k] << plan.left;
        std::int64_t const value =
            plan.is_signed ? std::int64_t{static_cast<std::int32_t>(up) >> plan.right} : std::int64_t{up >> plan.right};
        bits[k] = col.to.kind == number_kind::opaque ? std::uint64_t{value != 0} : static_cast<std::uint64_t>(value);
      }
      store_four(col.dst.base + first * col.to.bytes, col.to.bytes, bits);
      continue;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      encode_status const status = unpack_field(w[k], col, col.dst.base + (first + k) * col.to.bytes);
      if (status != encode_status::ok && !col.to.saturates) report(first_failure, batch.column_index[f], first + k);
    }
  }
}

// The last n % 4 elements of a word_shape_kernel batch, element by element (inlined: out of line,
// the call spilled the loop's registers around it).
__device__ void word_shape_tail(quad_batch const& batch, int fields, std::size_t first,
                                unsigned long long* first_failure) {
  if (batch.op[0] == quad_op::unpack_word) {
    unpack_quad(batch, 0, first, batch.n, false, first_failure);
  } else {
    pack_quad(batch, 0, first, batch.n, false, batch.op[0] == quad_op::pack_fresh_word, first_failure);
  }
  for (int c = fields; c < batch.count; ++c)
    move_quad(batch.columns[c], batch.op[c], batch.column_index[c], first, batch.n, false, first_failure);
}

// Copy column c of a word_shape_kernel batch (after its run): four elements' load, and their store.
__device__ uint4 load_copy(quad_batch const& batch, int c, std::size_t first) {
  if (batch.op[c] == quad_op::copy4) return *reinterpret_cast<uint4 const*>(batch.columns[c].src.base + first * 4);
  uint2 const two = *reinterpret_cast<uint2 const*>(batch.columns[c].src.base + first * 2);
  return make_uint4(two.x, two.y, 0, 0);
}
__device__ void store_copy(quad_batch const& batch, int c, std::size_t first, uint4 v) {
  if (batch.op[c] == quad_op::copy4) {
    *reinterpret_cast<uint4*>(batch.columns[c].dst.base + first * 4) = v;
  } else {
    *reinterpret_cast<uint2*>(batch.columns[c].dst.base + first * 2) = make_uint2(v.x, v.y);
  }
}

// Pack (op[0] pack_word or pack_fresh_word) or unpack (unpack_word) of the batch's shape; the
// thread past the last whole quad takes the last n % 4 elements.
template <int Fields> __global__ void __launch_bounds__(256, 4)
    word_shape_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  bool const unpack = batch.op[0] == quad_op::unpack_word;
  bool const fresh = batch.op[0] == quad_op::pack_fresh_word;
  constexpr int held = 4;  // copies whose loads are in flight while the word is composed
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    std::size_t const first = 4 * q;
    if (q == quads) {
      word_shape_tail(batch, Fields, first, first_failure);
      continue;
    }
    uint4 copied[held];
#pragma unroll
    for (int c = 0; c < held; ++c) {
      if (Fields + c < batch.count) copied[c] = load_copy(batch, Fields + c, first);
    }
    if (unpack) {
      unpack_shape_quad<Fields>(batch, first, first_failure);
    } else {
      pack_shape_quad<Fields>(batch, first, fresh, first_failure);
    }
#pragma unroll
    for (int c = 0; c < held; ++c) {
      if (Fields + c < batch.count) store_copy(batch, Fields + c, first, copied[c]);
    }
#pragma unroll
    for (int c = held; c < max_shape_copies; ++c) {
      if (Fields + c < batch.count) store_copy(batch, Fields + c, first, load_copy(batch, Fields + c, first));
    }
  }
}

// True when the word batch has word_shape_kernel's shape: one run heading it, copy4 / copy2
// columns after it, at most max_shape_copies of them.
bool has_word_shape(quad_batch const& batch) {
  int const fields = batch.run_length[0];
  if (batch.count == 0 || fields < 1 || fields > 8 || batch.count - fields > max_shape_copies) return false;
  if (batch.op[0] != quad_op::pack_word && batch.op[0] != quad_op::pack_fresh_word &&
      batch.op[0] != quad_op::unpack_word)
    return false;
  for (int c = 1; c < fields; ++c) {
    if (batch.op[c] != quad_op::word_member) return false;
  }
  for (int c = fields; c < batch.count; ++c) {
    if (batch.op[c] != quad_op::copy4 && batch.op[c] != quad_op::copy2) return false;
  }
  return true;
}

template <int... Fields> void launch_word_shape(std::integer_sequence<int, Fields...>, quad_batch const& batch,
                                                unsigned blocks, unsigned threads, cudaStream_t stream,
                                                unsigned long long* failure) {
  int const fields = batch.run_length[0];
  ((fields == Fields + 1 ? (word_shape_kernel<Fields + 1><<<blocks, threads, 0, stream>>>(batch, failure), 0) : 0),
   ...);
}

// True when a word run (pack: into dst words; unpack: out of src words) can go four elements at
// a time: the word column and every field's other column contiguous and aligned for vector loads,
// the fields' own columns integers (or bool bytes) of 1, 2 or 4 bytes (8 for unpacked ones).
bool quad_word_run(column_conversion const* columns, std::size_t const* run, std::size_t length, bool pack) {
  auto const aligned = [](column_ref const& c, std::size_t bytes) {
    return c.block_shift == 63 && c.stride == bytes && reinterpret_cast<std::uintptr_t>(c.base) % (4 * bytes) == 0;
  };
  auto const plain_integer = [](stored_format f) {
    return f.kind == number_kind::signed_int || f.kind == number_kind::unsigned_int ||
           (f.kind == number_kind::opaque && f.bytes == 1);
  };
  for (std::size_t k = 0; k < length; ++k) {
    column_conversion const& col = columns[run[k]];
    column_ref const& word = pack ? col.dst : col.src;
    column_ref const& other = pack ? col.src : col.dst;
    stored_format const f = pack ? col.from : col.to;
    if (!aligned(word, 4) || !plain_integer(f) || (pack && f.bytes > 4) || !aligned(other, f.bytes)) return false;
  }
  return true;
}

quad_op quad_op_for(column_conversion const& c) {
  bool const contiguous =
      c.src.block_shift == 63 && c.dst.block_shift == 63 && c.src.stride == c.from.bytes && c.dst.stride == c.to.bytes;
  bool const aligned =
      reinterpret_cast<std::uintptr_t>(c.src.base) % 16 == 0 && reinterpret_cast<std::uintptr_t>(c.dst.base) % 16 == 0;
  if (!contiguous || !aligned) return quad_op::none;
  if (is_packed(c.to) || is_packed(c.from)) return quad_op::none;  // fields of shared words: bit by bit
  if (c.to == c.from && c.width == 4 && c.from.bytes == 4) return quad_op::copy4;
  if (c.to == c.from && c.width == 2 && c.from.bytes == 2) return quad_op::copy2;
  if (is_float(c.from) && is_sixteen_bit_float(c.to)) return quad_op::narrow;
  if (is_sixteen_bit_float(c.from) && is_float(c.to)) return quad_op::widen;
  return quad_op::none;
}

// The first-failure word of the calling host thread on one device, and the pinned host word it is
// read back into: kept between conversions (a cudaMallocAsync, memset, pageable read-back and free
// per call were ~80 us of a 463 us conversion of 33.5M elements). Set to ~0 on the stream at the
// start of every call, so that no failure of an earlier call (one that threw before reading it)
// can leak into this one. One per host thread: a conversion waits for its stream before it
// returns, so calls of one thread never overlap.
struct failure_word {
  int device = -1;
  unsigned long long* on_device = nullptr;
  unsigned long long* on_host = nullptr;
  failure_word() = default;
  failure_word(failure_word const&) = delete;
  failure_word& operator=(failure_word const&) = delete;
  ~failure_word() { release(); }
  void release() {
    // At process exit the CUDA runtime may be gone already: errors here change nothing.
    if (on_device != nullptr) (void)cudaFree(on_device);
    if (on_host != nullptr) (void)cudaFreeHost(on_host);
    on_device = on_host = nullptr;
    device = -1;
  }
  unsigned long long* prepare(int current_device, cudaStream_t stream) {
    if (device != current_device || on_device == nullptr || on_host == nullptr) {
      release();
      COALESCE_CUDA_TRY(cudaMalloc(&on_device, sizeof *on_device));
      COALESCE_CUDA_TRY(cudaMallocHost(&on_host, sizeof *on_host));
      device = current_device;
    }
    COALESCE_CUDA_TRY(cudaMemsetAsync(on_device, 0xff, sizeof *on_device, stream));
    return on_device;
  }
};
}  // namespace

conversion_result convert_columns(memory_kind kind, column_conversion const* columns, std::size_t count, std::size_t n,
                                  void* native_stream) {
  if (kind == memory_kind::host) return host_convert_columns(columns, count, n, false);
  if (n == 0 || count == 0) return {n, count};
  if (n >= (std::size_t{1} << 48)) throw_error("convert_columns: more than 2^48 elements");
  cudaStream_t const stream = static_cast<cudaStream_t>(native_stream);
  int device = 0, sms = 0;
  COALESCE_CUDA_TRY(cudaGetDevice(&device));
  thread_local failure_word word;
  unsigned long long* const failure = word.prepare(device, stream);
  int const block_threads = 256;
  COALESCE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto const blocks = static_cast<unsigned>(
      std::min<std::size_t>((n + block_threads - 1) / block_threads, static_cast<std::size_t>(sms) * 16));
  // Contiguous columns of 2- and 4-byte words (converted or kept): a batch of them per launch, four
  // elements per thread. The rest: batches of columns, an element of each per thread.
  auto const quad_blocks =
      static_cast<unsigned>(std::min<std::size_t>((n / 4 + block_threads) / block_threads, 0x7fffffff));
  conversion_batch batch{};
  quad_batch quads{};
  auto flush = [&] {
    if (batch.count == 0) return;
    batch.n = n;
    convert_columns_kernel<<<blocks, block_threads, 0, stream>>>(batch, failure);
    COALESCE_CUDA_TRY(cudaGetLastError());
    batch = conversion_batch{};
  };
  auto flush_quads = [&] {
    if (quads.count == 0) return;
    quads.n = n;
    quad_columns_kernel<<<quad_blocks, block_threads, 0, stream>>>(quads, failure);
    COALESCE_CUDA_TRY(cudaGetLastError());
    quads = quad_batch{};
  };
  quad_batch words{};
  auto flush_words = [&] {
    if (words.count == 0) return;
    words.n = n;
    if (has_word_shape(words)) {
      launch_word_shape(std::make_integer_sequence<int, 8>{}, words, quad_blocks, block_threads, stream, failure);
    } else {
      word_columns_kernel<<<quad_blocks, block_threads, 0, stream>>>(words, failure);
    }
    COALESCE_CUDA_TRY(cudaGetLastError());
    words = quad_batch{};
  };
  std::vector<std::size_t> general;
  for (std::size_t c = 0; c < count; ++c) {
    quad_op const op = quad_op_for(columns[c]);
    if (op != quad_op::none) {
      quads.column_index[quads.count] = c;
      quads.op[quads.count] = op;
      quads.columns[quads.count++] = columns[c];
      if (quads.count == conversions_per_launch) flush_quads();
      continue;
    }
    general.push_back(c);
  }
  // The fields of one word next to each other (word_run), the other columns in their order.
  auto const run_of = [&](std::size_t c) {
    column_conversion const& col = columns[c];
    bool const into = is_packed(col.to) && !is_packed(col.from), out_of = is_packed(col.from) && !is_packed(col.to);
    return into ? word_run::pack : out_of ? word_run::unpack : word_run::none;
  };
  auto const same_column = [](column_ref const& x, column_ref const& y) {
    return x.base == y.base && x.stride == y.stride && x.block_stride == y.block_stride &&
           x.block_shift == y.block_shift && x.block == y.block;
  };
  auto const word_of = [&](std::size_t c) -> column_ref const& {
    return run_of(c) == word_run::pack ? columns[c].dst : columns[c].src;
  };
  auto const same_word = [&](std::size_t a, std::size_t b) {
    return run_of(a) != word_run::none && run_of(a) == run_of(b) && same_column(word_of(a), word_of(b));
  };
  auto const writers_of = [&](column_ref const& word) {
    std::size_t writers = 0;
    for (std::size_t c = 0; c < count; ++c) writers += same_column(columns[c].dst, word) ? 1 : 0;
    return writers;
  };
  std::vector<std::size_t> ordered;
  std::vector<bool> placed(general.size(), false);
  for (std::size_t a = 0; a < general.size(); ++a) {
    if (placed[a]) continue;
    for (std::size_t b = a; b < general.size(); ++b) {
      if (!placed[b] && (b == a || same_word(general[a], general[b]))) {
        ordered.push_back(general[b]);
        placed[b] = true;
      }
    }
  }
  // Word runs whose columns are contiguous go to the word kernel, four elements per thread (a run
  // longer than a batch is cut into runs that each read and write the word).
  std::vector<std::size_t> rest;
  for (std::size_t k = 0; k < ordered.size();) {
    std::size_t end = k + 1;
    while (end < ordered.size() && same_word(ordered[k], ordered[end])) ++end;
    word_run const kind = run_of(ordered[k]);
    if (kind == word_run::none || !quad_word_run(columns, ordered.data() + k, end - k, kind == word_run::pack)) {
      rest.insert(rest.end(), ordered.begin() + static_cast<std::ptrdiff_t>(k),
                  ordered.begin() + static_cast<std::ptrdiff_t>(end));
      k = end;
      continue;
    }
    // A pack run that is every column writing its words (the list holds every field of a word it
    // writes, buffer.hpp) composes them from zero; a run cut across batches reads them.
    bool const fresh =
        kind == word_run::pack && end - k <= conversions_per_launch && writers_of(columns[ordered[k]].dst) == end - k;
    for (; k < end;) {
      std::size_t const length = std::min<std::size_t>(end - k, conversions_per_launch);
      if (words.count + static_cast<int>(length) > conversions_per_launch) flush_words();
      int const at = words.count;
      for (std::size_t m = 0; m < length; ++m) {
        words.column_index[words.count] = ordered[k + m];
        words.op[words.count] = m != 0                     ? quad_op::word_member
                                : kind == word_run::unpack ? quad_op::unpack_word
                                : fresh                    ? quad_op::pack_fresh_word
                                                           : quad_op::pack_word;
        words.run_length[words.count] = 1;
        column_conversion const& col = columns[ordered[k + m]];
        words.fields[words.count] = kind == word_run::pack ? plan_of(col.to, col.from) : plan_of(col.from, col.to);
        words.columns[words.count++] = col;
      }
      words.run_length[at] = static_cast<unsigned char>(length);
      if (words.count == conversions_per_launch) flush_words();
      k += length;
    }
  }
  ordered = rest;
  int head = -1;
  for (std::size_t k = 0; k < ordered.size(); ++k) {
    std::size_t const c = ordered[k];
    int const at = batch.count;
    bool const joins = head >= 0 && same_word(batch.column_index[head], c);
    batch.run[at] = joins ? word_run::member : run_of(c);
    batch.run_length[at] = 1;
    if (joins) {
      ++batch.run_length[head];
    } else {
      head = batch.run[at] == word_run::none ? -1 : at;
    }
    batch.column_index[at] = c;
    batch.columns[batch.count++] = columns[c];
    if (batch.count == conversions_per_launch) {
      flush();
      head = -1;  // a run cut by the batch's end goes on as a new run in the next
    }
  }
  // The quad columns left join the last word runs' launch where there is room: the word kernel's
  // per-element work then overlaps their copies instead of taking a pass of its own (soa <-> four
  // fields in bits, pos in quad columns: 0.76 / 0.79 of the copy ceiling in two launches).
  if (words.count > 0 && quads.count > 0 && words.count + quads.count <= conversions_per_launch) {
    for (int c = 0; c < quads.count; ++c) {
      words.column_index[words.count] = quads.column_index[c];
      words.op[words.count] = quads.op[c];
      words.run_length[words.count] = 1;
      words.columns[words.count++] = quads.columns[c];
    }
    quads = quad_batch{};
  }
  flush_quads();
  flush_words();
  flush();
  COALESCE_CUDA_TRY(cudaMemcpyAsync(word.on_host, failure, sizeof *failure, cudaMemcpyDeviceToHost, stream));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(stream));
  unsigned long long const found = *word.on_host;
  if (found == ~0ull) return {n, count};
  return {static_cast<std::size_t>(found & ((1ull << 48) - 1)), static_cast<std::size_t>(found >> 48)};
}

conversion_result copy_and_convert_columns(memory_kind kind, column_copy const* copies, std::size_t copy_count,
                                           column_run_copy const* runs, std::size_t run_count,
                                           column_conversion const* conversions, std::size_t conversion_count,
                                           std::size_t n, void* stream) {
  if (kind == memory_kind::host || conversion_count == 0) {
    return copy_then_convert(kind, copies, copy_count, runs, run_count, conversions, conversion_count, n, stream);
  }
  // The kept columns that the quad kernel moves go in the conversions' launch (a second kernel for
  // them cost the ramp of a whole pass: soa -> soa with vel as half 0.72 of the copy ceiling),
  // appended after the conversions, which alone can report a failure.
  std::vector<column_conversion> all(conversions, conversions + conversion_count);
  std::vector<column_copy> rest;
  for (std::size_t c = 0; c < copy_count; ++c) {
    auto const width = static_cast<std::uint8_t>(copies[c].width);
    stored_format const kept{number_kind::opaque, width, 0, false};
    column_conversion const as_conversion{copies[c].dst, copies[c].src, kept, kept, copies[c].width};
    if (quad_op_for(as_conversion) != quad_op::none) {
      all.push_back(as_conversion);
    } else {
      rest.push_back(copies[c]);
    }
  }
  conversion_result const r =
      copy_then_convert(kind, rest.data(), rest.size(), runs, run_count, all.data(), all.size(), n, stream);
  if (r.element < n && r.column >= conversion_count) {
    throw_error("internal error: a column copied with a conversion reported element " + std::to_string(r.element) +
                " as not fitting; please report it");
  }
  return r.element < n ? r : conversion_result{n, conversion_count};
}

}  // namespace coalesce::detail
