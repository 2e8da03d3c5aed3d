// The neighbour-list build in GPU memory: cells by one thread per particle, CUB's stable radix
// sort of (cell, index) pairs, cell ranges from the sorted keys, then one thread per particle
// over its 27 cells (list_kernels.hpp, the host's body) writing its row. Two read-backs per
// build: the first bad particle (before anything is written) and the widest row / entry count.
// A csr rebuild stages rows chunk by chunk at the last build's width and packs them (fill_csr):
// the distance tests run once, where a first build counts, scans and fills.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>

#include "../core/cuda_check.hpp"
#include "list_backend.hpp"

namespace coalesce::detail {

namespace {

constexpr int threads = 256;
unsigned blocks(std::size_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }
template <class U> U* as(buffer const& b) { return reinterpret_cast<U*>(b.data()); }

// words (list_status_words): [0] first bad particle (min), [1] widest row (max), [2] entries (sum),
// [3] max displacement^2 bits, [4] nonzero when some particle's cell is below its predecessor's,
// [5] the first bad particle of cell_keys, [6] the most entries a csr (or cluster_pairs) refill found
// since the build, [7]-[10] a clusters refill's candidates and runs, [11] the particles its rows test
// (cluster_build_cuda.cu; a cluster_pairs refill's pairs tested, pair_list_build_cuda.cu).
template <class Real> __global__ void assign_kernel(cell_grid<Real> g, position_columns p, unsigned dims, std::size_t n,
                                                    std::uint32_t* keys, std::uint32_t* ids, point4<Real>* own,
                                                    unsigned long long* words) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  point4<Real> point;
  std::uint32_t key = 0;
  if (!place_point(g, p, dims, i, point, key)) {
    atomicMin(&words[0], static_cast<unsigned long long>(i));
    key = 0;
  }
  keys[i] = key;
  ids[i] = static_cast<std::uint32_t>(i);
  own[i] = point;
}

// Whether the particles are in cell order already (each cell at least its predecessor's): then
// the stable sort by cell is the identity, and the build skips it (the plan's sort by the list's
// cell keys served both).
__global__ void out_of_order_kernel(std::size_t n, std::uint32_t const* keys, unsigned long long* word) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  bool const descends = i + 1 < n && keys[i] > keys[i + 1];
  if (__any_sync(0xffffffffu, descends) && (threadIdx.x & 31) == 0) atomicOr(word, 1ull);
}

// The list's cell of every particle as a sort key (verlet_list::cell_keys): place_point's cell,
// the one the build bins by.
template <class Real> __global__ void cell_key_kernel(cell_grid<Real> g, position_columns p, unsigned dims,
                                                      std::size_t n, std::uint32_t* keys, unsigned long long* bad) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  point4<Real> point;
  std::uint32_t key = 0;
  if (!place_point(g, p, dims, i, point, key)) atomicMin(bad, static_cast<unsigned long long>(i));
  keys[i] = key;
}

// The particles' positions in cell order.
template <class Real> __global__ void gather_points_kernel(std::size_t n, std::uint32_t const* sorted_ids,
                                                           point4<Real> const* own, point4<Real>* cell_points) {
  std::size_t const k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < n) cell_points[k] = own[sorted_ids[k]];
}

