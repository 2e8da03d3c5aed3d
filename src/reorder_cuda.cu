// Reorder primitives in GPU memory: CUB's DeviceRadixSort over the keys' bit range with
// reused temporary storage, one fused gather kernel for all columns, and small kernels for
// inverses, remapping and checks. Host memory is handed to host_impl (reorder_host.cpp).
#include <algorithm>
#include <cstdint>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "column_chunks.hpp"
#include "column_moves.cuh"
#include "cuda_check.hpp"
#include "reorder_cuda_launch.cuh"
#include "reorder_state.hpp"

namespace coalesce::detail {

namespace {

constexpr int columns_per_launch = 64;

struct gather_batch {
  column_copy columns[columns_per_launch];
  int count;
  std::size_t n;
  std::uint32_t const* perm;
};

// One thread per destination element, every block launched at once: the thread reads its
// source index once, then moves the element of every column (move_element keeps several random
// reads in flight; a grid sized to resident blocks looping over 4 elements per thread was
// slower than column-by-column thrust::gather on the H200).

template <class Word> __global__ void gather_columns_kernel(__grid_constant__ gather_batch const batch) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch.n) return;
  move_element<Word>(batch.columns, batch.count, __ldg(batch.perm + i), i);
}

// Random reads are served from L2 when the columns being gathered fit in it: a launch takes
// only as many columns as fill half of L2 (at least one), so a permutation from random order
// reads each source sector from DRAM about once (all columns at once measured 1.9x slower than
// column-by-column thrust::gather on the H200, 4M particles x 8 columns).
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

