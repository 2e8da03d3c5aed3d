// The cluster format's build in GPU memory: one thread per cluster for boxes, candidates and
// runs (the bodies of cluster_kernels.hpp), CUB's scans between the counting and the filling
// passes, CUB's segmented sort of each cluster's candidates, and one thread per particle for the
// neighbour count. Read-backs: the cells covered (before anything is written), the candidate and
// run totals (to size the buffers), the entry count and widest row. A refill (CUDA graphs) runs the
// same kernels into the memory the build left, reading nothing back: candidates and runs past it
// are cut, and the status words say so for check().
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <coalesce/core/error.hpp>

#include "../core/cuda_check.hpp"
#include "cluster_kernels.hpp"
#include "list_backend.hpp"

namespace coalesce::detail {

namespace {

constexpr int threads = 256;
unsigned blocks(std::size_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }
template <class U> U* as(buffer const& b) { return reinterpret_cast<U*>(b.data()); }

template <class Real> __global__ void boxes_kernel(point4<Real> const* own, std::size_t n, std::size_t clusters,
                                                   cell_grid<Real> g, cluster_box<Real>* out,
                                                   unsigned long long* covered) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long cells = 0;
  if (c < clusters) {
    out[c] = box_of_cluster(own, n, c);
    cells = cells_in(cells_near(g, out[c]));
  }
  if (covered == nullptr) return;  // a refill: no order check (nothing is read back)
  for (int step = 16; step > 0; step /= 2) cells += __shfl_down_sync(0xffffffffu, cells, step);
  if ((threadIdx.x & 31) == 0 && cells > 0) atomicAdd(covered, cells);
}

template <class Real>
__global__ void candidates_kernel(cell_grid<Real> g, std::size_t clusters, cluster_box<Real> const* bx,
                                  std::uint32_t const* start, std::uint32_t const* end, point4<Real> const* points,
                                  std::uint32_t const* sorted, std::uint32_t* counts, std::uint32_t const* offsets,
                                  std::uint32_t* ids, unsigned long long* total) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t k = 0;
  if (offsets == nullptr) {
    if (c < clusters) {
      visit_candidates(g, bx[c], start, end, points, sorted, [&](std::uint32_t) { ++k; });
      counts[c] = k;
    }
    // The total in 64 bits: the scan's 32-bit offsets must not wrap unseen.
    auto sum = static_cast<unsigned long long>(k);
    for (int step = 16; step > 0; step /= 2) sum += __shfl_down_sync(0xffffffffu, sum, step);
    if ((threadIdx.x & 31) == 0 && sum > 0) atomicAdd(total, sum);
  } else if (c < clusters) {
    // Within the cluster's window only: a refill's offsets are clamped to the memory the build left.
    std::uint32_t const room = offsets[c + 1] > offsets[c] ? offsets[c + 1] - offsets[c] : 0;
    std::uint32_t* out = ids + offsets[c];
    visit_candidates(g, bx[c], start, end, points, sorted, [&](std::uint32_t j) {
      if (k < room) out[k] = j;
      ++k;
    });
  }
}

__global__ void runs_kernel(std::size_t n, std::size_t clusters, std::uint32_t const* offsets, std::uint32_t const* ids,
                            std::uint32_t* counts, std::uint32_t const* run_offsets, std::uint32_t* runs,
                            unsigned long long* sum) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // The count pass sums the runs, the filling pass the candidates a traversal tests (either may be null).
  unsigned long long mine = 0;
  if (c < clusters) {
    std::uint32_t const* sorted = ids + offsets[c];
    std::size_t const count = offsets[c + 1] > offsets[c] ? offsets[c + 1] - offsets[c] : 0;
    if (run_offsets == nullptr) {
      counts[c] = runs_of(sorted, count, [](std::uint32_t, std::uint32_t, std::uint32_t) {});
      mine = counts[c];
    } else {
      // Within the cluster's window only (a refill's run offsets are clamped to the list's memory).
      std::uint32_t const room = run_offsets[c + 1] > run_offsets[c] ? run_offsets[c + 1] - run_offsets[c] : 0;
      std::uint32_t* out = runs + 2 * static_cast<std::size_t>(run_offsets[c]);
      unsigned long long length = 0;
      runs_of(sorted, count, [&](std::uint32_t r, std::uint32_t first, std::uint32_t last) {
        if (r >= room) return;
        out[2 * r] = first;
        out[2 * r + 1] = last;
        length += last - first;
      });
      std::size_t const left = n - c * cluster_size;
      mine = length * (left < cluster_size ? left : cluster_size);
    }
  }
  if (sum != nullptr) {
    for (int step = 16; step > 0; step /= 2) mine += __shfl_down_sync(0xffffffffu, mine, step);
    if ((threadIdx.x & 31) == 0 && mine > 0) atomicAdd(sum, mine);
  }
}

