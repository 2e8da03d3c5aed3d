// Columns that change number format on the way, in GPU memory: one launch per batch of columns,
// each thread converting elements of every column of the batch; the first element a format could
// not hold is kept as (element << 16 | column) with atomicMin and read back once.
#include <algorithm>
#include <cstdint>

#include <coalesce/memory/buffer.hpp>

#include "convert_columns.hpp"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {
namespace {
constexpr int conversions_per_launch = 16;
struct conversion_batch {
  column_conversion columns[conversions_per_launch];
  int count;
  std::size_t n;
  std::size_t first_column;
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

__global__ void convert_columns_kernel(__grid_constant__ conversion_batch const batch,
                                       unsigned long long* first_failure) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < batch.n; i += threads) {
    for (int c = 0; c < batch.count; ++c) {
      column_conversion const& col = batch.columns[c];
      if (col.to == col.from) {  // a column of a converted blob that keeps its format
        copy_element(col.dst.address(i), col.src.address(i), col.width);
        continue;
      }
      auto const status = convert_element(col.dst.address(i), col.to, col.src.address(i), col.from);
      if (status != encode_status::ok && !col.to.saturates) {
        atomicMin(first_failure, (static_cast<unsigned long long>(batch.first_column + c) << 48) | i);
      }
    }
  }
}
}  // namespace

conversion_result convert_columns(memory_kind kind, column_conversion const* columns, std::size_t count, std::size_t n,
                                  void* native_stream) {
  if (kind == memory_kind::host) return host_convert_columns(columns, count, n, false);
  if (n == 0 || count == 0) return {n, count};
  if (n >= (std::size_t{1} << 48)) throw_error("convert_columns: more than 2^48 elements");
  cudaStream_t const stream = static_cast<cudaStream_t>(native_stream);
  unsigned long long* failure = nullptr;
  COALESCE_CUDA_TRY(cudaMallocAsync(&failure, sizeof *failure, stream));
  COALESCE_CUDA_TRY(cudaMemsetAsync(failure, 0xff, sizeof *failure, stream));
  int const block_threads = 256;
  int device = 0, sms = 0;
  COALESCE_CUDA_TRY(cudaGetDevice(&device));
  COALESCE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto const blocks = static_cast<unsigned>(
      std::min<std::size_t>((n + block_threads - 1) / block_threads, static_cast<std::size_t>(sms) * 16));
  for (std::size_t begin = 0; begin < count; begin += conversions_per_launch) {
    conversion_batch batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(conversions_per_launch, count - begin));
    std::copy_n(columns + begin, batch.count, batch.columns);
    batch.n = n;
    batch.first_column = begin;
    convert_columns_kernel<<<blocks, block_threads, 0, stream>>>(batch, failure);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
  unsigned long long found = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&found, failure, sizeof found, cudaMemcpyDeviceToHost, stream));
  COALESCE_CUDA_TRY(cudaFreeAsync(failure, stream));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(stream));
  if (found == ~0ull) return {n, count};
  return {static_cast<std::size_t>(found & ((1ull << 48) - 1)), static_cast<std::size_t>(found >> 48)};
}

}  // namespace coalesce::detail