template <class Word> void launch_gathers(std::vector<column_copy> const& parts, std::size_t n, std::uint32_t const* perm) {
  if (parts.empty()) return;
  unsigned const grid = static_cast<unsigned>((n + launch_threads - 1) / launch_threads);
  std::size_t const per_launch = columns_fitting_l2(n, sizeof(Word));
  for (std::size_t begin = 0; begin < parts.size(); begin += per_launch) {
    gather_batch batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(per_launch, parts.size() - begin));
    std::copy_n(parts.data() + begin, batch.count, batch.columns);
    batch.n = n;
    batch.perm = perm;
    gather_columns_kernel<Word><<<grid, launch_threads>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

template <class Key> void sort_typed(reorder_state& s, std::size_t n, int begin_bit, int end_bit) {
  cub::DoubleBuffer<Key> keys(reinterpret_cast<Key*>(s.keys.data()), reinterpret_cast<Key*>(s.keys_alt.data()));
  cub::DoubleBuffer<std::uint32_t> values(reinterpret_cast<std::uint32_t*>(s.perm.data()),
                                          reinterpret_cast<std::uint32_t*>(s.perm_alt.data()));
  auto const count = static_cast<std::uint32_t>(n);
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, values, count, begin_bit, end_bit));
  void* temp = s.ensure(s.temp, memory_kind::device, temp_bytes);
  COALESCE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, values, count, begin_bit, end_bit));
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
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < list.particles; i += threads) {
    auto const distance = [i](std::uint32_t j) { return static_cast<double>(i > j ? i - j : j - i); };
    if (list.format == list_format::csr) {
      for (std::uint32_t e = list.offsets[i]; e < list.offsets[i + 1]; ++e) mine += distance(list.indices[e]);
      used_total += list.offsets[i + 1] - list.offsets[i];
    } else {
      std::size_t const used = list.counts ? list.counts[i] : list.max_neighbors;
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

void sort_pairs(memory_kind kind, reorder_state& s, std::size_t n, int begin_bit, int end_bit) {
  if (kind == memory_kind::host) return host_impl::sort_pairs(kind, s, n, begin_bit, end_bit);
  if (n < 2) return;
  if (s.key_bytes == 4) {
    sort_typed<std::uint32_t>(s, n, begin_bit, end_bit);
  } else {
    sort_typed<std::uint64_t>(s, n, begin_bit, end_bit);
  }
}

std::size_t first_key_above(memory_kind kind, void const* keys, unsigned key_bytes, std::size_t n, int end_bit,
                            reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::first_key_above(kind, keys, key_bytes, n, end_bit, s);
  if (key_bytes == 4) {
    auto const* k = static_cast<std::uint32_t const*>(keys);
    return first_where_on_device(s, n, [=] __device__(std::size_t i) { return (std::uint64_t{k[i]} >> end_bit) != 0; });
  }
  auto const* k = static_cast<std::uint64_t const*>(keys);
  return first_where_on_device(s, n, [=] __device__(std::size_t i) { return end_bit < 64 && (k[i] >> end_bit) != 0; });
}

void gather_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n,
                    std::uint32_t const* perm) {
  if (kind == memory_kind::host) return host_impl::gather_columns(kind, columns, count, n, perm);
  if (n == 0 || count == 0) return;
  // 4-byte words at most, grouped by width: one launch moves every float, int or double column.
  auto const parts = chunked(columns, count, 4);
  std::vector<column_copy> by_width[3];
  for (auto const& part : parts) by_width[part.width == 4 ? 0 : part.width == 2 ? 1 : 2].push_back(part);
  launch_gathers<std::uint32_t>(by_width[0], n, perm);
  launch_gathers<std::uint16_t>(by_width[1], n, perm);
  launch_gathers<std::uint8_t>(by_width[2], n, perm);
}

void iota(memory_kind kind, std::uint32_t* v, std::size_t n) {
  if (kind == memory_kind::host) return host_impl::iota(kind, v, n);
  each_on_device(n, [=] __device__(std::size_t i) { v[i] = static_cast<std::uint32_t>(i); });
}

void invert(memory_kind kind, std::uint32_t const* perm, std::uint32_t* inverse, std::size_t n) {
  if (kind == memory_kind::host) return host_impl::invert(kind, perm, inverse, n);
  each_on_device(n, [=] __device__(std::size_t i) { inverse[perm[i]] = static_cast<std::uint32_t>(i); });
}

std::size_t first_at_least(memory_kind kind, std::uint32_t const* v, std::size_t n, std::uint64_t bound, reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::first_at_least(kind, v, n, bound, s);
  return first_where_on_device(s, n, [=] __device__(std::size_t i) { return v[i] >= bound; });
}

std::size_t first_bad_entry(memory_kind kind, neighbor_desc const& list, std::uint64_t bound, reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::first_bad_entry(kind, list, bound, s);
  if (list.format == list_format::csr) {
    std::uint32_t entries = 0;
    COALESCE_CUDA_TRY(cudaMemcpy(&entries, list.offsets + list.particles, 4, cudaMemcpyDeviceToHost));
    return first_at_least(kind, list.indices, entries, bound, s);
  }
  neighbor_desc const l = list;
  if (l.counts != nullptr && l.format == list_format::column_major && fits_2d(l.particles, l.max_neighbors)) {
    return first_where_2d_on_device(s, l.particles, l.max_neighbors, [=] __device__(std::size_t i, std::size_t k) {
      return k < l.counts[i] && l.indices[k * l.particles + i] >= bound;
    });
  }
  if (l.counts == nullptr) {  // every slot is used: no need to know which row a slot is in
    return first_where_on_device(s, l.particles * l.max_neighbors,
                                 [=] __device__(std::size_t slot) { return l.indices[slot] >= bound; });
  }
  return first_where_on_device(s, l.particles * l.max_neighbors, [=] __device__(std::size_t slot) {
    bool const row_major = l.format == list_format::row_major;
    std::size_t const i = row_major ? slot / l.max_neighbors : slot % l.particles;
    std::size_t const k = row_major ? slot % l.max_neighbors : slot / l.particles;
    std::size_t const used = l.counts ? l.counts[i] : l.max_neighbors;
    return k < used && l.indices[slot] >= bound;
  });
}

std::size_t first_offset_drop(memory_kind kind, std::uint32_t const* offsets, std::size_t particles, reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::first_offset_drop(kind, offsets, particles, s);
  return first_where_on_device(s, particles, [=] __device__(std::size_t i) { return offsets[i + 1] < offsets[i]; });
}

void map_indices(memory_kind kind, std::uint32_t* v, std::size_t n, std::uint32_t const* inverse) {
  if (kind == memory_kind::host) return host_impl::map_indices(kind, v, n, inverse);
  each_on_device(n, [=] __device__(std::size_t i) { v[i] = inverse[v[i]]; });
}

void remap_fixed(memory_kind kind, neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                 std::uint32_t* out, std::uint32_t* out_counts) {
  if (kind == memory_kind::host) return host_impl::remap_fixed(kind, list, perm, inverse, out, out_counts);
  neighbor_desc const l = list;
  if (l.format == list_format::column_major && fits_2d(l.particles, l.max_neighbors)) {
    // Column-major: thread (i, k) writes slot k * particles + i, coalesced, with no division.
    each_2d_on_device(l.particles, l.max_neighbors, [=] __device__(std::size_t i, std::size_t k) {
      std::size_t const old = perm[i];
      std::size_t const used = l.counts ? l.counts[old] : l.max_neighbors;
      std::uint32_t const entry = l.indices[k * l.particles + old];
      out[k * l.particles + i] = k < used ? inverse[entry] : entry;
      if (out_counts != nullptr && k == 0) out_counts[i] = l.counts[old];
    });
    return;
  }
  // One thread per output slot, so the writes are coalesced in either order.
  each_on_device(l.particles * l.max_neighbors, [=] __device__(std::size_t slot) {
    bool const row_major = l.format == list_format::row_major;
    std::size_t const i = row_major ? slot / l.max_neighbors : slot % l.particles;
    std::size_t const k = row_major ? slot % l.max_neighbors : slot / l.particles;
    std::size_t const old = perm[i];
    std::size_t const used = l.counts ? l.counts[old] : l.max_neighbors;
    std::uint32_t const entry = l.indices[row_major ? old * l.max_neighbors + k : k * l.particles + old];
    out[slot] = k < used ? inverse[entry] : entry;
    if (out_counts != nullptr && k == 0) out_counts[i] = l.counts[old];
  });
}

void csr_permuted_offsets(memory_kind kind, std::uint32_t const* offsets, std::uint32_t const* perm, std::size_t particles,
                          std::uint32_t* new_offsets, reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::csr_permuted_offsets(kind, offsets, perm, particles, new_offsets, s);
  each_on_device(particles + 1, [=] __device__(std::size_t i) {
    new_offsets[i] = i < particles ? offsets[perm[i] + 1] - offsets[perm[i]] : 0u;
  });
  auto const count = static_cast<std::uint32_t>(particles + 1);
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, new_offsets, new_offsets, count));
  void* temp = s.ensure(s.temp, memory_kind::device, temp_bytes);
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, new_offsets, new_offsets, count));
}