// words[0]: the widest row (max), words[1]: the entries (sum).
__global__ void count_kernel(verlet_list_ref<clusters> r, std::size_t n, std::uint32_t* counts,
                             unsigned long long* words) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t k = 0;
  if (i < n) {
    auto counter = [&](std::uint32_t) { ++k; };
    r.visit(i, counter);
    counts[i] = k;
  }
  unsigned const widest = __reduce_max_sync(0xffffffffu, k);
  unsigned const sum = __reduce_add_sync(0xffffffffu, k);
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&words[0], static_cast<unsigned long long>(widest));
    atomicAdd(&words[1], static_cast<unsigned long long>(sum));
  }
}

__global__ void rows_kernel(verlet_list_ref<clusters> r, std::size_t n, std::uint32_t const* offsets,
                            std::uint32_t* indices) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t* out = indices + offsets[i];
  std::uint32_t k = 0;
  auto write = [&](std::uint32_t j) { out[k++] = j; };
  r.visit(i, write);
}

// The words: [0] cells covered / widest, [1] entries, [2] candidates tested.
unsigned long long* zeroed_words(list_memory& m, cudaStream_t s) {
  status_words(m, s);
  COALESCE_CUDA_TRY(cudaMemsetAsync(m.words.data(), 0, 4 * sizeof(unsigned long long), s));
  return as<unsigned long long>(m.words);
}

// The candidates pass over every cluster: offsets null counts them into m.cluster_counts (their
// 64-bit sum into *total); offsets given writes them into m.candidate_ids, each cluster in its window.
template <class Real> void queue_candidates(list_memory& m, cell_grid<Real> const& g, std::size_t clusters,
                                            std::uint32_t const* offsets, unsigned long long* total, cudaStream_t s) {
  candidates_kernel<Real><<<blocks(clusters), threads, 0, s>>>(
      g, clusters, as<cluster_box<Real>>(m.boxes), as<std::uint32_t>(m.cell_start), as<std::uint32_t>(m.cell_end),
      as<point4<Real>>(m.cell_points), as<std::uint32_t>(m.sorted_ids), as<std::uint32_t>(m.cluster_counts), offsets,
      as<std::uint32_t>(m.candidate_ids), total);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

// cuda_list_backend::scan_counts, then offsets[count] read back.
std::size_t scan(list_memory& m, std::uint32_t* counts, std::size_t count, std::uint32_t* offsets, cudaStream_t s) {
  cuda_list_backend::scan_counts(m, counts, count, offsets, s);
  std::uint32_t total = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&total, offsets + count, sizeof total, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return total;
}

// Each cluster's candidates sorted by index. The item count is the candidate memory's capacity,
// not the total (the segments say which items there are), so every build and refill of the list
// asks for the same scratch. A build uses CUB's DeviceSegmentedSort (small segments sorted a warp at a time),
// which reads its partition of the segments back to the host: a refill, which a graph captures,
// uses DeviceSegmentedRadixSort (a block per segment, nothing read back); the build sizes the
// scratch for both. Either gives the same keys in the same order.
void sort_candidates(list_memory& m, std::size_t clusters, std::size_t n, bool refill, cudaStream_t s) {
  auto const* offsets = as<std::uint32_t>(m.candidate_offsets);
  std::size_t const capacity = candidate_capacity(m);  // a refill's clamp: at most 2^31 - 1 (int)
  std::size_t const held = candidate_memory(m);        // a build's sort: a 64-bit count
  auto const* in = as<std::uint32_t>(m.candidate_ids);
  auto* out = as<std::uint32_t>(m.candidate_sorted);
  int const end_bit = std::max(1, static_cast<int>(std::bit_width(n - 1)));
  auto const radix = [&](void* temp, std::size_t& bytes) {
    return cub::DeviceSegmentedRadixSort::SortKeys(temp, bytes, in, out, static_cast<int>(capacity),
                                                   static_cast<int>(clusters), offsets, offsets + 1, 0, end_bit, s);
  };
  auto const merge = [&](void* temp, std::size_t& bytes) {
    return cub::DeviceSegmentedSort::SortKeys(temp, bytes, in, out, static_cast<std::int64_t>(held),
                                              static_cast<std::int64_t>(clusters), offsets, offsets + 1, s);
  };
  std::size_t radix_bytes = 0, merge_bytes = 0;
  COALESCE_CUDA_TRY(radix(nullptr, radix_bytes));
  if (!refill) COALESCE_CUDA_TRY(merge(nullptr, merge_bytes));
  ensure_bytes(m, m.temp, std::max(radix_bytes, merge_bytes));
  std::size_t bytes = m.temp.size();
  COALESCE_CUDA_TRY(refill ? radix(m.temp.data(), bytes) : merge(m.temp.data(), bytes));
}

}  // namespace

