// GPU column copies to or from small aos records, one record per thread held in registers.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "copy_launch.cuh"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {

// Through the tile (record_tile_cuda.cu): records this path does not take.
void launch_tiled_into_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                               std::size_t n, record_gaps gaps);

namespace {
// Small aos records to or from columns: one record per thread, held in registers, moved between
// global memory and registers in 16-, 8- or 4-byte units (whole records, so every sector a warp
// touches is whole), the column side coalesced, no shared memory and no barrier. Into records this
// replaced the tile for records of up to 32 bytes; measured on the H200 (2026-12-03, 33.5M
// 24-byte records, x copy ceiling, per thread / tile): soa -> aos 0.97 / 0.88, aosoa<32> -> aos
// 0.98 / 0.77, soa -> split<pos> 0.87 / 0.76 (docs/dev/performance-history.md, "Records one per thread").
// set_per_thread_record_bytes picks the largest record that takes this path.
constexpr int max_record_words = 8;
std::atomic<std::size_t> per_thread_record_bytes{32};

struct record_batch {
  column_ref other[max_record_words];            // the column side, by the record word it fills
  signed char column_of_word[max_record_words];  // -1: no column (into records: a gap, kept or zeroed)
  std::byte* base;                               // word 0 of record 0 (the window's base)
  std::size_t n;
  unsigned last_words;  // words of the last record inside the window (the span)
  bool preload;         // into records: gaps keep the destination's bytes
};

template <int Words, int Unit> __device__ void store_record(std::byte* dst, std::uint32_t const (&w)[Words]) {
  if constexpr (Unit == 16) {
#pragma unroll
    for (int k = 0; k < Words; k += 4)
      reinterpret_cast<uint4*>(dst)[k / 4] = make_uint4(w[k], w[k + 1], w[k + 2], w[k + 3]);
  } else if constexpr (Unit == 8) {
#pragma unroll
    for (int k = 0; k < Words; k += 2) reinterpret_cast<uint2*>(dst)[k / 2] = make_uint2(w[k], w[k + 1]);
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) reinterpret_cast<std::uint32_t*>(dst)[k] = w[k];
  }
}

template <int Words, int Unit> __device__ void load_record(std::byte const* src, std::uint32_t (&w)[Words]) {
  if constexpr (Unit == 16) {
#pragma unroll
    for (int k = 0; k < Words; k += 4) {
      uint4 const v = reinterpret_cast<uint4 const*>(src)[k / 4];
      w[k] = v.x, w[k + 1] = v.y, w[k + 2] = v.z, w[k + 3] = v.w;
    }
  } else if constexpr (Unit == 8) {
#pragma unroll
    for (int k = 0; k < Words; k += 2) {
      uint2 const v = reinterpret_cast<uint2 const*>(src)[k / 2];
      w[k] = v.x, w[k + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) w[k] = reinterpret_cast<std::uint32_t const*>(src)[k];
  }
}

// FromAos: records -> columns. Otherwise: columns -> records. The last record is moved word by
// word inside the window only: its bytes past the window may belong to another allocation.
template <int Words, int Unit, bool FromAos>
__global__ void record_per_thread_kernel(__grid_constant__ record_batch const batch) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch.n) return;
  std::byte* const record = batch.base + i * (Words * 4);
  auto* const record_words = reinterpret_cast<std::uint32_t*>(record);
  bool const last = i + 1 == batch.n;
  int const inside = last ? static_cast<int>(batch.last_words) : Words;
  std::uint32_t w[Words];
  if constexpr (FromAos) {
    if (!last) {
      load_record<Words, Unit>(record, w);
    } else {
#pragma unroll
      for (int k = 0; k < Words; ++k) w[k] = k < inside ? record_words[k] : 0u;
    }
#pragma unroll
    for (int k = 0; k < Words; ++k) {
      int const c = batch.column_of_word[k];
      if (c >= 0) *reinterpret_cast<std::uint32_t*>(batch.other[c].address(i)) = w[k];
    }
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) {
      int const c = batch.column_of_word[k];
      if (c >= 0) {
        w[k] = *reinterpret_cast<std::uint32_t const*>(batch.other[c].address(i));
      } else {
        w[k] = batch.preload && k < inside ? record_words[k] : 0u;
      }
    }
    if (!last) return store_record<Words, Unit>(record, w);
