// Reorder primitives in GPU memory (cuda_backend): CUB's DeviceRadixSort over the keys' bit
// range with reused temporary storage, one fused gather kernel for all columns, and kernels for
// inverses and remapping that check the data they read; all on the backend's stream.
#include <algorithm>
#include <cstdint>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "../memory/column_chunks.hpp"
#include "../memory/column_moves.cuh"
#include "../core/cuda_check.hpp"
#include "reorder_cuda_launch.cuh"
#include "reorder_state.hpp"

namespace coalesce::detail {

namespace {

constexpr int columns_per_launch = 64;

struct gather_batch {
  column_copy columns[columns_per_launch];
  int count;  // columns of the group
  int first;  // this launch's columns for far sources: [first, first + step)
  int step;
  std::size_t n;
  std::uint32_t const* perm;
};

// A source within this many elements of its destination is near: its reads of every column
// stream through L2 with its neighbours' (a re-sort of particles sorted a few steps ago moves most
// of them a few places; a particle that changed cell column moves by a column's length or more).
constexpr std::size_t near_source = 1024;

// One thread per destination element, every block launched at once: the thread reads its source
// index, then moves the element of the launch's columns (move_element keeps several random reads in
// flight; a grid sized to resident blocks looping over 4 elements per thread was slower than
// column-by-column thrust::gather on the H200). A near source moves every column of the group in
// the group's first launch and nothing in the others; a far one moves the launch's columns.
template <class Word> __global__ void gather_columns_kernel(__grid_constant__ gather_batch const batch) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch.n) return;
  std::size_t const from = __ldg(batch.perm + i);
  bool const near = (from > i ? from - i : i - from) <= near_source;
  if (near) {
    if (batch.first == 0) move_element<Word>(batch.columns, batch.count, from, i);
    return;
  }
  int const count = min(batch.step, batch.count - batch.first);
  move_element<Word>(batch.columns + batch.first, count, from, i);
}

// Random reads are served from L2 when the columns being gathered fit in it: a launch takes
// only as many columns as fill half of L2 (at least one), so a permutation from random order
// reads each source sector from DRAM about once (all columns at once measured 1.9x slower than
// column-by-column thrust::gather on the H200, 4M particles x 8 columns). Near sources (above) are
// exempt: a re-sort of sorted particles took 7 launches of one column each, 0.37 of its 0.70 ms
// at 4M LJ particles (ncu, H100, 2026-12-06).
std::size_t columns_fitting_l2(std::size_t n, std::size_t word_bytes) {
  static std::size_t const l2_bytes = [] {
    int device = 0, bytes = 0;
    COALESCE_CUDA_TRY(cudaGetDevice(&device));
    COALESCE_CUDA_TRY(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
    return static_cast<std::size_t>(std::max(bytes, 1 << 20));
  }();
  std::size_t const column_bytes = std::max<std::size_t>(1, n * word_bytes);
  return std::clamp<std::size_t>(l2_bytes / 2 / column_bytes, 1, columns_per_launch);
}

template <class Word> void launch_gathers(cudaStream_t stream, std::vector<column_copy> const& parts, std::size_t n,
                                          std::uint32_t const* perm) {
  if (parts.empty()) return;
  unsigned const grid = static_cast<unsigned>((n + launch_threads - 1) / launch_threads);
  auto const per_launch = static_cast<int>(columns_fitting_l2(n, sizeof(Word)));
  for (std::size_t group = 0; group < parts.size(); group += columns_per_launch) {
    gather_batch batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - group));
    std::copy_n(parts.data() + group, batch.count, batch.columns);
    batch.step = per_launch;
    batch.n = n;
    batch.perm = perm;
    for (batch.first = 0; batch.first < batch.count; batch.first += per_launch) {
      gather_columns_kernel<Word><<<grid, launch_threads, 0, stream>>>(batch);
      COALESCE_CUDA_TRY(cudaGetLastError());
    }
  }
}

