// The cluster-pair format's build in GPU memory: one thread per column, slot, cluster and row (the
// bodies of pair_list_kernels.hpp), CUB's scan between the counting and the filling pass; the
// counting pass keeps each row's entries in scratch (m.candidate_ids, m.pair_room per row) so the
// filling pass copies them, searching again only for rows longer than that. Read-backs: the columns'
// cluster counts (to size the slots) and the row totals (to size the entries).
#include <algorithm>
#include <cstdint>

#include <cub/device/device_scan.cuh>

#include "../core/cuda_check.hpp"
#include "pair_list_backend.hpp"

namespace coalesce::detail::cuda_pairs {

namespace {

constexpr int threads = 256;
unsigned blocks(std::size_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }
template <class U> U* as(buffer const& b) { return reinterpret_cast<U*>(b.data()); }
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

__global__ void column_counts_kernel(std::uint32_t const* start, std::uint32_t const* end, std::uint32_t slices,
                                     std::uint32_t columns, std::uint32_t* counts) {
  std::size_t const k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= columns) return;
  std::uint32_t first = 0;
  std::uint32_t const particles = column_particles(start, end, slices, static_cast<std::uint32_t>(k), first);
  counts[k] = (particles + pair_cluster - 1) / pair_cluster;
}

template <class Real> __global__ void slots_kernel(pair_build_view<Real> v, std::size_t slots) {
  std::size_t const s = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s < slots) fill_slot(v, s);
}

template <class Real> __global__ void boxes_kernel(pair_build_view<Real> v, std::size_t clusters) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c < clusters) fill_box(v, c);
}

// totals: [0] entries (64-bit), [1] widest row, [2] pairs within reach, [3] pairs tested. A row's
// first `room` entries go to scratch[c * room ...]: the filling pass copies them instead of searching
// again (a row longer than that is searched again there).
template <class Real> __global__ void count_kernel(pair_build_view<Real> v, std::size_t clusters, std::uint32_t* counts,
                                                   unsigned long long* totals, std::uint32_t* scratch,
                                                   std::uint32_t room) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= clusters) return;
  pair_search_counts pairs;
  std::uint32_t* row = scratch + c * room;
  std::uint32_t const k =
      search_row<true>(v, static_cast<std::uint32_t>(c), pairs, [&](std::uint32_t e, std::uint32_t j) {
        if (e < room) row[e] = j;
      });
  counts[c] = k;
  atomicAdd(totals + 0, static_cast<unsigned long long>(k));
  atomicMax(totals + 1, static_cast<unsigned long long>(k));
  atomicAdd(totals + 2, static_cast<unsigned long long>(pairs.within));
  atomicAdd(totals + 3, static_cast<unsigned long long>(pairs.tested));
}

template <class Real> __global__ void fill_kernel(pair_build_view<Real> v, std::size_t clusters,
                                                  std::uint32_t const* counts, std::uint32_t const* offsets,
                                                  std::uint32_t const* scratch, std::uint32_t room,
                                                  std::uint32_t* entries) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= clusters) return;
  std::uint32_t* row = entries + offsets[c];
  std::uint32_t const count = counts[c];
  if (count <= room) {
    for (std::uint32_t e = 0; e < count; ++e) row[e] = scratch[c * room + e];
    return;
  }
  pair_search_counts unused;
  search_row<false>(v, static_cast<std::uint32_t>(c), unused, [&](std::uint32_t k, std::uint32_t j) { row[k] = j; });
}

// Entries per row the counting pass keeps: the last build's widest row and a quarter (rows grow as
// particles move), at least 32; a first build 64 (half) or 128 (full), the LJ liquid's widest rows
// with room.
std::uint32_t scratch_room(list_memory const& m, bool half) {
  std::size_t const last = m.clusters > 0 ? m.widest / pair_cluster : 0;
  std::size_t const room = last > 0 ? last + last / 4 : (half ? 64 : 128);
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(room, 32, 512));
}

}  // namespace

