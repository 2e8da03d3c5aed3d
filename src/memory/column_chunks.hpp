// Internal to libcoalesce: columns of any element width become columns of 1, 2, 4, 8 or
// 16-byte chunks, the widest that every address of the column is aligned to, so that the copy
// kernels only ever move naturally aligned machine words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <coalesce/memory/buffer.hpp>

namespace coalesce::detail {

inline std::size_t widest_chunk(std::size_t width, std::initializer_list<std::size_t> alignments,
                                std::size_t widest = 16) {
  std::size_t chunk = widest;
  while (chunk > 1) {
    bool ok = width % chunk == 0;
    for (std::size_t a : alignments) ok = ok && a % chunk == 0;
    if (ok) break;
    chunk /= 2;
  }
  return chunk;
}

// Calls f(std::integral_constant<std::size_t, W>{}) with W the chunk width chunked() produced
// (1, 2, 4, 8 or 16): the one place that turns a run-time width into a compile-time one.
template <class F> COALESCE_HOST_DEVICE COALESCE_INLINE void with_chunk_width(std::size_t width, F&& f) {
  switch (width) {
    case 1:
      f(std::integral_constant<std::size_t, 1>{});
      break;
    case 2:
      f(std::integral_constant<std::size_t, 2>{});
      break;
    case 4:
      f(std::integral_constant<std::size_t, 4>{});
      break;
    case 8:
      f(std::integral_constant<std::size_t, 8>{});
      break;
    default:
      f(std::integral_constant<std::size_t, 16>{});
      break;
  }
}

inline std::size_t address_bits(column_ref const& c) {
  return reinterpret_cast<std::uintptr_t>(c.base) | c.stride | (c.block_shift == 63 ? 0 : c.block_stride);
}

inline std::vector<column_copy> chunked(column_copy const* columns, std::size_t count, std::size_t widest = 16) {
  std::vector<column_copy> out;
  out.reserve(count);
  for (std::size_t c = 0; c < count; ++c) {
    column_copy const& col = columns[c];
    std::size_t const chunk = widest_chunk(col.width, {address_bits(col.dst) | address_bits(col.src)}, widest);
    for (std::size_t k = 0; k < col.width; k += chunk) {
      column_copy part = col;
      part.dst.base += k;
      part.src.base += k;
      part.width = chunk;
      out.push_back(part);
    }
  }
  return out;
}

inline std::vector<column_fill> chunked(column_fill const* columns, std::size_t count) {
  std::vector<column_fill> out;
  out.reserve(count);
  for (std::size_t c = 0; c < count; ++c) {
    column_fill const& col = columns[c];
    std::size_t const chunk = widest_chunk(col.width, {address_bits(col.dst)});
    for (std::size_t k = 0; k < col.width; k += chunk) {
      column_fill part = col;
      part.dst.base += k;
      part.value = static_cast<std::byte const*>(col.value) + k;
      part.width = chunk;
      out.push_back(part);
    }
  }
  return out;
}

// The runs' columns one by one, then the columns: what a copy that cannot take runs whole moves.
inline std::vector<column_copy> expand_runs(column_copy const* columns, std::size_t count, column_run_copy const* runs,
                                            std::size_t run_count) {
  std::vector<column_copy> out;
  std::size_t total = count;
  for (std::size_t r = 0; r < run_count; ++r) total += runs[r].columns;
  out.reserve(total);
  for (std::size_t r = 0; r < run_count; ++r) {
    column_run_copy const& run = runs[r];
    for (std::size_t j = 0; j < run.columns; ++j) {
      column_copy c{run.dst, run.src, 4};
      c.dst.base += static_cast<std::ptrdiff_t>(j) * run.dst_step;
      c.src.base += static_cast<std::ptrdiff_t>(j) * run.src_step;
      out.push_back(c);
    }
  }
  out.insert(out.end(), columns, columns + count);
  return out;
}

// Host implementations (memory_host.cpp); the CUDA build routes host memory to these.
void* host_allocate(std::size_t bytes);
void host_deallocate(void* p) noexcept;
void host_copy_columns(column_copy const* columns, std::size_t count, std::size_t n, bool parallel);
void host_fill_columns(column_fill const* columns, std::size_t count, std::size_t first, std::size_t n, bool parallel);

}  // namespace coalesce::detail
