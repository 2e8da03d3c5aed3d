// GPU copies of runs of evenly spaced 4-byte sub-columns (std::array members) in one launch each:
// through a 32 x 32 shared-memory tile (aos on one side), or as a 2-D grid of elements.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "column_chunks.hpp"
#include "copy_launch.cuh"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {

namespace {
constexpr unsigned transpose_tile = 32, transpose_rows = 8;
constexpr std::size_t max_grid_y = 65535;

__device__ __forceinline__ std::uint32_t* run_word(column_ref const& c, std::ptrdiff_t step, std::size_t i,
                                                   std::size_t j) {
  return reinterpret_cast<std::uint32_t*>(c.address(i) + static_cast<std::ptrdiff_t>(j) * step);
}

// Tile (i0.., j0..): loaded along whichever index the source is unit-stride in, stored along the
// destination's. j0 comes from the launch (grids of more than 65535 tiles along j are split).
__global__ void transpose_run_kernel(column_run const r, std::size_t j_first) {
  __shared__ std::uint32_t tile[transpose_tile][transpose_tile + 1];  // +1: no bank conflicts
  std::size_t const i0 = static_cast<std::size_t>(blockIdx.x) * transpose_tile;
  std::size_t const j0 = j_first + static_cast<std::size_t>(blockIdx.y) * transpose_tile;
  unsigned const tx = threadIdx.x, ty = threadIdx.y;
  bool const src_along_j = r.src_j == 4;  // else the source is unit-stride along i
  for (unsigned row = ty; row < transpose_tile; row += transpose_rows) {
    std::size_t const i = i0 + (src_along_j ? row : tx), j = j0 + (src_along_j ? tx : row);
    if (i < r.n && j < r.m) tile[i - i0][j - j0] = *run_word(r.src, r.src_j, i, j);
  }
  __syncthreads();
  bool const dst_along_j = r.dst_j == 4;
  for (unsigned row = ty; row < transpose_tile; row += transpose_rows) {
    std::size_t const i = i0 + (dst_along_j ? row : tx), j = j0 + (dst_along_j ? tx : row);
    if (i < r.n && j < r.m) *run_word(r.dst, r.dst_j, i, j) = tile[i - i0][j - j0];
  }
}

// Elements [first, first + items * Group) of sub-columns [j_first, j_first + gridDim.y), Group
// consecutive elements per Word: consecutive threads take consecutive elements of one sub-column.
template <class Word, std::size_t Group>
__global__ void copy_run_kernel(column_run const r, std::size_t first, std::size_t items, std::size_t j_first) {
  std::size_t const item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= items) return;
  std::size_t const i = first + item * Group, j = j_first + blockIdx.y;
  *reinterpret_cast<Word*>(run_word(r.dst, r.dst_j, i, j)) =
      *reinterpret_cast<Word const*>(run_word(r.src, r.src_j, i, j));
}

bool same_shape(column_ref const& a, column_ref const& b) {
  return a.stride == b.stride && a.block_shift == b.block_shift && a.block_stride == b.block_stride &&
         a.block == b.block;
}
// Unit-stride along the elements: soa, or the short columns of aosoa blocks.
bool along_elements(column_ref const& c) { return c.stride == 4; }
// Unit-stride along the sub-columns: aos records (or any unblocked side whose sub-columns are
// consecutive words).
bool along_columns(column_ref const& c, std::ptrdiff_t step) { return step == 4 && c.block_shift == 63; }
bool transposes(column_run const& r) {
  return (along_columns(r.src, r.src_j) && along_elements(r.dst)) ||
         (along_columns(r.dst, r.dst_j) && along_elements(r.src));
}
bool streams(column_run const& r) { return along_elements(r.src) && along_elements(r.dst); }
// True when elements 4k..4k+3 of the column are one aligned 16-byte word (for every k): soa
// columns and aosoa blocks of at least 4 elements, 16-byte aligned; runs_of_four for one
// sub-column, and the same for every other one (the steps keep the alignment).
bool run_in_quads(column_ref const& c, std::ptrdiff_t step) { return runs_of_four(c) && step % 16 == 0; }

}  // namespace