#pragma unroll
    for (int k = 0; k < Words; ++k) {
      if (k < inside) record_words[k] = w[k];
    }
  }
}

template <int Words, bool FromAos>
void launch_record_per_thread(cudaStream_t stream, record_batch const& batch, int unit) {
  unsigned const grid = grid_for(batch.n);
  if constexpr (Words % 4 == 0) {
    if (unit == 16) return record_per_thread_kernel<Words, 16, FromAos><<<grid, block_threads, 0, stream>>>(batch);
  }
  if constexpr (Words % 2 == 0) {
    if (unit == 8) return record_per_thread_kernel<Words, 8, FromAos><<<grid, block_threads, 0, stream>>>(batch);
  }
  record_per_thread_kernel<Words, 4, FromAos><<<grid, block_threads, 0, stream>>>(batch);
}

// True when the records go one per thread (and were launched): records of 8 to 32 bytes (up to
// per_thread_record_bytes), one column per word at most. 64-byte records were measured slower this
// way than through the tile (aos -> soa 0.41 against 0.86 of the copy ceiling, soa -> aos 0.73
// against 0.89; H200, 2026-12-03), so the path stops at 32.
template <bool FromAos> bool launch_records_per_thread(cudaStream_t stream, std::vector<column_copy> const& parts,
                                                       record_window const& records, std::size_t n, record_gaps gaps) {
  std::size_t const words = records.stride / 4;
  if (words < 2 || words > max_record_words || records.stride > per_thread_record_bytes.load() || parts.size() > words)
    return false;
  record_batch batch{};
  std::fill(std::begin(batch.column_of_word), std::end(batch.column_of_word), static_cast<signed char>(-1));
  for (std::size_t c = 0; c < parts.size(); ++c) {
    column_ref const& record_side = FromAos ? parts[c].src : parts[c].dst;
    std::size_t const word = static_cast<std::size_t>(record_side.base - records.base) / 4;
    if (word >= words || batch.column_of_word[word] >= 0) return false;
    batch.column_of_word[word] = static_cast<signed char>(c);
    batch.other[c] = FromAos ? parts[c].dst : parts[c].src;
  }
  batch.base = records.base;
  batch.n = n;
  batch.last_words = static_cast<unsigned>(records.span / 4);
  batch.preload = gaps == record_gaps::keep;  // fully covered records have no gap word to read
  auto const address = reinterpret_cast<std::uintptr_t>(records.base);
  int const unit = records.stride % 16 == 0 && address % 16 == 0 ? 16
                   : records.stride % 8 == 0 && address % 8 == 0 ? 8
                                                                 : 4;
  // words is 2..max_record_words here: one instantiation per record size.
  [&]<int... W>(std::integer_sequence<int, W...>) {
    (void)((words == W + 2 && (launch_record_per_thread<W + 2, FromAos>(stream, batch, unit), true)) || ...);
  }
  (std::make_integer_sequence<int, max_record_words - 1>{});
  COALESCE_CUDA_TRY(cudaGetLastError());
  return true;
}

}  // namespace

bool launch_records_per_thread_from_records(cudaStream_t stream, std::vector<column_copy> const& parts,
                                            record_window const& records, std::size_t n, record_gaps gaps) {
  return launch_records_per_thread<true>(stream, parts, records, n, gaps);
}

// Columns into aos records: one record per thread where that path takes them, else the tile.
void launch_into_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                         std::size_t n, record_gaps gaps) {
  if (!launch_records_per_thread<false>(stream, parts, records, n, gaps))
    launch_tiled_into_records(stream, parts, records, n, gaps);
}

std::size_t set_per_thread_record_bytes(std::size_t bytes) { return per_thread_record_bytes.exchange(bytes); }

}  // namespace coalesce::detail