template <class Real> void column_cluster_counts(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns,
                                                 std::uint32_t* counts, void* stream) {
  cudaStream_t const s = as_stream(stream);
  ensure_bytes(m, m.cluster_counts, (columns + 1) * sizeof(std::uint32_t));
  column_counts_kernel<<<blocks(columns), threads, 0, s>>>(
      as<std::uint32_t const>(m.cell_start), as<std::uint32_t const>(m.cell_end),
      static_cast<std::uint32_t>(g.cells[0]), columns, as<std::uint32_t>(m.cluster_counts));
  COALESCE_CUDA_TRY(cudaGetLastError());
  COALESCE_CUDA_TRY(
      cudaMemcpyAsync(counts, m.cluster_counts.data(), columns * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
}

template <class Real> void slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  slots_kernel<Real><<<blocks(clusters * pair_cluster), threads, 0, s>>>(v, clusters * pair_cluster);
  COALESCE_CUDA_TRY(cudaGetLastError());
  boxes_kernel<Real><<<blocks(clusters), threads, 0, s>>>(v, clusters);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

template <class Real>
pair_row_totals count_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  ensure_bytes(m, m.candidate_offsets, 4 * sizeof(unsigned long long));  // the totals (scratch)
  auto* totals = as<unsigned long long>(m.candidate_offsets);
  COALESCE_CUDA_TRY(cudaMemsetAsync(totals, 0, 4 * sizeof(unsigned long long), s));
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  std::uint32_t const room = scratch_room(m, v.grid.half);
  ensure_bytes(m, m.candidate_ids, clusters * room * sizeof(std::uint32_t));
  m.pair_room = room;  // the room fill_rows reads the scratch at
  count_kernel<Real>
      <<<blocks(clusters), threads, 0, s>>>(v, clusters, counts, totals, as<std::uint32_t>(m.candidate_ids), room);
  COALESCE_CUDA_TRY(cudaGetLastError());
  COALESCE_CUDA_TRY(cudaMemsetAsync(counts + clusters, 0, sizeof(std::uint32_t), s));
  auto* offsets = as<std::uint32_t>(m.offsets);
  std::size_t bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts, offsets, static_cast<int>(clusters + 1), s));
  ensure_bytes(m, m.temp, bytes);
  bytes = m.temp.size();
  COALESCE_CUDA_TRY(
      cub::DeviceScan::ExclusiveSum(m.temp.data(), bytes, counts, offsets, static_cast<int>(clusters + 1), s));
  unsigned long long host[4] = {};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(host, totals, sizeof host, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  pair_row_totals out;
  out.entries = host[0];
  out.widest = host[1];
  out.pairs.within = host[2];
  out.pairs.tested = host[3];
  return out;
}

template <class Real>
void fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  fill_kernel<Real><<<blocks(clusters), threads, 0, s>>>(
      v, clusters, as<std::uint32_t const>(m.cluster_counts), as<std::uint32_t const>(m.offsets),
      as<std::uint32_t const>(m.candidate_ids), static_cast<std::uint32_t>(m.pair_room), as<std::uint32_t>(m.indices));
  COALESCE_CUDA_TRY(cudaGetLastError());
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
}

#define COALESCE_PAIR_LIST_STEPS(Real)                                                                           \
  template void column_cluster_counts<Real>(list_memory&, cell_grid<Real> const&, std::uint32_t, std::uint32_t*, \
                                            void*);                                                              \
  template void slots_and_boxes<Real>(pair_build_view<Real> const&, std::size_t, void*);                         \
  template pair_row_totals count_rows<Real>(list_memory&, pair_build_view<Real> const&, std::size_t, void*);     \
  template void fill_rows<Real>(list_memory&, pair_build_view<Real> const&, std::size_t, void*);
COALESCE_PAIR_LIST_STEPS(float)
COALESCE_PAIR_LIST_STEPS(double)
#undef COALESCE_PAIR_LIST_STEPS

}  // namespace coalesce::detail::cuda_pairs
