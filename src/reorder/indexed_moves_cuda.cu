// detail/indexed_moves.hpp in GPU memory: one fused kernel per batch of columns for the moves and
// sums (the elements' index is read once, every column's element moved), CUB's DeviceSelect for
// the elements near a face, all on the caller's stream.
#include <algorithm>
#include <vector>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "../memory/column_chunks.hpp"
#include "../memory/column_moves.cuh"
#include "../core/cuda_check.hpp"
#include "indexed_moves_cuda.hpp"
#include "reorder_cuda_launch.cuh"

namespace coalesce::detail::cuda_moves {

namespace {

constexpr int columns_per_launch = 32;

template <class Column> struct indexed_batch {
  Column columns[columns_per_launch];
  int count;
  std::size_t n;
  index_map src, dst;
};

// Unblocked: no column of the launch is in aosoa blocks (plain base + i * stride addresses).
template <class Word, bool Unblocked>
__global__ void move_indexed_kernel(__grid_constant__ indexed_batch<column_copy> const batch) {
  std::size_t const k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= batch.n) return;
  std::size_t const from = batch.src.index != nullptr ? __ldg(batch.src.index + k) : batch.src.first + k;
  std::size_t const to = batch.dst.index != nullptr ? __ldg(batch.dst.index + k) : batch.dst.first + k;
  move_element<Word, Unblocked>(batch.columns, batch.count, from, to);
}

template <class Word> void launch_moves(cudaStream_t stream, std::vector<column_copy> const& parts, std::size_t n,
                                        index_map src, index_map dst) {
  unsigned const grid = static_cast<unsigned>((n + launch_threads - 1) / launch_threads);
  for (std::size_t begin = 0; begin < parts.size(); begin += columns_per_launch) {
    indexed_batch<column_copy> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - begin));
    std::copy_n(parts.data() + begin, batch.count, batch.columns);
    batch.n = n;
    batch.src = src;
    batch.dst = dst;
    bool unblocked = true;
    for (int c = 0; c < batch.count; ++c) {
      unblocked = unblocked && batch.columns[c].src.block_shift == 63 && batch.columns[c].dst.block_shift == 63;
    }
    if (unblocked) {
      move_indexed_kernel<Word, true><<<grid, launch_threads, 0, stream>>>(batch);
    } else {
      move_indexed_kernel<Word, false><<<grid, launch_threads, 0, stream>>>(batch);
    }
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

template <class E> __device__ __forceinline__ void add_one(std::byte* dst, std::byte const* src) {
  *reinterpret_cast<E*>(dst) += *reinterpret_cast<E const*>(src);
}

__global__ void add_indexed_kernel(__grid_constant__ indexed_batch<column_sum> const batch) {
  std::size_t const k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= batch.n) return;
  std::size_t const from = batch.src.at(k), to = batch.dst.at(k);
  for (int c = 0; c < batch.count; ++c) {
    column_sum const& col = batch.columns[c];
    std::byte* d = col.dst.address(to);
    std::byte const* s = col.src.address(from);
    switch (col.type) {
      case scalar_type::f32:
        add_one<float>(d, s);
        break;
      case scalar_type::f64:
        add_one<double>(d, s);
        break;
      case scalar_type::i32:
        add_one<std::int32_t>(d, s);
        break;
      case scalar_type::i64:
        add_one<long long>(d, s);
        break;
      case scalar_type::u32:
        add_one<std::uint32_t>(d, s);
        break;
      case scalar_type::u64:
        add_one<unsigned long long>(d, s);
        break;
    }
  }
}

}  // namespace