void cuda_list_backend::scan_counts(list_memory& m, std::uint32_t* counts, std::size_t count, std::uint32_t* offsets,
                                    void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  COALESCE_CUDA_TRY(cudaMemsetAsync(counts + count, 0, sizeof(std::uint32_t), s));
  std::size_t bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts, offsets, static_cast<int>(count + 1), s));
  ensure_bytes(m, m.temp, bytes);
  bytes = m.temp.size();
  COALESCE_CUDA_TRY(
      cub::DeviceScan::ExclusiveSum(m.temp.data(), bytes, counts, offsets, static_cast<int>(count + 1), s));
}

template <class Real>
std::uint64_t cuda_list_backend::boxes(list_memory& m, std::size_t n, cell_grid<Real> const& g, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  std::size_t const clusters = cluster_count_of(n);
  ensure_bytes(m, m.boxes, clusters * sizeof(cluster_box<Real>));
  unsigned long long* words = zeroed_words(m, s);
  boxes_kernel<Real><<<blocks(clusters), threads, 0, s>>>(as<point4<Real>>(m.own_points), n, clusters, g,
                                                          as<cluster_box<Real>>(m.boxes), words);
  COALESCE_CUDA_TRY(cudaGetLastError());
  unsigned long long covered = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&covered, words, sizeof covered, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return covered;
}