// Every cell's bounds, empty cells too (visit_neighbors scans three neighbouring cells as one
// range): one thread per cell, the first entry of the sorted keys not below the cell and the first
// above it (binary searches: a long run of empty cells, a slab of liquid in a box of gas, costs no
// thread more than log2(n) steps).
__global__ void cell_bounds_kernel(std::size_t n, std::size_t cell_count, std::uint32_t const* sorted_keys,
                                   std::uint32_t* start, std::uint32_t* end) {
  std::size_t const c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cell_count) return;
  auto const first_above = [&](std::size_t key, bool or_equal) {
    std::size_t lo = 0, hi = n;
    while (lo < hi) {
      std::size_t const mid = lo + (hi - lo) / 2;
      std::size_t const k = sorted_keys[mid];
      if (k < key || (or_equal && k == key)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return static_cast<std::uint32_t>(lo);
  };
  start[c] = first_above(c, false);
  end[c] = first_above(c, true);
}

// Rows [first, first + rows) (particle i = first + s). Padded slots are relative to `first`: a
// csr rebuild stages a chunk of rows row-major at `width` and packs them afterwards.
template <class Real>
__global__ void fill_kernel(cell_grid<Real> g, std::size_t first, std::size_t rows, point4<Real> const* own,
                            std::uint32_t const* start, std::uint32_t const* end, point4<Real> const* cell_points,
                            std::uint32_t const* sorted_ids, std::uint32_t* counts, std::uint32_t* indices,
                            std::uint32_t const* offsets, std::size_t width, list_format format, bool count_only,
                            bool clamp_to_width, unsigned long long* words) {
  std::size_t const s = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t c = 0;
  if (s < rows) {
    auto const i = static_cast<std::uint32_t>(first + s);
    std::uint32_t const row = format == list_format::csr && !count_only ? offsets[i] : 0;
    c = visit_neighbors(g, i, own[i], start, end, cell_points, sorted_ids, [&](std::uint32_t j, std::uint32_t k) {
      if (count_only) return;
      if (format == list_format::csr) {
        indices[row + k] = j;
      } else if (k < width) {
        indices[format == list_format::column_major ? static_cast<std::size_t>(k) * rows + s : s * width + k] = j;
      }
    });
    // A padded row that outgrew the width keeps the width's entries and says so: a traversal never
    // reads past the row. The widest row below tells the driver (or list.check()) the true count.
    // (A csr rebuild's staging keeps the true count: its offsets come from the counts.)
    counts[i] = clamp_to_width && c > width ? static_cast<std::uint32_t>(width) : c;
  }
  // One atomic per warp for the widest row and the entry count.
  unsigned const widest = __reduce_max_sync(0xffffffffu, c);
  unsigned const sum = __reduce_add_sync(0xffffffffu, c);
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&words[1], static_cast<unsigned long long>(widest));
    atomicAdd(&words[2], static_cast<unsigned long long>(sum));
  }
}

// A csr refill's offsets past the list's capacity clamped to it (the rows there keep the entries
// that fit: the pack wrote those), and the refill's entries counted in full, in 64 bits (`entries`:
// 32-bit offsets may have wrapped), kept for check() in `most` (the most since the build).
__global__ void clamp_offsets_kernel(std::uint32_t* offsets, std::size_t n, std::size_t capacity,
                                     unsigned long long const* entries, unsigned long long* most) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i > n) return;
  if (i == n) atomicMax(most, *entries);
  if (offsets[i] > capacity) offsets[i] = static_cast<std::uint32_t>(capacity);
}

// A staged chunk's rows packed into the csr list: one thread per staged slot (reads coalesced,
// writes one run per row). A row wider than the staging or entries past the capacity are not
// written; the driver sees both in the counts and builds again in two passes.
__global__ void pack_staged_kernel(std::uint32_t const* staged, std::size_t first, unsigned slots, unsigned width,
                                   std::uint32_t const* counts, std::uint32_t const* offsets, std::uint32_t* indices,
                                   std::size_t capacity) {
  unsigned const s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= slots) return;
  std::size_t const i = first + s / width;
  unsigned const k = s % width;
  if (k >= counts[i]) return;
  std::size_t const at = static_cast<std::size_t>(offsets[i]) + k;
  if (at < capacity) indices[at] = staged[s];
}

__global__ void reference_kernel(position_columns p, unsigned dims, std::size_t n, double* reference) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (unsigned a = 0; a < 3; ++a) reference[3 * i + a] = a < dims ? coordinate_of(p, a, i) : 0.0;
}

