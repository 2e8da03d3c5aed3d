// Internal to libcoalesce: moving one element of many columns, the inner step of the copy
// (column_copy_cuda.cu, record_tile_cuda.cu) and permutation (reorder_cuda.cu) kernels.
#pragma once
#include <cstddef>

#include <coalesce/memory/buffer.hpp>

namespace coalesce::detail {

// Loads of up to this many columns are issued before their stores, so a thread keeps that many
// requests in flight (columns may alias as far as the compiler knows, so it would not reorder).
inline constexpr int columns_in_flight = 8;

// Where element i of a column is. Unblocked: every column of the launch is aos or soa (no
// aosoa blocks), so the address is base + i * stride, without the block arithmetic.
template <bool Unblocked> __device__ __forceinline__ std::byte* element_address(column_ref const& c, std::size_t i) {
  if constexpr (Unblocked) {
    return c.base + i * c.stride;
  } else {
    return c.address(i);
  }
}

// Element `from` of each source column to element `to` of its destination column, for columns
// whose elements are one Word each.
template <class Word, bool Unblocked = false>
__device__ __forceinline__ void move_element(column_copy const* columns, int count, std::size_t from, std::size_t to) {
  for (int c0 = 0; c0 < count; c0 += columns_in_flight) {
    Word v[columns_in_flight];
#pragma unroll
    for (int k = 0; k < columns_in_flight; ++k) {
      if (c0 + k < count) v[k] = *reinterpret_cast<Word const*>(element_address<Unblocked>(columns[c0 + k].src, from));
    }
#pragma unroll
    for (int k = 0; k < columns_in_flight; ++k) {
      if (c0 + k < count) *reinterpret_cast<Word*>(element_address<Unblocked>(columns[c0 + k].dst, to)) = v[k];
    }
  }
}

}  // namespace coalesce::detail