template <class Key> void sort_typed(cudaStream_t stream, reorder_state& s, std::size_t n, int begin_bit, int end_bit) {
  cub::DoubleBuffer<Key> keys(reinterpret_cast<Key*>(s.keys.data()), reinterpret_cast<Key*>(s.keys_alt.data()));
  cub::DoubleBuffer<std::uint32_t> values(reinterpret_cast<std::uint32_t*>(s.perm.data()),
                                          reinterpret_cast<std::uint32_t*>(s.perm_alt.data()));
  auto const count = static_cast<std::uint32_t>(n);
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(
      cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, values, count, begin_bit, end_bit, stream));
  void* temp = s.ensure(s.temp, memory_kind::device, temp_bytes);
  COALESCE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, values, count, begin_bit, end_bit, stream));
  // The results are wherever the passes ended; make `keys` and `perm` name them.
  if (keys.selector != 0) s.keys.swap(s.keys_alt);
  if (values.selector != 0) s.perm.swap(s.perm_alt);
}

constexpr int reduce_threads = 256;

// Sum of |i - j| over used entries, one atomic per block.
__global__ void locality_kernel(neighbor_desc const list, double* sum, unsigned long long* count) {
  using reduce_double = cub::BlockReduce<double, reduce_threads>;
  using reduce_count = cub::BlockReduce<unsigned long long, reduce_threads>;
  __shared__ typename reduce_double::TempStorage double_storage;
  __shared__ typename reduce_count::TempStorage count_storage;
  double mine = 0;
  unsigned long long used_total = 0;
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < list.particles;
       i += threads) {
    auto const distance = [i](std::uint32_t j) { return static_cast<double>(i > j ? i - j : j - i); };
    if (list.format == list_format::csr) {
      for (std::uint32_t e = list.offsets[i]; e < list.offsets[i + 1]; ++e) mine += distance(list.indices[e]);
      used_total += list.offsets[i + 1] - list.offsets[i];
    } else {
      std::size_t const used =
          list.counts ? min(static_cast<std::size_t>(list.counts[i]), list.max_neighbors) : list.max_neighbors;
      bool const row_major = list.format == list_format::row_major;
      for (std::size_t k = 0; k < used; ++k) {
        mine += distance(list.indices[row_major ? i * list.max_neighbors + k : k * list.particles + i]);
      }
      used_total += used;
    }
  }
  double const block_sum = reduce_double(double_storage).Sum(mine);
  unsigned long long const block_count = reduce_count(count_storage).Sum(used_total);
  if (threadIdx.x == 0) {
    atomicAdd(sum, block_sum);
    atomicAdd(count, block_count);
  }
}

}  // namespace

void cuda_backend::reset_flags(std::uint64_t* flags) {
  COALESCE_CUDA_TRY(
      cudaMemsetAsync(flags, 0xff, check_words * sizeof(std::uint64_t), static_cast<cudaStream_t>(stream_)));
}

void cuda_backend::sort_pairs(reorder_state& s, std::size_t n, int begin_bit, int end_bit) {
  if (n < 2) return;
  auto const stream = static_cast<cudaStream_t>(stream_);
  if (s.key_bytes == 4) {
    sort_typed<std::uint32_t>(stream, s, n, begin_bit, end_bit);
  } else {
    sort_typed<std::uint64_t>(stream, s, n, begin_bit, end_bit);
  }
}

void cuda_backend::find_key_above(void const* keys, unsigned key_bytes, std::size_t n, int end_bit,
                                  std::uint64_t* flags) {
  if (flags == nullptr) return;
  auto const stream = static_cast<cudaStream_t>(stream_);
  if (key_bytes == 4) {
    auto const* k = static_cast<std::uint32_t const*>(keys);
    return find_first_on_device(
        stream, n, [=] __device__(std::size_t i) { return (std::uint64_t{k[i]} >> end_bit) != 0; }, flags + bad_entry);
  }
  auto const* k = static_cast<std::uint64_t const*>(keys);
  find_first_on_device(
      stream, n, [=] __device__(std::size_t i) { return end_bit < 64 && (k[i] >> end_bit) != 0; }, flags + bad_entry);
}

void cuda_backend::gather_columns(column_copy const* columns, std::size_t count, std::size_t n,
                                  std::uint32_t const* perm) {
  if (n == 0 || count == 0) return;
  auto const stream = static_cast<cudaStream_t>(stream_);
  // 4-byte words at most, grouped by width: one launch moves every float, int or double column.
  auto const parts = chunked(columns, count, 4);
  std::vector<column_copy> by_width[3];
  for (auto const& part : parts) by_width[part.width == 4 ? 0 : part.width == 2 ? 1 : 2].push_back(part);
  launch_gathers<std::uint32_t>(stream, by_width[0], n, perm);
  launch_gathers<std::uint16_t>(stream, by_width[1], n, perm);
  launch_gathers<std::uint8_t>(stream, by_width[2], n, perm);
}