void remap_csr(memory_kind kind, neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
               std::uint32_t const* new_offsets, std::uint32_t* out) {
  if (kind == memory_kind::host) return host_impl::remap_csr(kind, list, perm, inverse, new_offsets, out);
  neighbor_desc const l = list;
  each_on_device(l.particles, [=] __device__(std::size_t i) {
    std::uint32_t const from = l.offsets[perm[i]];
    std::uint32_t const begin = new_offsets[i], length = new_offsets[i + 1] - begin;
    for (std::uint32_t k = 0; k < length; ++k) out[begin + k] = inverse[l.indices[from + k]];
  });
}

std::pair<double, std::uint64_t> locality_sum(memory_kind kind, neighbor_desc const& list, reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::locality_sum(kind, list, s);
  auto* flag = static_cast<std::byte*>(s.ensure(s.flag, memory_kind::device, 32));
  COALESCE_CUDA_TRY(cudaMemset(flag, 0, 16));
  auto* sum = reinterpret_cast<double*>(flag);
  auto* count = reinterpret_cast<unsigned long long*>(flag + 8);
  unsigned const grid = static_cast<unsigned>(std::min<std::size_t>(1024, (list.particles + reduce_threads - 1) / reduce_threads));
  locality_kernel<<<std::max(grid, 1u), reduce_threads>>>(list, sum, count);
  COALESCE_CUDA_TRY(cudaGetLastError());
  double host_sum = 0;
  unsigned long long host_count = 0;
  COALESCE_CUDA_TRY(cudaMemcpy(&host_sum, sum, 8, cudaMemcpyDeviceToHost));
  COALESCE_CUDA_TRY(cudaMemcpy(&host_count, count, 8, cudaMemcpyDeviceToHost));
  return {host_sum, host_count};
}

void cell_starts(memory_kind kind, void const* sorted_keys, unsigned key_bytes, std::size_t n, std::uint64_t cells,
                 std::uint32_t* starts) {
  if (kind == memory_kind::host) return host_impl::cell_starts(kind, sorted_keys, key_bytes, n, cells, starts);
  auto const* k32 = static_cast<std::uint32_t const*>(sorted_keys);
  auto const* k64 = static_cast<std::uint64_t const*>(sorted_keys);
  bool const wide = key_bytes == 8;
  // Element i starts every cell in (key[i - 1], key[i]]; index n closes the tail. Each start
  // is written by exactly one thread.
  each_on_device(n + 1, [=] __device__(std::size_t i) {
    auto const key = [&](std::size_t j) -> std::uint64_t { return wide ? k64[j] : k32[j]; };
    std::uint64_t const first = i == 0 ? 0 : key(i - 1) + 1;
    std::uint64_t const last = i == n ? cells : key(i);
    for (std::uint64_t c = first; c <= last; ++c) starts[c] = static_cast<std::uint32_t>(i);
  });
}

}  // namespace coalesce::detail