struct axes {
  double length[3];
  bool periodic[3];
};
__global__ void displacement_kernel(position_columns p, unsigned dims, std::size_t n, double const* reference, axes ax,
                                    unsigned long long* word) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double const d2 = i < n ? displacement2(p, dims, reference, i, ax.length, ax.periodic) : 0.0;
  // Non-negative doubles order as their bit patterns: a warp's maximum, then one atomic.
  auto bits = static_cast<unsigned long long>(__double_as_longlong(d2));
  for (int step = 16; step > 0; step /= 2) bits = max(bits, __shfl_down_sync(0xffffffffu, bits, step));
  if ((threadIdx.x & 31) == 0) atomicMax(word, bits);
}

// Sets words [0] to ~0 and [1], [2] to 0 (the status of the build to come). Memsets, not a copy
// from the host: a graph would keep the host address of a copy's source, not its value.
void reset_words(list_memory& m, cudaStream_t s) {
  status_words(m, s);
  auto* words = as<unsigned long long>(m.words);
  COALESCE_CUDA_TRY(cudaMemsetAsync(words, 0xff, sizeof(unsigned long long), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + 1, 0, 2 * sizeof(unsigned long long), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + 6, 0, sizeof(unsigned long long), s));
}

// The rebuild criterion as a graph condition: 1 when the largest squared displacement (word) is
// over the threshold, so an IF node runs its body (a refill) only then.
__global__ void set_condition_kernel(unsigned long long const* word, double threshold2,
                                     cudaGraphConditionalHandle handle) {
  // Not (d2 <= threshold): a position that turned NaN rebuilds too, so its refill reports it.
  cudaGraphSetConditional(handle, !(__longlong_as_double(static_cast<long long>(*word)) <= threshold2) ? 1u : 0u);
}

}  // namespace