void cuda_backend::iota(std::uint32_t* v, std::size_t n) {
  each_on_device(static_cast<cudaStream_t>(stream_), n,
                 [=] __device__(std::size_t i) { v[i] = static_cast<std::uint32_t>(i); });
}

void cuda_backend::invert(std::uint32_t const* perm, std::uint32_t* inverse, std::size_t n) {
  each_on_device(static_cast<cudaStream_t>(stream_), n,
                 [=] __device__(std::size_t i) { inverse[perm[i]] = static_cast<std::uint32_t>(i); });
}

void cuda_backend::find_at_least(std::uint32_t const* v, std::size_t n, std::uint64_t bound, std::uint64_t* flags) {
  if (flags == nullptr) return;
  find_first_on_device(
      static_cast<cudaStream_t>(stream_), n, [=] __device__(std::size_t i) { return v[i] >= bound; },
      flags + bad_entry);
}

void cuda_backend::map_indices(std::uint32_t* v, std::size_t n, std::uint32_t const* inverse, std::uint64_t bound,
                               std::uint64_t* flags) {
  std::uint64_t* const first_bad = flags ? flags + bad_entry : nullptr;
  each_on_device(static_cast<cudaStream_t>(stream_), n, [=] __device__(std::size_t i) {
    std::uint32_t const entry = v[i];
    if (entry < bound) {
      v[i] = inverse[entry];
    } else {
      record_first(first_bad, i);
    }
  });
}

void cuda_backend::remap_fixed(neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                               std::uint64_t bound, std::uint32_t* out, std::uint32_t* out_counts,
                               std::uint64_t* flags) {
  auto const stream = static_cast<cudaStream_t>(stream_);
  neighbor_desc const l = list;
  std::uint64_t* const bad_row = flags ? flags + bad_count : nullptr;
  std::uint64_t* const bad_slot = flags ? flags + bad_entry : nullptr;
  // One pass reads each used entry once: checked, renumbered and written. An entry out of range
  // (or past a count above max_neighbors) is recorded and copied as it is, never read through.
  auto const move = [=] __device__(std::size_t i, std::size_t k, std::size_t in_slot, std::size_t out_slot) {
    std::size_t const old = perm[i];
    std::size_t used = l.max_neighbors;
    if (l.counts != nullptr) {
      std::uint32_t const count = l.counts[old];
      if (count > l.max_neighbors) {
        if (k == 0) record_first(bad_row, old);
      } else {
        used = count;
      }
      if (out_counts != nullptr && k == 0) out_counts[i] = count;
    }
    std::uint32_t const entry = l.indices[in_slot];
    bool const is_used = k < used;
    if (is_used && entry >= bound) record_first(bad_slot, in_slot);
    out[out_slot] = is_used && entry < bound ? inverse[entry] : entry;
  };
  if (l.format == list_format::column_major && fits_2d(l.particles, l.max_neighbors)) {
    // Column-major: thread (i, k) writes slot k * particles + i, coalesced, with no division.
    each_2d_on_device(stream, l.particles, l.max_neighbors, [=] __device__(std::size_t i, std::size_t k) {
      move(i, k, k * l.particles + perm[i], k * l.particles + i);
    });
    return;
  }
  // One thread per output slot, so the writes are coalesced in either order.
  each_on_device(stream, l.particles * l.max_neighbors, [=] __device__(std::size_t slot) {
    bool const row_major = l.format == list_format::row_major;
    std::size_t const i = row_major ? slot / l.max_neighbors : slot % l.particles;
    std::size_t const k = row_major ? slot % l.max_neighbors : slot / l.particles;
    std::size_t const old = perm[i];
    move(i, k, row_major ? old * l.max_neighbors + k : k * l.particles + old, slot);
  });
}