// True when one of the run kernels moves the run whole: 32 sub-columns or more, one side or both
// unit-stride along the elements, every address a whole 4-byte word (an element type of 4 bytes
// aligned to less, in a record of alignment 1, is left to the columns, which chunk it as it allows).
bool run_kernel_takes(column_run const& r) {
  auto const steps = static_cast<std::size_t>(r.src_j < 0 ? -r.src_j : r.src_j) |
                     static_cast<std::size_t>(r.dst_j < 0 ? -r.dst_j : r.dst_j);
  bool const aligned = ((address_bits(r.src) | address_bits(r.dst) | steps) & 3) == 0;
  return aligned && r.m >= transpose_tile && (transposes(r) || streams(r));
}

// Takes the runs of at least 32 sub-columns that one of the two kernels moves out of `parts`.
std::vector<column_run> take_column_runs(std::vector<column_copy>& parts, std::size_t n) {
  std::vector<column_run> runs;
  std::vector<column_copy> rest;
  std::size_t c = 0;
  while (c < parts.size()) {
    std::size_t e = c + 1;
    if (parts[c].width == 4 && e < parts.size() && parts[e].width == 4) {
      std::ptrdiff_t const src_j = parts[e].src.base - parts[c].src.base, dst_j = parts[e].dst.base - parts[c].dst.base;
      while (e < parts.size() && parts[e].width == 4 && same_shape(parts[e].src, parts[c].src) &&
             same_shape(parts[e].dst, parts[c].dst) && parts[e].src.base - parts[e - 1].src.base == src_j &&
             parts[e].dst.base - parts[e - 1].dst.base == dst_j) {
        ++e;
      }
      column_run const run{parts[c].src, parts[c].dst, src_j, dst_j, n, e - c};
      if (run_kernel_takes(run)) {
        runs.push_back(run);
        c = e;
        continue;
      }
      if (e - c >= transpose_tile) {  // a long run neither kernel suits (aos -> aos): as columns
        rest.insert(rest.end(), parts.begin() + static_cast<std::ptrdiff_t>(c),
                    parts.begin() + static_cast<std::ptrdiff_t>(e));
        c = e;
        continue;
      }
      // A short run may be a lone column followed by a block (id, then counts[0..]): retry from c + 1.
    }
    rest.push_back(parts[c]);
    c = c + 1;
  }
  parts = std::move(rest);
  return runs;
}

void launch_runs(cudaStream_t stream, std::vector<column_run> const& runs) {
  for (auto const& r : runs) {
    if (transposes(r)) {
      auto const tiles_j = (r.m + transpose_tile - 1) / transpose_tile;
      for (std::size_t t = 0; t < tiles_j; t += max_grid_y) {
        dim3 const grid(
            static_cast<unsigned>(std::min<std::size_t>((r.n + transpose_tile - 1) / transpose_tile, 0x7fffffff)),
            static_cast<unsigned>(std::min(max_grid_y, tiles_j - t)));
        transpose_run_kernel<<<grid, dim3(transpose_tile, transpose_rows), 0, stream>>>(r, t * transpose_tile);
        COALESCE_CUDA_TRY(cudaGetLastError());
      }
      continue;
    }
    bool const quads = run_in_quads(r.src, r.src_j) && run_in_quads(r.dst, r.dst_j);
    std::size_t const vector_items = quads ? r.n / 4 : 0, vector_end = vector_items * 4;
    for (std::size_t j = 0; j < r.m; j += max_grid_y) {
      auto const columns = static_cast<unsigned>(std::min(max_grid_y, r.m - j));
      if (vector_items > 0) {
        copy_run_kernel<uint4, 4>
            <<<dim3(grid_for(vector_items), columns), block_threads, 0, stream>>>(r, 0, vector_items, j);
        COALESCE_CUDA_TRY(cudaGetLastError());
      }
      if (r.n > vector_end) {
        copy_run_kernel<std::uint32_t, 1><<<dim3(grid_for(r.n - vector_end), columns), block_threads, 0, stream>>>(
            r, vector_end, r.n - vector_end, j);
        COALESCE_CUDA_TRY(cudaGetLastError());
      }
    }
  }
}

}  // namespace coalesce::detail