void move_columns_indexed(column_copy const* columns, std::size_t count, std::size_t n, index_map src, index_map dst,
                          void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  // 4-byte words at most, grouped by width: one launch moves every float, int or double column.
  auto const parts = chunked(columns, count, 4);
  std::vector<column_copy> by_width[3];
  for (auto const& part : parts) by_width[part.width == 4 ? 0 : part.width == 2 ? 1 : 2].push_back(part);
  launch_moves<std::uint32_t>(s, by_width[0], n, src, dst);
  launch_moves<std::uint16_t>(s, by_width[1], n, src, dst);
  launch_moves<std::uint8_t>(s, by_width[2], n, src, dst);
}

void add_columns_indexed(column_sum const* columns, std::size_t count, std::size_t n, index_map src, index_map dst,
                         void* stream) {
  unsigned const grid = static_cast<unsigned>((n + launch_threads - 1) / launch_threads);
  for (std::size_t begin = 0; begin < count; begin += columns_per_launch) {
    indexed_batch<column_sum> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, count - begin));
    std::copy_n(columns + begin, batch.count, batch.columns);
    batch.n = n;
    batch.src = src;
    batch.dst = dst;
    add_indexed_kernel<<<grid, launch_threads, 0, static_cast<cudaStream_t>(stream)>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

void shift_column(position_columns const& position, unsigned axis, std::size_t first, std::size_t n, double shift,
                  void* stream) {
  each_on_device(static_cast<cudaStream_t>(stream), n, [=] __device__(std::size_t k) {
    std::size_t const i = first + k;
    shift_coordinate(position, axis, i, shift);
  });
}

std::size_t select_near_face(position_columns const& position, unsigned axis, std::size_t first, std::size_t n,
                             bool below, double threshold, std::uint32_t* out, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  auto const near = [=] __device__(std::uint32_t i) {
    double const x = coordinate_of(position, axis, i);
    return below ? x < threshold : x >= threshold;
  };
  thrust::counting_iterator<std::uint32_t> const indices(static_cast<std::uint32_t>(first));
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceSelect::If(nullptr, temp_bytes, indices, out, static_cast<std::uint32_t*>(nullptr),
                                          static_cast<std::int64_t>(n - first), near, s));
  // The count and the temporary storage in one allocation (a halo is built every K steps); the
  // storage starts 256 bytes in, aligned as CUB wants.
  constexpr std::size_t count_room = 256;
  buffer temp(memory_kind::device, count_room + temp_bytes, stream);  // stream-ordered: its free waits for nothing else
  auto* count = reinterpret_cast<std::uint32_t*>(temp.data());
  COALESCE_CUDA_TRY(cub::DeviceSelect::If(temp.data() + count_room, temp_bytes, indices, out, count,
                                          static_cast<std::int64_t>(n - first), near, s));
  std::uint32_t selected = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&selected, count, sizeof selected, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return selected;
}

void owners_of(position_columns const& position, std::size_t n, owner_grid const& grid, int* out, void* stream) {
  each_on_device(static_cast<cudaStream_t>(stream), n, [=] __device__(std::size_t i) {
    double p[3] = {0, 0, 0};
    for (unsigned a = 0; a < position.dims; ++a) p[a] = wrap_in_place(grid, position, a, i);
    out[i] = owner_rank(grid, p);
  });
}

void destination_keys(int const* dest, std::size_t n, int self, int ranks, std::uint32_t* keys, void* stream) {
  each_on_device(static_cast<cudaStream_t>(stream), n, [=] __device__(std::size_t i) {
    int const r = dest[i];
    keys[i] = r == self             ? 0u
              : r >= 0 && r < ranks ? static_cast<std::uint32_t>(r) + 1u
                                    : static_cast<std::uint32_t>(ranks) + 1u;
  });
}

void* allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  if (cudaMallocHost(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    throw_error("could not allocate " + std::to_string(bytes) +
                " bytes of page-locked host memory for MPI staging; "
                "free memory or pass GPU pointers to a CUDA-aware MPI");
  }
  return p;
}

void deallocate_pinned(void* p) noexcept { (void)cudaFreeHost(p); }

}  // namespace coalesce::detail::cuda_moves