void cuda_backend::check_csr_offsets(std::uint32_t const* offsets, std::size_t particles, std::uint64_t* flags) {
  if (flags == nullptr) return;
  std::uint64_t* const bad = flags + bad_offset;
  std::uint64_t* const entries = flags + list_entries;
  // Index j in [0, particles]: offset j is bad when it is offset 0 and not 0, or below offset j - 1.
  each_on_device(static_cast<cudaStream_t>(stream_), particles + 1, [=] __device__(std::size_t j) {
    if (j == 0 ? offsets[0] != 0 : offsets[j] < offsets[j - 1]) record_first(bad, j);
    if (j == particles) *entries = offsets[particles];
  });
}

void cuda_backend::csr_permuted_offsets(std::uint32_t const* offsets, std::uint32_t const* perm, std::size_t particles,
                                        std::uint32_t* new_offsets, reorder_state& s) {
  auto const stream = static_cast<cudaStream_t>(stream_);
  each_on_device(stream, particles + 1, [=] __device__(std::size_t i) {
    new_offsets[i] = i < particles ? offsets[perm[i] + 1] - offsets[perm[i]] : 0u;
  });
  auto const count = static_cast<std::uint32_t>(particles + 1);
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, new_offsets, new_offsets, count, stream));
  void* temp = s.ensure(s.temp, memory_kind::device, temp_bytes);
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, new_offsets, new_offsets, count, stream));
}

void cuda_backend::remap_csr(neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                             std::uint64_t bound, std::uint32_t const* new_offsets, std::uint32_t* out,
                             std::uint64_t* flags) {
  neighbor_desc const l = list;
  std::uint64_t* const bad = flags ? flags + bad_entry : nullptr;
  each_on_device(static_cast<cudaStream_t>(stream_), l.particles, [=] __device__(std::size_t i) {
    std::uint32_t const from = l.offsets[perm[i]];
    std::uint32_t const begin = new_offsets[i], length = new_offsets[i + 1] - begin;
    for (std::uint32_t k = 0; k < length; ++k) {
      std::uint32_t const entry = l.indices[from + k];
      if (entry >= bound) record_first(bad, from + k);
      out[begin + k] = entry < bound ? inverse[entry] : entry;
    }
  });
}

std::pair<double, std::uint64_t> cuda_backend::locality_sum(neighbor_desc const& list, reorder_state& s) {
  auto const stream = static_cast<cudaStream_t>(stream_);
  auto* words = static_cast<std::byte*>(s.ensure(s.scalars, memory_kind::device, 16));
  COALESCE_CUDA_TRY(cudaMemsetAsync(words, 0, 16, stream));
  auto* sum = reinterpret_cast<double*>(words);
  auto* count = reinterpret_cast<unsigned long long*>(words + 8);
  unsigned const grid =
      static_cast<unsigned>(std::min<std::size_t>(1024, (list.particles + reduce_threads - 1) / reduce_threads));
  locality_kernel<<<std::max(grid, 1u), reduce_threads, 0, stream>>>(list, sum, count);
  COALESCE_CUDA_TRY(cudaGetLastError());
  struct {
    double sum;
    unsigned long long count;
  } result{};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&result, words, 16, cudaMemcpyDeviceToHost, stream));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(stream));
  return {result.sum, result.count};
}

void cuda_backend::cell_starts(void const* sorted_keys, unsigned key_bytes, std::size_t n, std::uint64_t cells,
                               std::uint32_t* starts) {
  auto const* k32 = static_cast<std::uint32_t const*>(sorted_keys);
  auto const* k64 = static_cast<std::uint64_t const*>(sorted_keys);
  bool const wide = key_bytes == 8;
  // Element i starts every cell in (key[i - 1], key[i]]; index n closes the tail. Each start
  // is written by exactly one thread.
  each_on_device(static_cast<cudaStream_t>(stream_), n + 1, [=] __device__(std::size_t i) {
    auto const key = [&](std::size_t j) -> std::uint64_t { return wide ? k64[j] : k32[j]; };
    std::uint64_t const first = i == 0 ? 0 : key(i - 1) + 1;
    std::uint64_t const last = i == n ? cells : min(key(i), cells);
    for (std::uint64_t c = first; c <= last; ++c) starts[c] = static_cast<std::uint32_t>(i);
  });
}

}  // namespace coalesce::detail
