// Host memory, and device memory when libcoalesce is built without CUDA (then "device" is host
// memory whose loops run on all cores through OpenMP, as Thrust's OpenMP device system).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <string>

#include <coalesce/core/error.hpp>
#include <coalesce/memory/graph.hpp>

#include "column_chunks.hpp"

namespace coalesce::detail {

void* host_allocate(std::size_t bytes) {
  void* p = ::operator new (bytes, std::align_val_t{column_alignment}, std::nothrow);
  if (p == nullptr) {
    throw_error("could not allocate " + std::to_string(bytes) +
                " bytes of host memory (out of memory); "
                "reduce the size or free memory first");
  }
  return p;
}

void host_deallocate(void* p) noexcept { ::operator delete (p, std::align_val_t{column_alignment}); }

namespace {
// Elements [begin, end) of one column. Contiguous runs are one memcpy; unblocked strided
// columns (aos) a loop with plain strides, which the compiler can vectorize; blocked columns
// (aosoa) go block by block, each block a contiguous run.
template <std::size_t W> void copy_range(column_copy const& c, std::size_t begin, std::size_t end) {
  if (c.src.contiguous(W) && c.dst.contiguous(W)) {
    std::memcpy(c.dst.address(begin), c.src.address(begin), (end - begin) * W);
    return;
  }
  if (c.src.block_shift == 63 && c.dst.block_shift == 63) {
    std::byte* __restrict__ dst = c.dst.address(begin);
    std::byte const* __restrict__ src = c.src.address(begin);
    std::size_t const ds = c.dst.stride, ss = c.src.stride;
    for (std::size_t k = 0; k < end - begin; ++k) std::memcpy(dst + k * ds, src + k * ss, W);
    return;
  }
  for (std::size_t i = begin; i < end;) {
    // the run of elements up to the next block boundary of either side is contiguous on that side
    std::size_t const src_block = c.src.block_shift == 63 ? end : c.src.block_elements();
    std::size_t const dst_block = c.dst.block_shift == 63 ? end : c.dst.block_elements();
    std::size_t const run_end = std::min({end, (i / src_block + 1) * src_block, (i / dst_block + 1) * dst_block});
    std::byte* __restrict__ dst = c.dst.address(i);
    std::byte const* __restrict__ src = c.src.address(i);
    for (std::size_t k = 0; k < run_end - i; ++k) std::memcpy(dst + k * c.dst.stride, src + k * c.src.stride, W);
    i = run_end;
  }
}
template <std::size_t W> void fill_range(column_fill const& c, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) std::memcpy(c.dst.address(i), c.value, W);
}

// Elements in blocks, all columns of a block before the next block: one pass over the
// records for aos sources and destinations, cache-friendly for all layouts.
constexpr std::size_t block_elements = 4096;

template <class Column, class Range> void for_blocks(Column const* columns, std::size_t count, std::size_t first,
                                                     std::size_t n, bool parallel, Range range) {
  std::ptrdiff_t const blocks = static_cast<std::ptrdiff_t>((n + block_elements - 1) / block_elements);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (parallel && blocks > 1)
#else
  (void)parallel;
#endif
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    std::size_t const begin = first + static_cast<std::size_t>(b) * block_elements;
    std::size_t const end = std::min(first + n, begin + block_elements);
    for (std::size_t c = 0; c < count; ++c) range(columns[c], begin, end);
  }
}
}  // namespace

void host_copy_columns(column_copy const* columns, std::size_t count, std::size_t n, bool parallel) {
  auto const parts = chunked(columns, count);
  for_blocks(parts.data(), parts.size(), 0, n, parallel, [](column_copy const& c, std::size_t b, std::size_t e) {
    with_chunk_width(c.width, [&](auto w) { copy_range<decltype(w)::value>(c, b, e); });
  });
}

void host_fill_columns(column_fill const* columns, std::size_t count, std::size_t first, std::size_t n, bool parallel) {
  auto const parts = chunked(columns, count);
  for_blocks(parts.data(), parts.size(), first, n, parallel, [](column_fill const& c, std::size_t b, std::size_t e) {
    with_chunk_width(c.width, [&](auto w) { fill_range<decltype(w)::value>(c, b, e); });
  });
}

#if !COALESCE_WITH_CUDA
// Without CUDA both kinds are host memory; device-kind work runs on all cores.
void* allocate(memory_kind, std::size_t bytes) { return host_allocate(bytes); }
void deallocate(memory_kind, void* p) noexcept { host_deallocate(p); }
void* allocate_on_stream(memory_kind, std::size_t bytes, void*, stream_allocation& how) {
  how = {};
  return host_allocate(bytes);
}
void deallocate_on_stream(void* p, void*) noexcept { host_deallocate(p); }
void* allocate_scratch(memory_kind kind, std::size_t bytes, void* stream, stream_allocation& how) {
  return allocate_on_stream(kind, bytes, stream, how);
}
void deallocate_scratch(void* p, void*) noexcept { host_deallocate(p); }
bool stream_is_capturing(void*) { return false; }
void copy_bytes(memory_kind, void* dst, memory_kind, void const* src, std::size_t bytes, void*) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}
void zero_bytes(memory_kind, void* p, std::size_t bytes, void*) {
  if (bytes > 0) std::memset(p, 0, bytes);
}
void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n, void*, record_gaps) {
  host_copy_columns(columns, count, n, kind == memory_kind::device);
}
void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, column_run_copy const* runs,
                  std::size_t run_count, std::size_t n, void*, record_gaps) {
  auto const all = expand_runs(columns, count, runs, run_count);
  host_copy_columns(all.data(), all.size(), n, kind == memory_kind::device);
}
void fill_columns(memory_kind kind, column_fill const* columns, std::size_t count, std::size_t first, std::size_t n,
                  void*) {
  host_fill_columns(columns, count, first, n, kind == memory_kind::device);
}
// Host copies have no per-thread record path; the setting is kept for the benchmarks' sake.
std::size_t set_per_thread_record_bytes(std::size_t bytes) {
  static std::atomic<std::size_t> setting{32};
  return setting.exchange(bytes);
}
std::size_t set_record_tile_bytes(std::size_t bytes) {
  static std::atomic<std::size_t> setting{32 * 1024};
  return setting.exchange(bytes);
}
void synchronize(memory_kind) {}
void synchronize_stream(void*) {}
void check_space(memory_kind, void const*, char const*) {}

// CUDA graphs (coalesce/memory/graph.hpp) need a CUDA build.
namespace {
[[noreturn]] void no_graphs(char const* call) {
  throw_error(std::string(call) + ": CUDA graphs need libcoalesce built with CUDA (this one runs on the host)");
}
}  // namespace
std::uint64_t make_graph_condition(void*) { no_graphs("coalesce::make_graph_condition"); }
if_body begin_if_body(void*, std::uint64_t) { no_graphs("coalesce::capture_if"); }
void end_if_body(void*, if_body const&) { no_graphs("coalesce::capture_if"); }
#endif

}  // namespace coalesce::detail
