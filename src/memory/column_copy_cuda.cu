// GPU column copies and fills: the dispatch of a copy to the path that moves its shape at copy
// speed (runs, aos records one per thread or through the tile, element-wise kernels), and the
// element-wise kernels themselves.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "column_chunks.hpp"
#include "column_moves.cuh"
#include "copy_launch.cuh"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {

namespace {

template <class Column> struct column_batch {
  Column columns[columns_per_launch];
  int count;
  std::size_t first;
  std::size_t n;
};

template <std::size_t W> struct word_of;
template <> struct word_of<1> { using type = std::uint8_t; };
template <> struct word_of<2> { using type = std::uint16_t; };
template <> struct word_of<4> { using type = std::uint32_t; };
template <> struct word_of<8> { using type = std::uint64_t; };
template <> struct word_of<16> { using type = uint4; };

// One thread per element (grid-stride), all columns of the element (move_element), so the
// lanes of a warp together touch whole records of an aos side (the same pattern as a
// hand-written record-per-thread conversion). Columns arrive grouped by word width, so the
// width is a compile-time constant.

// Group > 1: each item is Group consecutive elements moved as one Word (columns contiguous in
// runs of at least Group elements on both sides, e.g. soa and aosoa<W>), item i starting at
// element first + i * Group.
template <class Word, std::size_t Group = 1, bool Unblocked = false>
__global__ void copy_columns_kernel(__grid_constant__ column_batch<column_copy> const batch) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < batch.n;
       item += threads) {
    std::size_t const i = batch.first + item * Group;
    move_element<Word, Unblocked>(batch.columns, batch.count, i, i);
  }
}

template <std::size_t W> __device__ void fill_one(column_fill const& c, std::size_t i, uint4 const& value) {
  using word = typename word_of<W>::type;
  word w;
  memcpy(&w, &value, W);
  *reinterpret_cast<word*>(c.dst.address(i)) = w;
}

struct fill_column_on_device {
  column_fill column;  // column.value unused on the device
  uint4 value;
};

__global__ void fill_columns_kernel(__grid_constant__ column_batch<fill_column_on_device> const batch) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < batch.n; i += threads) {
    for (int c = 0; c < batch.count; ++c) {
      auto const& col = batch.columns[c];
      with_chunk_width(col.column.width,
                       [&](auto w) { fill_one<decltype(w)::value>(col.column, batch.first + i, col.value); });
    }
  }
}
// Elements [first, first + items * Group) of every column, Group elements per Word.
template <class Word, std::size_t Group = 1, bool Unblocked = false>
void launch_copies(cudaStream_t stream, std::vector<column_copy> const& parts, std::size_t first, std::size_t items) {
  if (items == 0) return;
  unsigned const grid = grid_for(items);
  for (std::size_t begin = 0; begin < parts.size(); begin += columns_per_launch) {
    column_batch<column_copy> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - begin));
    std::copy_n(parts.data() + begin, batch.count, batch.columns);
    batch.first = first;
    batch.n = items;
    copy_columns_kernel<Word, Group, Unblocked><<<grid, block_threads, 0, stream>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

void copy_parts(cudaStream_t stream, std::vector<column_copy> const& parts, std::size_t n, record_gaps gaps) {
  // An aos side of records of up to 32 bytes: one record per thread, moved whole through registers.
  // Larger records into aos go through a shared-memory tile (column-wise 4-byte stores at the
  // record stride measured at a quarter of the copy ceiling), and so do records of 64 bytes and more
  // out of aos (each of a warp's loads spans 2 KiB and more; 64-byte aos -> soa 0.83 -> 0.87 of the
  // copy ceiling with the tile, H200, 2026-12-02) or into aosoa; 36-60-byte records out of aos into
  // unblocked columns go element by element.
  bool const unblocked = std::all_of(parts.begin(), parts.end(), [](column_copy const& c) {
    return c.src.block_shift == 63 && c.dst.block_shift == 63;
  });
  record_window records;
  if (aos_window(parts, false, records)) return launch_into_records(stream, parts, records, n, gaps);
  if (aos_window(parts, true, records)) {
    if (launch_records_per_thread_from_records(stream, parts, records, n, gaps)) return;
    if (!unblocked || records.stride >= 64) return launch_tiled_from_records(stream, parts, records, n, gaps);
  }
  std::vector<column_copy> by_width[3];
  for (auto const& part : parts) by_width[part.width == 4 ? 0 : part.width == 2 ? 1 : 2].push_back(part);
  auto const& words = by_width[0];
  if (std::all_of(words.begin(), words.end(),
                  [](column_copy const& c) { return runs_of_four(c.src) && runs_of_four(c.dst); })) {
    launch_copies<uint4, 4>(stream, words, 0, n / 4);  // 16-byte accesses, 4 elements each
    launch_copies<std::uint32_t>(stream, words, n / 4 * 4, n % 4);
  } else if (unblocked) {
    launch_copies<std::uint32_t, 1, true>(stream, words, 0, n);
  } else {
    launch_copies<std::uint32_t>(stream, words, 0, n);
  }
  launch_copies<std::uint16_t>(stream, by_width[1], 0, n);
  launch_copies<std::uint8_t>(stream, by_width[2], 0, n);
}

}  // namespace