template <class Real>
std::size_t cuda_list_backend::candidates(list_memory& m, std::size_t n, cell_grid<Real> const& g, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  std::size_t const clusters = cluster_count_of(n);
  ensure_bytes(m, m.cluster_counts, (clusters + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.candidate_offsets, (clusters + 1) * sizeof(std::uint32_t));
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto* offsets = as<std::uint32_t>(m.candidate_offsets);
  unsigned long long* words = zeroed_words(m, s);
  auto const launch = [&](std::uint32_t const* at) { queue_candidates<Real>(m, g, clusters, at, words + 1, s); };
  launch(nullptr);
  unsigned long long counted = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&counted, words + 1, sizeof counted, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  if (counted >= 0xffffffffull) {
    throw_error("neighbor list (clusters): " + std::to_string(counted) +
                " candidates do not fit 32-bit offsets; use padded_columns for a system this size");
  }
  std::size_t const total = scan(m, counts, clusters, offsets, s);
  // Room for a refill's candidates, which grow as particles move (ensure_room).
  ensure_room(m, m.candidate_ids, total * sizeof(std::uint32_t));
  ensure_room(m, m.candidate_sorted, total * sizeof(std::uint32_t));
  launch(offsets);
  sort_candidates(m, clusters, n, false, s);
  return total;
}

std::size_t cuda_list_backend::runs(list_memory& m, std::size_t n, std::size_t& tested, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  std::size_t const clusters = cluster_count_of(n);
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto const* offsets = as<std::uint32_t>(m.candidate_offsets);
  auto const* ids = as<std::uint32_t>(m.candidate_sorted);
  unsigned long long* words = zeroed_words(m, s);
  runs_kernel<<<blocks(clusters), threads, 0, s>>>(n, clusters, offsets, ids, counts, nullptr, nullptr, nullptr);
  COALESCE_CUDA_TRY(cudaGetLastError());
  ensure_bytes(m, m.next_offsets, (clusters + 1) * sizeof(std::uint32_t));
  auto* run_offsets = as<std::uint32_t>(m.next_offsets);
  std::size_t const total = scan(m, counts, clusters, run_offsets, s);
  ensure_room(m, m.next_runs, 2 * total * sizeof(std::uint32_t));  // builds whose runs grow allocate nothing
  runs_kernel<<<blocks(clusters), threads, 0, s>>>(n, clusters, offsets, ids, counts, run_offsets,
                                                   as<std::uint32_t>(m.next_runs), words + 2);
  COALESCE_CUDA_TRY(cudaGetLastError());
  unsigned long long sum = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&sum, words + 2, sizeof sum, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  tested = static_cast<std::size_t>(sum);
  return total;
}

list_pass_result cuda_list_backend::count(list_memory& m, std::size_t n, list_geometry const& g, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  unsigned long long* words = zeroed_words(m, s);
  count_kernel<<<blocks(n), threads, 0, s>>>(cluster_ref(m, g), n, as<std::uint32_t>(m.counts), words);
  COALESCE_CUDA_TRY(cudaGetLastError());
  unsigned long long got[2] = {0, 0};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(got, words, sizeof got, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return {static_cast<std::size_t>(got[0]), static_cast<std::size_t>(got[1])};
}

void cuda_list_backend::keep_status(list_memory& m, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  auto* words = as<unsigned long long>(m.words);
  // Copied from the host: a build is never captured, so the values are read now. Word 11 (what the
  // rows test) is the build's too: check() reads it back into candidates() before any refill ran.
  unsigned long long const first[3] = {~0ull, m.widest, m.entries};
  unsigned long long const rest[6] = {0, 0, 0, 0, 0, m.candidates};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(words, first, sizeof first, cudaMemcpyHostToDevice, s));
  COALESCE_CUDA_TRY(cudaMemcpyAsync(words + 6, rest, sizeof rest, cudaMemcpyHostToDevice, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
}

template <class Real> void cuda_list_backend::refill_clusters(list_memory& m, std::size_t n, cell_grid<Real> const& g,
                                                              list_geometry const& geometry, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  std::size_t const clusters = cluster_count_of(n);
  auto* words = as<unsigned long long>(m.words);
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto* candidate_offsets = as<std::uint32_t>(m.candidate_offsets);
  // This refill's candidate and run totals (words 7 and 9) start at zero; the most since the build
  // (8 and 10) and the widest row (1) stay; its entries (2) are its own.
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + 7, 0, sizeof(unsigned long long), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + 9, 0, sizeof(unsigned long long), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + 11, 0, sizeof(unsigned long long), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + 2, 0, sizeof(unsigned long long), s));
  boxes_kernel<Real><<<blocks(clusters), threads, 0, s>>>(as<point4<Real>>(m.own_points), n, clusters, g,
                                                          as<cluster_box<Real>>(m.boxes), nullptr);
  COALESCE_CUDA_TRY(cudaGetLastError());
  queue_candidates<Real>(m, g, clusters, nullptr, words + 7, s);
  cuda_list_backend::scan_counts(m, counts, clusters, candidate_offsets, s);
  clamp_offsets(candidate_offsets, clusters, candidate_capacity(m), words + 7, words + 8, s);
  queue_candidates<Real>(m, g, clusters, candidate_offsets, words + 7, s);
  sort_candidates(m, clusters, n, true, s);
  // The runs go where the list's are (its offsets and runs, in place: a graph's pointers are fixed).
  auto* run_offsets = as<std::uint32_t>(m.offsets);
  auto const* sorted = as<std::uint32_t>(m.candidate_sorted);
  runs_kernel<<<blocks(clusters), threads, 0, s>>>(n, clusters, candidate_offsets, sorted, counts, nullptr, nullptr,
                                                   words + 9);
  COALESCE_CUDA_TRY(cudaGetLastError());
  cuda_list_backend::scan_counts(m, counts, clusters, run_offsets, s);
  clamp_offsets(run_offsets, clusters, run_capacity(m), words + 9, words + 10, s);
  runs_kernel<<<blocks(clusters), threads, 0, s>>>(n, clusters, candidate_offsets, sorted, counts, run_offsets,
                                                   as<std::uint32_t>(m.indices), words + 11);
  COALESCE_CUDA_TRY(cudaGetLastError());
  // The positions the traversal filters with: this refill's (bin wrote them to the scratch).
  COALESCE_CUDA_TRY(
      cudaMemcpyAsync(m.points.data(), m.own_points.data(), n * sizeof(point4<Real>), cudaMemcpyDeviceToDevice, s));
  count_kernel<<<blocks(n), threads, 0, s>>>(cluster_ref(m, geometry), n, as<std::uint32_t>(m.counts), words + 1);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

void cuda_list_backend::cluster_rows(list_memory const& m, list_geometry const& g, std::vector<std::uint32_t>& offsets,
                                     std::vector<std::uint32_t>& indices, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  std::size_t const n = m.particles;
  // A check and output path, not a step of a time loop: its own buffers.
  std::vector<std::uint32_t> counts(n);
  COALESCE_CUDA_TRY(
      cudaMemcpyAsync(counts.data(), m.counts.data(), n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  for (std::size_t i = 0; i < n; ++i) offsets[i + 1] = offsets[i] + counts[i];
  indices.resize(offsets[n]);
  buffer device_offsets(memory_kind::device, (n + 1) * sizeof(std::uint32_t));
  buffer device_indices(memory_kind::device, std::max<std::size_t>(indices.size(), 1) * sizeof(std::uint32_t));
  COALESCE_CUDA_TRY(cudaMemcpyAsync(device_offsets.data(), offsets.data(), (n + 1) * sizeof(std::uint32_t),
                                    cudaMemcpyHostToDevice, s));
  rows_kernel<<<blocks(n), threads, 0, s>>>(cluster_ref(m, g), n, as<std::uint32_t>(device_offsets),
                                            as<std::uint32_t>(device_indices));
  COALESCE_CUDA_TRY(cudaGetLastError());
  COALESCE_CUDA_TRY(cudaMemcpyAsync(indices.data(), device_indices.data(), indices.size() * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
}

template std::uint64_t cuda_list_backend::boxes<float>(list_memory&, std::size_t, cell_grid<float> const&, void*);
template std::uint64_t cuda_list_backend::boxes<double>(list_memory&, std::size_t, cell_grid<double> const&, void*);
template std::size_t cuda_list_backend::candidates<float>(list_memory&, std::size_t, cell_grid<float> const&, void*);
template std::size_t cuda_list_backend::candidates<double>(list_memory&, std::size_t, cell_grid<double> const&, void*);
template void cuda_list_backend::refill_clusters<float>(list_memory&, std::size_t, cell_grid<float> const&,
                                                        list_geometry const&, void*);
template void cuda_list_backend::refill_clusters<double>(list_memory&, std::size_t, cell_grid<double> const&,
                                                         list_geometry const&, void*);

}  // namespace coalesce::detail
