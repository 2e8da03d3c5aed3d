// The word kernels (included by convert_columns_cuda.cu only): runs of bit-packed fields of one
// contiguous 32-bit word column, four elements per thread: the interpreting word_columns_kernel
// for any batch, and word_shape_kernel<fields> for one run and the kept columns beside it.
#pragma once
#include <utility>

#include "conversion_quads.cuh"

namespace coalesce::detail {
namespace {
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

// Field c of a word run into the four words w of elements [first, first + 4): its four values
// (raw, from load_four_raw) range-tested together and inserted with the plan's shift and mask; a
// value out of range saturated or reported, element by element.
__device__ void insert_four(quad_batch const& batch, int c, uint4 raw, std::size_t first, std::uint32_t (&w)[4],
                            unsigned long long* first_failure) {
  column_conversion const& col = batch.columns[c];
  field_plan const& plan = batch.fields[c];
  std::int64_t v[4];
  widen_four(col, raw, v);
  bool in_range = true;
#pragma unroll
  for (int k = 0; k < 4; ++k) in_range = in_range && static_cast<std::uint64_t>(v[k] - plan.lo) <= plan.span;
  if (in_range) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w[k] = (w[k] & ~plan.mask) | ((static_cast<std::uint32_t>(v[k]) << plan.shift) & plan.mask);
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // (unrolled: v and w stay in registers)
    encode_status status = encode_status::ok;
    std::uint64_t const field = packed_raw(v[k], col.to, status);
    if (status != encode_status::ok && !col.to.saturates) {
      report(first_failure, batch.column_index[c], first + k);
      continue;
    }
    w[k] = with_field(w[k], field, col.to);
  }
}

// Field c of a word run out of the words w of elements [first, last), last <= first + 4: four at
// once in one vector store where the destination holds every value of the field, else element by
// element with the range check.
__device__ void extract_four(quad_batch const& batch, int c, std::uint32_t const (&w)[4], std::size_t first,
                             std::size_t last, unsigned long long* first_failure) {
  column_conversion const& col = batch.columns[c];
  field_plan const& plan = batch.fields[c];
  if (last == first + 4 && plan.always_fits) {
    std::uint64_t bits[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      std::uint32_t const up = w[k] << plan.left;
      std::int64_t const value =
          plan.is_signed ? std::int64_t{static_cast<std::int32_t>(up) >> plan.right} : std::int64_t{up >> plan.right};
      bits[k] = col.to.kind == number_kind::opaque ? std::uint64_t{value != 0} : static_cast<std::uint64_t>(value);
    }
    store_four(col.dst.base + first * col.to.bytes, col.to.bytes, bits);
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // (unrolled: w stays in registers)
    std::size_t const i = first + k;
    if (i >= last) break;
    encode_status const status = unpack_field(w[k], col, col.dst.base + i * col.to.bytes);
    if (status != encode_status::ok && !col.to.saturates) report(first_failure, batch.column_index[c], i);
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
      if (c0 + j < end) insert_four(batch, c0 + j, raw[j], first, w, first_failure);
    }
  }
  *at = make_uint4(w[0], w[1], w[2], w[3]);
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
  for (int c = head; c < end; ++c) extract_four(batch, c, w, first, last, first_failure);
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

// The word batch specialised on the host: one word run of Fields fields (the batch's first
// columns) and up to max_shape_copies quad columns after it, kept, narrowed or widened (the
// batching puts one run in each launch; those quad columns join the last). Every column is read at an
// index known at compile time (its description a constant-bank operand, not a parameter-space load
// per column per quad as in word_columns_kernel, which spent ~600 instructions per warp per quad
// interpreting its batch), and every load of a quad is issued before the first is used.
constexpr int max_shape_copies = 8;
constexpr int max_shape_fields = conversions_per_launch;  // a run of a batch: up to every column

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
      if (f0 + j < Fields) insert_four(batch, f0 + j, raw[j], first, w, first_failure);
    }
  }
  *at = make_uint4(w[0], w[1], w[2], w[3]);
}

template <int Fields>
__device__ void unpack_shape_quad(quad_batch const& batch, std::size_t first, unsigned long long* first_failure) {
  uint4 const u = *reinterpret_cast<uint4 const*>(batch.columns[0].src.base + first * 4);
  std::uint32_t const w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int f = 0; f < Fields; ++f) extract_four(batch, f, w, first, first + 4, first_failure);
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

// The quad columns a word_shape_kernel batch takes after its run: kept 4- and 2-byte columns and
// float columns narrowed to or widened from half and bfloat16 (in a launch of their own beside the
// run, pos as half beside four fields in bits was at 0.77 of the copy ceiling: two smaller passes).
__host__ __device__ bool joins_word_shape(quad_op op) {
  return op == quad_op::copy4 || op == quad_op::copy2 || op == quad_op::narrow || op == quad_op::widen;
}

// Pack (op[0] pack_word or pack_fresh_word) or unpack (unpack_word) of the batch's shape; the
// thread past the last whole quad takes the last n % 4 elements.
template <int Fields> __global__ void __launch_bounds__(256, 4)
    word_shape_kernel(__grid_constant__ quad_batch const batch, unsigned long long* first_failure) {
  std::size_t const quads = batch.n / 4;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  bool const unpack = batch.op[0] == quad_op::unpack_word;
  bool const fresh = batch.op[0] == quad_op::pack_fresh_word;
  constexpr int held = 4;  // kept columns whose loads are in flight while the word is composed
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q <= quads; q += threads) {
    std::size_t const first = 4 * q;
    if (q == quads) {
      word_shape_tail(batch, Fields, first, first_failure);
      continue;
    }
    uint4 copied[held];
#pragma unroll
    for (int c = 0; c < held; ++c) {
      if (Fields + c < batch.count) copied[c] = load_quad(batch.columns[Fields + c], batch.op[Fields + c], first);
    }
    if (unpack) {
      unpack_shape_quad<Fields>(batch, first, first_failure);
    } else {
      pack_shape_quad<Fields>(batch, first, fresh, first_failure);
    }
    // The held columns stored; those past them moved now, each as the quad kernel moves it.
#pragma unroll
    for (int c = 0; c < max_shape_copies; ++c) {
      int const column = Fields + c;
      if (column >= batch.count) break;
      if (c < held) {
        store_quad<false>(batch.columns[column], batch.op[column], batch.column_index[column], first, copied[c],
                          first_failure);
      } else {
        move_quad(batch.columns[column], batch.op[column], batch.column_index[column], first, batch.n, true,
                  first_failure);
      }
    }
  }
}

// True when the word batch has word_shape_kernel's shape: one run heading it, quad columns
// after it, at most max_shape_copies of them.
bool has_word_shape(quad_batch const& batch) {
  int const fields = batch.run_length[0];
  if (batch.count == 0 || fields < 1 || fields > max_shape_fields || batch.count - fields > max_shape_copies)
    return false;
  if (batch.op[0] != quad_op::pack_word && batch.op[0] != quad_op::pack_fresh_word &&
      batch.op[0] != quad_op::unpack_word)
    return false;
  for (int c = 1; c < fields; ++c) {
    if (batch.op[c] != quad_op::word_member) return false;
  }
  for (int c = fields; c < batch.count; ++c) {
    if (!joins_word_shape(batch.op[c])) return false;
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
}  // namespace
}  // namespace coalesce::detail