void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n, void* native_stream,
                  record_gaps gaps) {
  if (kind == memory_kind::host) return host_copy_columns(columns, count, n, false);
  if (n == 0 || count == 0) return;
  cudaStream_t const stream = static_cast<cudaStream_t>(native_stream);
  // 4-byte words at most: every float, int or double column becomes 4-byte sub-columns, so one
  // launch handles all of them; only 1- and 2-byte leaves need launches of their own.
  auto parts = chunked(columns, count, 4);
  launch_runs(stream, take_column_runs(parts, n));
  if (parts.empty()) return;
  record_window records;
  if (!aos_window(parts, false, records)) {
    record_window source;
    if (aos_window(parts, true, source) && launch_tiled_into_split(stream, parts, source, n, gaps)) return;
    // A split destination: each record blob (packed positions) through its own tile, so its
    // stores stay whole records; the columns as before.
    for (auto group = take_destination_records(parts); !group.empty(); group = take_destination_records(parts)) {
      if (aos_window(group, false, records)) {
        launch_into_records(stream, group, records, n, gaps);
      } else {
        copy_parts(stream, group, n, gaps);
      }
    }
  }
  if (!parts.empty()) copy_parts(stream, parts, n, gaps);
}

void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, column_run_copy const* runs,
                  std::size_t run_count, std::size_t n, void* native_stream, record_gaps gaps) {
  if (n == 0) return;
  if (kind == memory_kind::host) {
    auto const all = expand_runs(columns, count, runs, run_count);
    return copy_columns(kind, all.data(), all.size(), n, native_stream, gaps);
  }
  // Runs one of the run kernels moves whole: launched as they are. Others (aos -> aos: neither
  // side unit-stride along the elements) join the columns. The runs go first, as in copy_columns:
  // a record tile of the columns never spans a run (a run is at least 32 words, a tiled record at
  // most 128 bytes, so a record with a run holds nothing else).
  std::vector<column_run> whole;
  std::vector<column_run_copy> rest;
  for (std::size_t r = 0; r < run_count; ++r) {
    column_run const run{runs[r].src, runs[r].dst, runs[r].src_step, runs[r].dst_step, n, runs[r].columns};
    if (run_kernel_takes(run)) {
      whole.push_back(run);
    } else {
      rest.push_back(runs[r]);
    }
  }
  launch_runs(static_cast<cudaStream_t>(native_stream), whole);
  if (rest.empty()) return copy_columns(kind, columns, count, n, native_stream, gaps);
  auto const all = expand_runs(columns, count, rest.data(), rest.size());
  copy_columns(kind, all.data(), all.size(), n, native_stream, gaps);
}

void fill_columns(memory_kind kind, column_fill const* columns, std::size_t count, std::size_t first, std::size_t n,
                  void* stream) {
  if (kind == memory_kind::host) return host_fill_columns(columns, count, first, n, false);
  if (n == 0 || count == 0) return;
  auto const parts = chunked(columns, count);
  unsigned const grid = grid_for(n);
  for (std::size_t begin = 0; begin < parts.size(); begin += columns_per_launch) {
    column_batch<fill_column_on_device> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - begin));
    for (int c = 0; c < batch.count; ++c) {
      batch.columns[c].column = parts[begin + c];
      std::memcpy(&batch.columns[c].value, parts[begin + c].value, parts[begin + c].width);
    }
    batch.first = first;
    batch.n = n;
    fill_columns_kernel<<<grid, block_threads, 0, static_cast<cudaStream_t>(stream)>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
  wait_if_default_stream(stream);
}

}  // namespace coalesce::detail
