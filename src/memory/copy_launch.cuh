// Internal to libcoalesce: what the GPU column-copy files share (column_copy_cuda.cu dispatches a
// copy to the record tile, record_tile_cuda.cu; to records one per thread, record_per_thread_cuda.cu;
// to the runs of std::array members, column_runs_cuda.cu; or to its own element-wise kernels).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <coalesce/memory/buffer.hpp>

namespace coalesce::detail {

// Columns travel as a __grid_constant__ kernel parameter, so a launch needs no extra transfer.
inline constexpr int columns_per_launch = 64;
inline constexpr int block_threads = 256;

// One thread per work item, every block launched at once (the hardware schedules them as
// others finish): measured faster on the H200 than a grid sized to the resident blocks that
// loops over the items.
inline unsigned grid_for(std::size_t work_items) {
  std::size_t const wanted = (work_items + block_threads - 1) / block_threads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, 0x7fffffff)));
}

// True when 4 consecutive elements (from a multiple of 4) of a 4-byte column are one aligned
// 16-byte word: contiguous columns, or blocks of at least 4 elements.
inline bool runs_of_four(column_ref const& c) {
  bool const contiguous =
      c.stride == 4 && (c.block_shift == 63 || (c.block_shift >= 2 && c.block_shift < 63 && c.block_stride % 16 == 0));
  return contiguous && reinterpret_cast<std::uintptr_t>(c.base) % 16 == 0;
}

// Zero-fills and fills without a stream of the caller's finish before they return
// (allocation_cuda.cu says why).
void wait_if_default_stream(void* stream);

// ---- aos records (record_tile_cuda.cu, record_per_thread_cuda.cu)
struct record_window {
  std::byte* base = nullptr;  // the lowest column address of record 0
  std::size_t stride = 0;     // record size
  std::size_t span = 0;       // bytes of a record that columns cover, from base
};

// The record window of one side of the columns, if that side is an aos layout that fits a tile.
bool aos_window(std::vector<column_copy> const& parts, bool source, record_window& out);
// Out of aos records through the shared-memory tile.
void launch_tiled_from_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                               std::size_t n, record_gaps gaps);
// The columns whose destination lies in one record blob (an aos-like group of a split layout):
// the 4-byte parts with the first such part's stride, inside one record of it; taken out of parts.
std::vector<column_copy> take_destination_records(std::vector<column_copy>& parts);
// From aos records into a split layout in one pass through the tile; false (nothing launched)
// where this path does not take the destination.
bool launch_tiled_into_split(cudaStream_t stream, std::vector<column_copy> parts, record_window const& source,
                             std::size_t n, record_gaps gaps);
// Out of aos records one record per thread; false (nothing launched) where this path does not take them.
bool launch_records_per_thread_from_records(cudaStream_t stream, std::vector<column_copy> const& parts,
                                            record_window const& records, std::size_t n, record_gaps gaps);
// Columns into aos records: one record per thread where that path takes them, else the tile.
void launch_into_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                         std::size_t n, record_gaps gaps);

// ---- runs of evenly spaced sub-columns (column_runs_cuda.cu)
// A long run of 4-byte columns that is one 2-D block on both sides: sub-column j of element i at
// src.address(i) + j * src_j and dst.address(i) + j * dst_j (a std::array member: its sub-columns
// are evenly spaced in every layout). Copied column by column, a 16 KiB record's 4096 sub-columns
// were 65 launches of 64 narrow columns each (a few thousand threads per launch), and on an aos
// side each warp-wide load touched 32 records (32 sectors for 128 bytes): 0.02-0.04 of the copy
// ceiling. A run moves in one launch: through a 32 x 32 shared-memory tile where one side is
// unit-stride along j (aos records) and the other along i (soa, aosoa), so both sides are read
// and written along their unit stride; as a 2-D grid of elements where both sides are unit-stride
// along i (soa <-> aosoa, soa <-> soa of another capacity).
struct column_run {
  column_ref src, dst;
  std::ptrdiff_t src_j, dst_j;
  std::size_t n, m;  // elements, sub-columns
};
// True when one of the run kernels moves the run whole.
bool run_kernel_takes(column_run const& r);
// Takes the runs of at least 32 sub-columns that one of the two kernels moves out of `parts`.
std::vector<column_run> take_column_runs(std::vector<column_copy>& parts, std::size_t n);
void launch_runs(cudaStream_t stream, std::vector<column_run> const& runs);

}  // namespace coalesce::detail