template <class Real> std::size_t cuda_list_backend::bin(list_memory& m, position_columns const& p, std::size_t n,
                                                         unsigned dims, cell_grid<Real> const& g,
                                                         std::size_t cell_count, bool read_back, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  ensure_bytes(m, m.keys, n * sizeof(std::uint32_t));
  ensure_bytes(m, m.ids, n * sizeof(std::uint32_t));
  ensure_bytes(m, m.sorted_keys, n * sizeof(std::uint32_t));
  ensure_bytes(m, m.sorted_ids, n * sizeof(std::uint32_t));
  ensure_bytes(m, m.own_points, n * sizeof(point4<Real>));
  ensure_bytes(m, m.cell_points, n * sizeof(point4<Real>));
  ensure_bytes(m, m.cell_start, cell_count * sizeof(std::uint32_t));
  ensure_bytes(m, m.cell_end, cell_count * sizeof(std::uint32_t));
  // Scratch for the sort and for the fills' scans (csr offsets), whether the sort runs or not.
  int end_bit = 1;
  while (end_bit < 32 && (std::size_t{1} << end_bit) < cell_count) ++end_bit;
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, as<std::uint32_t>(m.keys), as<std::uint32_t>(m.sorted_keys), as<std::uint32_t>(m.ids),
      as<std::uint32_t>(m.sorted_ids), static_cast<int>(n), 0, end_bit, s));
  std::size_t scan_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, as<std::uint32_t>(m.counts),
                                                  as<std::uint32_t>(m.offsets), static_cast<int>(n + 1), s));
  ensure_bytes(m, m.temp, std::max(temp_bytes, scan_bytes));
  // A build starts its status afresh; refills keep the first bad particle and the widest row of
  // every refill since the build (check() reports what any of them found, not only the last).
  if (read_back) reset_words(m, s);
  auto* words = as<unsigned long long>(m.words);
  assign_kernel<Real><<<blocks(n), threads, 0, s>>>(g, p, dims, n, as<std::uint32_t>(m.keys), as<std::uint32_t>(m.ids),
                                                    as<point4<Real>>(m.own_points), words);
  COALESCE_CUDA_TRY(cudaGetLastError());
  if (read_back) {
    // A build reads back the first bad particle, and whether the particles are in cell order
    // already (then nothing is sorted: the cell order is the identity). A refill reads nothing
    // back, so it always sorts.
    COALESCE_CUDA_TRY(cudaMemsetAsync(words + 4, 0, sizeof(unsigned long long), s));
    out_of_order_kernel<<<blocks(n), threads, 0, s>>>(n, as<std::uint32_t>(m.keys), words + 4);
    COALESCE_CUDA_TRY(cudaGetLastError());
    unsigned long long bad = 0, out_of_order = 0;
    COALESCE_CUDA_TRY(cudaMemcpyAsync(&bad, words, sizeof bad, cudaMemcpyDeviceToHost, s));
    COALESCE_CUDA_TRY(cudaMemcpyAsync(&out_of_order, words + 4, sizeof out_of_order, cudaMemcpyDeviceToHost, s));
    COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
    if (bad < n) return static_cast<std::size_t>(bad);
    if (out_of_order == 0) {
      // The identity order: the sort's outputs are its inputs (copies: the fills read the
      // particles' own positions beside the cell-ordered ones).
      COALESCE_CUDA_TRY(
          cudaMemcpyAsync(m.sorted_keys.data(), m.keys.data(), n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, s));
      COALESCE_CUDA_TRY(
          cudaMemcpyAsync(m.sorted_ids.data(), m.ids.data(), n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, s));
      COALESCE_CUDA_TRY(cudaMemcpyAsync(m.cell_points.data(), m.own_points.data(), n * sizeof(point4<Real>),
                                        cudaMemcpyDeviceToDevice, s));
      cell_bounds_kernel<<<blocks(cell_count), threads, 0, s>>>(n, cell_count, as<std::uint32_t>(m.sorted_keys),
                                                                as<std::uint32_t>(m.cell_start),
                                                                as<std::uint32_t>(m.cell_end));
      COALESCE_CUDA_TRY(cudaGetLastError());
      return n;
    }
  }
  ++m.cell_sorts;

  temp_bytes = m.temp.size();
  COALESCE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      m.temp.data(), temp_bytes, as<std::uint32_t>(m.keys), as<std::uint32_t>(m.sorted_keys), as<std::uint32_t>(m.ids),
      as<std::uint32_t>(m.sorted_ids), static_cast<int>(n), 0, end_bit, s));
  gather_points_kernel<Real><<<blocks(n), threads, 0, s>>>(
      n, as<std::uint32_t>(m.sorted_ids), as<point4<Real>>(m.own_points), as<point4<Real>>(m.cell_points));
  COALESCE_CUDA_TRY(cudaGetLastError());
  cell_bounds_kernel<<<blocks(cell_count), threads, 0, s>>>(
      n, cell_count, as<std::uint32_t>(m.sorted_keys), as<std::uint32_t>(m.cell_start), as<std::uint32_t>(m.cell_end));
  COALESCE_CUDA_TRY(cudaGetLastError());
  return n;
}

