// Device memory is GPU memory: allocation, transfers and the fused column-copy kernels.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "column_chunks.hpp"
#include "cuda_check.hpp"

namespace coalesce::detail {

void* allocate(memory_kind kind, std::size_t bytes) {
  if (kind == memory_kind::host) return host_allocate(bytes);
  void* p = nullptr;
  cudaError_t const status = cudaMalloc(&p, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error so later calls do not see it
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw_error("could not allocate " + std::to_string(bytes) + " bytes of GPU memory: " + cudaGetErrorString(status) +
                " (" + std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
                " bytes free); reduce the size or free device memory first");
  }
  return p;
}

void deallocate(memory_kind kind, void* p) noexcept {
  if (kind == memory_kind::host) {
    host_deallocate(p);
  } else {
    cudaFree(p);  // errors here are reported by the next checked call; a destructor must not throw
  }
}

void copy_bytes(memory_kind dst_kind, void* dst, memory_kind src_kind, void const* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_kind == memory_kind::host && src_kind == memory_kind::host) {
    std::memcpy(dst, src, bytes);
    return;
  }
  cudaMemcpyKind const direction = dst_kind == memory_kind::host   ? cudaMemcpyDeviceToHost
                                   : src_kind == memory_kind::host ? cudaMemcpyHostToDevice
                                                                   : cudaMemcpyDeviceToDevice;
  COALESCE_CUDA_TRY(cudaMemcpy(dst, src, bytes, direction));
}

void zero_bytes(memory_kind kind, void* p, std::size_t bytes) {
  if (bytes == 0) return;
  if (kind == memory_kind::host) {
    std::memset(p, 0, bytes);
  } else {
    COALESCE_CUDA_TRY(cudaMemset(p, 0, bytes));
  }
}

void synchronize(memory_kind kind) {
  if (kind == memory_kind::device) COALESCE_CUDA_TRY(cudaDeviceSynchronize());
}

namespace {

// Columns travel as a __grid_constant__ kernel parameter, so a launch needs no extra transfer.
constexpr int columns_per_launch = 64;
constexpr int elements_per_thread = 4;  // independent loads in flight per thread and column
constexpr int block_threads = 256;

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

// Thread t of the grid handles elements t, t + T, t + 2T, t + 3T of a tile of 4T elements, so a
// warp's accesses to each column are consecutive; all loads of a column are issued before its
// stores.
template <std::size_t W>
__device__ void copy_tile(column_copy const& c, std::size_t i0, std::size_t step, std::size_t n) {
  using word = typename word_of<W>::type;
  word v[elements_per_thread];
#pragma unroll
  for (int k = 0; k < elements_per_thread; ++k) {
    std::size_t const i = i0 + k * step;
    if (i < n) v[k] = *reinterpret_cast<word const*>(c.src.address(i));
  }
#pragma unroll
  for (int k = 0; k < elements_per_thread; ++k) {
    std::size_t const i = i0 + k * step;
    if (i < n) *reinterpret_cast<word*>(c.dst.address(i)) = v[k];
  }
}

__global__ void copy_columns_kernel(__grid_constant__ column_batch<column_copy> const batch) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t const tile = threads * elements_per_thread;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; base < batch.n; base += tile) {
    for (int c = 0; c < batch.count; ++c) {
      column_copy const& col = batch.columns[c];
      switch (col.width) {
        case 1: copy_tile<1>(col, base, threads, batch.n); break;
        case 2: copy_tile<2>(col, base, threads, batch.n); break;
        case 4: copy_tile<4>(col, base, threads, batch.n); break;
        case 8: copy_tile<8>(col, base, threads, batch.n); break;
        default: copy_tile<16>(col, base, threads, batch.n); break;
      }
    }
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
      switch (col.column.width) {
        case 1: fill_one<1>(col.column, batch.first + i, col.value); break;
        case 2: fill_one<2>(col.column, batch.first + i, col.value); break;
        case 4: fill_one<4>(col.column, batch.first + i, col.value); break;
        case 8: fill_one<8>(col.column, batch.first + i, col.value); break;
        default: fill_one<16>(col.column, batch.first + i, col.value); break;
      }
    }
  }
}

unsigned grid_for(std::size_t work_items) {
  static int const max_blocks = [] {
    int device = 0, sms = 0, per_sm = 0;
    COALESCE_CUDA_TRY(cudaGetDevice(&device));
    COALESCE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    COALESCE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_columns_kernel, block_threads, 0));
    return sms * std::max(per_sm, 1);
  }();
  std::size_t const wanted = (work_items + block_threads - 1) / block_threads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, max_blocks)));
}

}  // namespace

void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n) {
  if (kind == memory_kind::host) return host_copy_columns(columns, count, n, false);
  if (n == 0 || count == 0) return;
  auto const parts = chunked(columns, count);
  unsigned const grid = grid_for((n + elements_per_thread - 1) / elements_per_thread);
  for (std::size_t begin = 0; begin < parts.size(); begin += columns_per_launch) {
    column_batch<column_copy> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - begin));
    std::copy_n(parts.data() + begin, batch.count, batch.columns);
    batch.first = 0;
    batch.n = n;
    copy_columns_kernel<<<grid, block_threads>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

void fill_columns(memory_kind kind, column_fill const* columns, std::size_t count, std::size_t first, std::size_t n) {
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
    fill_columns_kernel<<<grid, block_threads>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace coalesce::detail
