// The general conversion kernel (included by convert_columns_cuda.cu only): a batch of columns of
// any layout and format, an element of each per thread; bit-packed fields of one word as a run
// that reads and writes the word once. The first element a format could not hold is kept as
// (column << failure_element_bits | element) with atomicMin.
#pragma once
#include <cstdint>

#include <coalesce/memory/buffer.hpp>

namespace coalesce::detail {
namespace {
constexpr int conversions_per_launch = 16;
// The first failure's key: 40 bits of element (more than a GPU holds of 1-byte elements) and 24 of
// column (a converted std::array member has a column per element: 16 bits could be too few).
constexpr int failure_element_bits = 40;
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
  atomicMin(first_failure, (static_cast<unsigned long long>(column) << failure_element_bits) | i);
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
        report(first_failure, batch.column_index[c], i);
      }
    }
  }
}
}  // namespace
}  // namespace coalesce::detail