template <class Real> list_pass_result cuda_list_backend::fill(list_memory& m, std::size_t n, cell_grid<Real> const& g,
                                                               bool count_only, bool read_back, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  auto* words = as<unsigned long long>(m.words);
  if (read_back) {
    COALESCE_CUDA_TRY(cudaMemsetAsync(words + 1, 0, 2 * sizeof(unsigned long long), s));
  } else {  // a refill: the widest row since the build stays; the entries are this fill's
    COALESCE_CUDA_TRY(cudaMemsetAsync(words + 2, 0, sizeof(unsigned long long), s));
  }
  COALESCE_CUDA_TRY(cudaMemsetAsync(as<std::uint32_t>(m.counts) + n, 0, sizeof(std::uint32_t), s));
  fill_kernel<Real><<<blocks(n), threads, 0, s>>>(
      g, 0, n, as<point4<Real>>(m.own_points), as<std::uint32_t>(m.cell_start), as<std::uint32_t>(m.cell_end),
      as<point4<Real>>(m.cell_points), as<std::uint32_t>(m.sorted_ids), as<std::uint32_t>(m.counts),
      as<std::uint32_t>(m.indices), as<std::uint32_t>(m.offsets), m.width, m.format, count_only,
      !count_only && m.format != list_format::csr, words);
  COALESCE_CUDA_TRY(cudaGetLastError());
  if (!read_back) return {};
  unsigned long long got[2] = {0, 0};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(got, words + 1, sizeof got, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return {static_cast<std::size_t>(got[0]), static_cast<std::size_t>(got[1])};
}

template <class Real> list_pass_result cuda_list_backend::fill_csr(list_memory& m, std::size_t n,
                                                                   cell_grid<Real> const& g, std::size_t width,
                                                                   bool refill, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  // A refill allocates nothing: it stages as many rows per chunk as the build allocated for.
  std::size_t const chunk = refill ? m.staged_chunk : staged_chunk_rows(n, width);
  if (!refill) ensure_bytes(m, m.staged, chunk * width * sizeof(std::uint32_t));
  auto* words = as<unsigned long long>(m.words);
  auto* counts = as<std::uint32_t>(m.counts);
  auto* offsets = as<std::uint32_t>(m.offsets);
  // A refill keeps the widest row since the build (check() reports any refill's); entries are its own.
  COALESCE_CUDA_TRY(cudaMemsetAsync(words + (refill ? 2 : 1), 0, (refill ? 1 : 2) * sizeof(unsigned long long), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(counts + n, 0, sizeof(std::uint32_t), s));
  COALESCE_CUDA_TRY(cudaMemsetAsync(offsets, 0, sizeof(std::uint32_t), s));
  // Each chunk's offsets continue from the last: an exclusive scan of counts[first, end] (one past
  // the chunk) seeded with offsets[first], which the previous chunk's scan wrote (and this scan
  // writes again, unchanged).
  auto const scan = [&](void* temp, std::size_t& bytes, std::size_t first, std::size_t items) {
    return cub::DeviceScan::ExclusiveScan(temp, bytes, counts + first, offsets + first,
                                          ::cuda::std::plus<std::uint32_t>{},
                                          cub::FutureValue<std::uint32_t>(offsets + first), static_cast<int>(items), s);
  };
  std::size_t scan_bytes = 0;
  COALESCE_CUDA_TRY(scan(nullptr, scan_bytes, 0, chunk + 1));
  if (!refill) ensure_bytes(m, m.temp, scan_bytes);
  std::size_t const capacity = m.indices.size() / sizeof(std::uint32_t);
  for (std::size_t first = 0; first < n; first += chunk) {
    std::size_t const rows = std::min(chunk, n - first);
    fill_kernel<Real><<<blocks(rows), threads, 0, s>>>(
        g, first, rows, as<point4<Real>>(m.own_points), as<std::uint32_t>(m.cell_start), as<std::uint32_t>(m.cell_end),
        as<point4<Real>>(m.cell_points), as<std::uint32_t>(m.sorted_ids), counts, as<std::uint32_t>(m.staged), offsets,
        width, list_format::row_major, false, refill, words);
    COALESCE_CUDA_TRY(cudaGetLastError());
    // The scan reads one count past the chunk (the next chunk's first, not filled yet; its value
    // changes no offset of this chunk): zeroed, so that no scan reads memory nothing wrote.
    if (first + rows < n) COALESCE_CUDA_TRY(cudaMemsetAsync(counts + first + rows, 0, sizeof(std::uint32_t), s));
    std::size_t bytes = m.temp.size();
    COALESCE_CUDA_TRY(scan(m.temp.data(), bytes, first, rows + 1));
    auto const slots = static_cast<unsigned>(rows * width);
    pack_staged_kernel<<<blocks(slots), threads, 0, s>>>(as<std::uint32_t>(m.staged), first, slots,
                                                         static_cast<unsigned>(width), counts, offsets,
                                                         as<std::uint32_t>(m.indices), capacity);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
  if (refill) {
    // Rows cut at the staging width have that many entries (their counts say so); entries past the
    // capacity are cut by clamping the offsets. check() sees both in the status words.
    clamp_offsets(offsets, n, capacity, words + 2, words + 6, s);
    return {};
  }
  unsigned long long got[2] = {0, 0};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(got, words + 1, sizeof got, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return {static_cast<std::size_t>(got[0]), static_cast<std::size_t>(got[1])};
}

void cuda_list_backend::reserve_csr_staging(list_memory& m, std::size_t n, std::size_t width) {
  std::size_t const chunk = staged_chunk_rows(n, width);
  ensure_bytes(m, m.staged, chunk * width * sizeof(std::uint32_t));
  m.staged_chunk = chunk;
  auto* offsets = as<std::uint32_t>(m.offsets);
  std::size_t scan_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveScan(
      nullptr, scan_bytes, as<std::uint32_t>(m.counts), offsets, ::cuda::std::plus<std::uint32_t>{},
      cub::FutureValue<std::uint32_t>(offsets), static_cast<int>(chunk + 1), cudaStream_t{}));
  ensure_bytes(m, m.temp, scan_bytes);
}

void cuda_list_backend::clamp_offsets(std::uint32_t* offsets, std::size_t count, std::size_t capacity,
                                      unsigned long long const* total, unsigned long long* most, void* stream) {
  clamp_offsets_kernel<<<blocks(count + 1), threads, 0, static_cast<cudaStream_t>(stream)>>>(offsets, count, capacity,
                                                                                             total, most);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

void cuda_list_backend::offsets_from_counts(list_memory& m, std::size_t n, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  // CUB takes a null scratch as a size query and scans nothing: the scratch is made sure of here.
  std::size_t temp_bytes = 0;
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, as<std::uint32_t>(m.counts),
                                                  as<std::uint32_t>(m.offsets), static_cast<int>(n + 1), s));
  ensure_bytes(m, m.temp, temp_bytes);
  temp_bytes = m.temp.size();
  COALESCE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(m.temp.data(), temp_bytes, as<std::uint32_t>(m.counts),
                                                  as<std::uint32_t>(m.offsets), static_cast<int>(n + 1), s));
}

template <class Real> std::size_t cuda_list_backend::cell_keys(list_memory& m, position_columns const& p, std::size_t n,
                                                               unsigned dims, cell_grid<Real> const& g,
                                                               std::uint32_t* keys, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  status_words(m, s);
  auto* bad_word = as<unsigned long long>(m.words) + 5;  // not the status words a refill's check() reads
  COALESCE_CUDA_TRY(cudaMemsetAsync(bad_word, 0xff, sizeof(unsigned long long), s));
  cell_key_kernel<Real><<<blocks(n), threads, 0, s>>>(g, p, dims, n, keys, bad_word);
  COALESCE_CUDA_TRY(cudaGetLastError());
  unsigned long long bad = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&bad, bad_word, sizeof bad, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return bad < n ? static_cast<std::size_t>(bad) : n;
}

void cuda_list_backend::keep_reference(list_memory& m, position_columns const& p, std::size_t n, unsigned dims,
                                       bool wait, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  ensure_bytes(m, m.reference, 3 * n * sizeof(double));
  reference_kernel<<<blocks(n), threads, 0, s>>>(p, dims, n, as<double>(m.reference));
  COALESCE_CUDA_TRY(cudaGetLastError());
  if (wait) COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
}

list_status cuda_list_backend::read_status(list_memory const& m, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  unsigned long long got[list_status_words] = {};
  COALESCE_CUDA_TRY(cudaMemcpyAsync(got, m.words.data(), sizeof got, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  return {static_cast<std::size_t>(got[0] > m.built_over ? m.built_over : got[0]),
          static_cast<std::size_t>(got[1]),
          static_cast<std::size_t>(got[2]),
          static_cast<std::size_t>(got[6]),
          static_cast<std::size_t>(got[8]),
          static_cast<std::size_t>(got[10]),
          static_cast<std::size_t>(got[11])};
}

namespace {
// The largest squared displacement into words[3] (queued only).
unsigned long long* queue_displacement(list_memory const& m, position_columns const& p, std::size_t n, unsigned dims,
                                       double const* length, bool const* periodic, cudaStream_t s) {
  auto* word = as<unsigned long long>(m.words) + 3;
  COALESCE_CUDA_TRY(cudaMemsetAsync(word, 0, sizeof(unsigned long long), s));
  axes ax{};
  for (int a = 0; a < 3; ++a) {
    ax.length[a] = length[a];
    ax.periodic[a] = periodic[a];
  }
  if (n > 0) displacement_kernel<<<blocks(n), threads, 0, s>>>(p, dims, n, as<double>(m.reference), ax, word);
  COALESCE_CUDA_TRY(cudaGetLastError());
  return word;
}
}  // namespace

void cuda_list_backend::set_condition_if_moved(list_memory const& m, position_columns const& p, std::size_t n,
                                               unsigned dims, double const* length, bool const* periodic,
                                               double threshold, std::uint64_t condition, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  auto const* word = queue_displacement(m, p, n, dims, length, periodic, s);
  set_condition_kernel<<<1, 1, 0, s>>>(word, threshold * threshold, static_cast<cudaGraphConditionalHandle>(condition));
  COALESCE_CUDA_TRY(cudaGetLastError());
}

double cuda_list_backend::max_displacement(list_memory const& m, position_columns const& p, std::size_t n,
                                           unsigned dims, double const* length, bool const* periodic, void* stream) {
  auto const s = static_cast<cudaStream_t>(stream);
  auto const* word = queue_displacement(m, p, n, dims, length, periodic, s);
  unsigned long long bits = 0;
  COALESCE_CUDA_TRY(cudaMemcpyAsync(&bits, word, sizeof bits, cudaMemcpyDeviceToHost, s));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
  double d2 = 0;
  static_assert(sizeof d2 == sizeof bits);
  std::memcpy(&d2, &bits, sizeof d2);
  return d2;
}

template std::size_t cuda_list_backend::bin<float>(list_memory&, position_columns const&, std::size_t, unsigned,
                                                   cell_grid<float> const&, std::size_t, bool, void*);
template std::size_t cuda_list_backend::bin<double>(list_memory&, position_columns const&, std::size_t, unsigned,
                                                    cell_grid<double> const&, std::size_t, bool, void*);
template std::size_t cuda_list_backend::cell_keys<float>(list_memory&, position_columns const&, std::size_t, unsigned,
                                                         cell_grid<float> const&, std::uint32_t*, void*);
template std::size_t cuda_list_backend::cell_keys<double>(list_memory&, position_columns const&, std::size_t, unsigned,
                                                          cell_grid<double> const&, std::uint32_t*, void*);
template list_pass_result cuda_list_backend::fill<float>(list_memory&, std::size_t, cell_grid<float> const&, bool, bool,
                                                         void*);
template list_pass_result cuda_list_backend::fill<double>(list_memory&, std::size_t, cell_grid<double> const&, bool,
                                                          bool, void*);
template list_pass_result cuda_list_backend::fill_csr<float>(list_memory&, std::size_t, cell_grid<float> const&,
                                                             std::size_t, bool, void*);
template list_pass_result cuda_list_backend::fill_csr<double>(list_memory&, std::size_t, cell_grid<double> const&,
                                                              std::size_t, bool, void*);

}  // namespace coalesce::detail
