// The cluster-pair format's build in GPU memory: one thread per column, slot and cluster (the bodies
// of pair_list_kernels.hpp), a warp per row's search, CUB's scans for the columns' first clusters and
// between the counting and the filling pass; the counting pass keeps each row's entries in scratch
// (m.candidate_ids, m.pair_room per row) so the filling pass copies them, searching again only for
// rows longer than that. A build reads the row totals back (to size the entries); a refill (CUDA
// graphs) reads nothing back: its rows stop at the entries the build left room for, and the
// status words say what it found.
#include <algorithm>
#include <cstdint>

#include "../core/cuda_check.hpp"
#include "pair_list_backend.hpp"

namespace coalesce::detail {

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

// ---- The search a warp per cluster: the candidates of cluster i spread over the lanes.
//
// A thread per cluster walked i's columns in reach one after another, each a few candidate
// clusters: long, divergent loops (9 ms at 4M LJ particles on the H200). Here a warp takes i: each
// lane takes one column in reach (32 at a time) and finds its candidate clusters (at most two
// ranges of slices: a periodic axis wraps), the lanes' counts are scanned, and the warp walks the
// flattened candidates 32 at a time: lane l tests the bounding boxes of candidate t + l, and the
// whole warp then tests the exact 8 x 8 pairs of each candidate whose box passed, in order
// (exact_pairs_warp). The candidates come in the thread-per-cluster order (columns r2-major, slices
// ascending), so the row is the same list, entry for entry.
constexpr unsigned warps_per_block = threads / 32;
constexpr int search_blocks_per_sm = 4;

struct column_ranges {  // a lane's column: up to two runs of candidate clusters, [begin, begin + count)
  std::uint32_t begin[2];
  std::uint32_t count[2];
};

template <class Real> __device__ column_ranges column_candidates(pair_build_view<Real> const& v, std::uint32_t i,
                                                                 int r2, int r1, int const (&ranges)[2][2]) {
  cell_grid<Real> const& g = v.grid;
  column_ranges out{{0, 0}, {0, 0}};
  auto const slices = static_cast<std::uint32_t>(g.cells[0]);
  int const c2 = ((r2 % g.cells[2]) + g.cells[2]) % g.cells[2];
  int const c1 = ((r1 % g.cells[1]) + g.cells[1]) % g.cells[1];
  auto const column = static_cast<std::uint32_t>(c2 * g.cells[1] + c1);
  std::uint32_t column_first = 0;
  if (column_particles(v.cell_start, v.cell_end, slices, column, column_first) == 0) return out;
  std::size_t const base = static_cast<std::size_t>(column) * slices;
  std::uint32_t const cluster0 = v.column_clusters[column];
  std::uint32_t done = cluster0;
  for (int r = 0; r < 2; ++r) {
    if (ranges[r][0] > ranges[r][1]) continue;
    std::uint32_t const p0 = v.cell_start[base + static_cast<std::size_t>(ranges[r][0])];
    std::uint32_t const p1 = v.cell_end[base + static_cast<std::size_t>(ranges[r][1])];
    if (p0 >= p1) continue;
    std::uint32_t j = cluster0 + (p0 - column_first) / pair_cluster;
    std::uint32_t const j_end = cluster0 + (p1 - column_first + pair_cluster - 1) / pair_cluster;
    j = j < done ? done : j;
    if (g.half && j < i) j = i < j_end ? i : j_end;  // a half list keeps j >= i
    if (j < j_end) out.begin[r] = j, out.count[r] = j_end - j;
    done = j_end > done ? j_end : done;
  }
  return out;
}

// Whether some particle of box b lies within reach (and a little) of a periodic face. When none
// does, the nearest image of every particle within reach of one of b's is the particle itself, and
// a plain difference decides as pair_in_reach does, bit for bit: pair_in_reach's image then adds
// a zero shift, and a pair whose plain difference along an axis exceeds half the length lies at
// least the margin from every image. About nine rows in ten at 4M LJ particles (a box 170 long,
// rows within 2.8 of a face: counted from the geometry, not measured).
template <class Real> __device__ bool needs_image(cell_grid<Real> const& g, pair_box<Real> const& b) {
  Real const margin = sqrt(g.reach2) * Real(1.001);
  bool near_face = false;
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    if (g.periodic[a]) near_face |= b.lo[a] - g.lo[a] < margin || g.lo[a] + g.length[a] - b.hi[a] < margin;
  }
  return near_face;
}

// Clusters i and j under the exact test, by the whole warp: lane l holds i's particle a = l % 8 and
// j's particles b = l / 8 and l / 8 + 4 (the force loop's pairing), ballots count. The same pairs and
// the same test as exact_pairs (pair_in_reach, pair_list_kernels.hpp; Wrap false: a row that needs
// no image, see needs_image), so the same clusters are kept; one lane testing all 64 pairs of its
// own candidate left the lanes whose candidates failed the box test idle. Returns the pairs within
// reach (every lane); `tested`: the pairs the two clusters hold.
template <bool Wrap, class Real> __device__ std::uint32_t exact_pairs_warp(cell_grid<Real> const& g, std::uint32_t i,
                                                                           std::uint32_t j, point4<Real> const& a,
                                                                           point4<Real> const (&b)[2],
                                                                           std::uint32_t lane, std::uint32_t& tested) {
  std::uint32_t const p = lane % pair_cluster, q0 = lane / pair_cluster;
  std::uint32_t within = 0;
  tested = 0;
#pragma unroll
  for (std::uint32_t h = 0; h < 2; ++h) {
    std::uint32_t const q = q0 + 4 * h;
    bool const valid = a.w != Real(0) && b[h].w != Real(0) && !(i == j && (g.half ? q <= p : q == p));
    bool in_reach = false;
    if constexpr (Wrap) {
      in_reach = valid && pair_in_reach(g, a, b[h]);
    } else {
      in_reach = valid && distance2(a.x - b[h].x, a.y - b[h].y, a.z - b[h].z) < g.reach2;
    }
    within += static_cast<std::uint32_t>(__popc(__ballot_sync(0xffffffffu, in_reach)));
    tested += static_cast<std::uint32_t>(__popc(__ballot_sync(0xffffffffu, valid)));
  }
  return within;
}

// Lane l's two particles of cluster j in the exact test's pairing (l / 8 and l / 8 + 4).
template <class Real> __device__ void load_pair_points(pair_build_view<Real> const& v, std::uint32_t j,
                                                       std::uint32_t lane, point4<Real> (&b)[2]) {
  std::size_t const base = static_cast<std::size_t>(j) * pair_cluster + lane / pair_cluster;
  b[0] = v.points[base];
  b[1] = v.points[base + 4];
}

// Lane `lane` of the warp searching cluster i: emit(e, j) from lane 0 for the e-th entry. Returns
// the row's count (every lane). `counts` (Count) is lane 0's.
//
// The warp's time goes to the exact tests of the candidates whose boxes passed (about 3,200 warp
// instructions per row at the LJ liquid, most of them there, ncu 2026-12-06): i's particle is read
// once per row, a row far from the periodic faces tests without images (needs_image), and the
// candidates are taken two at a time with all four loads issued before either test (one memory
// latency per two candidates), still in order, so the row is the same list.
template <bool Count, class Real, class Emit>
__device__ std::uint32_t search_row_warp(pair_build_view<Real> const& v, std::uint32_t i, std::uint32_t lane,
                                         pair_search_counts& counts, column_ranges* shared_ranges,
                                         std::uint32_t* shared_ends, Emit&& emit) {
  if (empty_cluster(v, i)) return 0;  // the whole warp: one of the clusters past the columns' own
  cell_grid<Real> const& g = v.grid;
  pair_box<Real> const bi = v.boxes[i];
  point4<Real> const a = v.points[static_cast<std::size_t>(i) * pair_cluster + lane % pair_cluster];
  bool const wrap = needs_image(g, bi);
  Real const limit = g.reach2 * Real(1.00001);  // bounding boxes: rounding never drops a pair
  row_reach const reach = reach_of(g, bi);
  int const(&first)[3] = reach.first;
  int const(&last)[3] = reach.last;
  int const(&ranges)[2][2] = reach.ranges;
  int const across1 = last[1] - first[1] + 1;
  int const columns = (last[2] - first[2] + 1) * across1;
  std::uint32_t kept = 0;
  auto keep = [&](std::uint32_t j, std::uint32_t within, std::uint32_t tested) {
    if (within == 0) return;
    if (lane == 0) {
      if constexpr (Count) counts.within += within, counts.tested += tested;
      emit(kept, j);
    }
    ++kept;
  };
  for (int chunk = 0; chunk < columns; chunk += 32) {
    int const q = chunk + static_cast<int>(lane);
    column_ranges mine{{0, 0}, {0, 0}};
    if (q < columns) mine = column_candidates(v, i, first[2] + q / across1, first[1] + q % across1, ranges);
    std::uint32_t end = mine.count[0] + mine.count[1];  // inclusive scan of the lanes' candidate counts
    for (unsigned step = 1; step < 32; step <<= 1) {
      std::uint32_t const below = __shfl_up_sync(0xffffffffu, end, step);
      if (lane >= step) end += below;
    }
    shared_ranges[lane] = mine;
    shared_ends[lane] = end;
    __syncwarp();
    std::uint32_t const total = __shfl_sync(0xffffffffu, end, 31);
    for (std::uint32_t t0 = 0; t0 < total; t0 += 32) {
      std::uint32_t const t = t0 + lane;
      bool near = false;  // the bounding boxes within reach
      std::uint32_t j = 0;
      if (t < total) {
        std::uint32_t owner = 0;  // the first lane whose end passes t
        for (std::uint32_t half = 16; half > 0; half >>= 1) {
          if (shared_ends[owner + half - 1] <= t) owner += half;
        }
        column_ranges const& r = shared_ranges[owner];
        std::uint32_t const k = t - (shared_ends[owner] - r.count[0] - r.count[1]);
        j = k < r.count[0] ? r.begin[0] + k : r.begin[1] + (k - r.count[0]);
        pair_box<Real> const bj = v.boxes[j];
        Real const ex = interval_gap(g, 0, bi.lo[0], bi.hi[0], bj.lo[0], bj.hi[0]);
        Real const ey = interval_gap(g, 1, bi.lo[1], bi.hi[1], bj.lo[1], bj.hi[1]);
        Real const ez = interval_gap(g, 2, bi.lo[2], bi.hi[2], bj.lo[2], bj.hi[2]);
        near = ex * ex + ey * ey + ez * ez < limit;
      }
      unsigned pending = __ballot_sync(0xffffffffu, near);
      while (pending != 0) {  // two candidates at a time, in order
        std::uint32_t const j0 = __shfl_sync(0xffffffffu, j, __ffs(pending) - 1);
        pending &= pending - 1;
        bool const two = pending != 0;
        std::uint32_t const j1 = __shfl_sync(0xffffffffu, j, two ? __ffs(pending) - 1 : 0);
        if (two) pending &= pending - 1;
        point4<Real> b0[2], b1[2];
        load_pair_points(v, j0, lane, b0);
        load_pair_points(v, two ? j1 : j0, lane, b1);
        std::uint32_t tested0 = 0, tested1 = 0;
        std::uint32_t within0 = 0, within1 = 0;
        if (wrap) {
          within0 = exact_pairs_warp<true>(g, i, j0, a, b0, lane, tested0);
          if (two) within1 = exact_pairs_warp<true>(g, i, j1, a, b1, lane, tested1);
        } else {
          within0 = exact_pairs_warp<false>(g, i, j0, a, b0, lane, tested0);
          if (two) within1 = exact_pairs_warp<false>(g, i, j1, a, b1, lane, tested1);
        }
        keep(j0, within0, tested0);
        keep(j1, within1, tested1);
      }
    }
    __syncwarp();  // the shared ranges are read before the next chunk writes them
  }
  return kept;
}

// totals: [0] entries (64-bit), [1] widest row, [2] pairs within reach, [3] pairs tested. A row's
// first `room` entries go to scratch[c * room ...]: the filling pass copies them instead of searching
// again (a row longer than that is searched again there).
template <class Real> __global__ void __launch_bounds__(threads, search_blocks_per_sm)
    count_kernel_warp(pair_build_view<Real> v, std::size_t clusters, std::uint32_t* counts, unsigned long long* totals,
                      std::uint32_t* scratch, std::uint32_t room) {
  __shared__ column_ranges ranges[warps_per_block][32];
  __shared__ std::uint32_t ends[warps_per_block][32];
  std::size_t const c = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (c >= clusters) return;  // whole warps
  std::uint32_t const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  pair_search_counts pairs;
  std::uint32_t* row = scratch + c * room;
  std::uint32_t const k = search_row_warp<true>(v, static_cast<std::uint32_t>(c), lane, pairs, ranges[warp], ends[warp],
                                                [&](std::uint32_t e, std::uint32_t j) {
                                                  if (e < room) row[e] = j;
                                                });
  if (lane != 0) return;  // lane 0 holds the row's pair counts
  unsigned long long const within = pairs.within, tested = pairs.tested;
  counts[c] = k;
  atomicAdd(totals + 0, static_cast<unsigned long long>(k));
  atomicMax(totals + 1, static_cast<unsigned long long>(k));
  atomicAdd(totals + 2, within);
  atomicAdd(totals + 3, tested);
}

template <class Real> __global__ void __launch_bounds__(threads, search_blocks_per_sm)
    fill_kernel_warp(pair_build_view<Real> v, std::size_t clusters, std::uint32_t const* counts,
                     std::uint32_t const* offsets, std::uint32_t const* scratch, std::uint32_t room,
                     std::uint32_t* entries) {
  __shared__ column_ranges ranges[warps_per_block][32];
  __shared__ std::uint32_t ends[warps_per_block][32];
  std::size_t const c = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (c >= clusters) return;  // whole warps
  std::uint32_t const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  std::uint32_t* row = entries + offsets[c];
  // A refill's offsets stop at the entries' memory (clamp_offsets): a row past it keeps what fits.
  std::uint32_t const count = min(counts[c], offsets[c + 1] - offsets[c]);
  if (counts[c] <= room) {
    for (std::uint32_t e = lane; e < count; e += 32) row[e] = scratch[c * room + e];
    return;
  }
  pair_search_counts unused;
  search_row_warp<false>(v, static_cast<std::uint32_t>(c), lane, unused, ranges[warp], ends[warp],
                         [&](std::uint32_t e, std::uint32_t j) {
                           if (e < count) row[e] = j;
                         });
}

// Entries per row the counting pass keeps: the last build's widest row and a quarter (rows grow as
// particles move), at least 32; a first build 64 (half) or 128 (full), the LJ liquid's widest rows
// with room.
std::uint32_t scratch_room(list_memory const& m, bool half) {
  std::size_t const last = m.clusters > 0 ? m.widest / pair_cluster : 0;
  std::size_t const room = last > 0 ? last + last / 4 : (half ? 64 : 128);
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(room, 32, 512));
}

// A refill's totals (count_kernel_warp's) into the status words check() reads: the widest row in
// particles (the most since the build), the pairs within reach and the pairs tested (this refill's).
// (Word 6, the most entries since the build, clamp_offsets writes.)
__global__ void refill_status_kernel(unsigned long long const* totals, unsigned long long* words) {
  unsigned long long const widest = totals[1] * pair_cluster;
  words[1] = widest > words[1] ? widest : words[1];
  words[2] = totals[2];
  words[11] = totals[3];
}

}  // namespace

template <class Real>
void cuda_list_backend::column_clusters(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns, void* stream) {
  cudaStream_t const s = as_stream(stream);
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  column_counts_kernel<<<blocks(columns), threads, 0, s>>>(as<std::uint32_t const>(m.cell_start),
                                                           as<std::uint32_t const>(m.cell_end),
                                                           static_cast<std::uint32_t>(g.cells[0]), columns, counts);
  COALESCE_CUDA_TRY(cudaGetLastError());
  scan_counts(m, counts, columns, as<std::uint32_t>(m.column_clusters), s);
}

template <class Real>
void cuda_list_backend::slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  slots_kernel<Real><<<blocks(clusters * pair_cluster), threads, 0, s>>>(v, clusters * pair_cluster);
  COALESCE_CUDA_TRY(cudaGetLastError());
  boxes_kernel<Real><<<blocks(clusters), threads, 0, s>>>(v, clusters);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

template <class Real> pair_row_totals cuda_list_backend::count_rows(list_memory& m, pair_build_view<Real> const& v,
                                                                    std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  ensure_bytes(m, m.candidate_offsets, 4 * sizeof(unsigned long long));  // the totals (scratch)
  auto* totals = as<unsigned long long>(m.candidate_offsets);
  COALESCE_CUDA_TRY(cudaMemsetAsync(totals, 0, 4 * sizeof(unsigned long long), s));
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  std::uint32_t const room = scratch_room(m, v.grid.half);
  ensure_bytes(m, m.candidate_ids, clusters * room * sizeof(std::uint32_t));
  m.pair_room = room;  // the room fill_rows reads the scratch at
  count_kernel_warp<Real>
      <<<blocks(clusters * 32), threads, 0, s>>>(v, clusters, counts, totals, as<std::uint32_t>(m.candidate_ids), room);
  COALESCE_CUDA_TRY(cudaGetLastError());
  scan_counts(m, counts, clusters, as<std::uint32_t>(m.offsets), s);
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
void cuda_list_backend::fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  fill_kernel_warp<Real><<<blocks(clusters * 32), threads, 0, s>>>(
      v, clusters, as<std::uint32_t const>(m.cluster_counts), as<std::uint32_t const>(m.offsets),
      as<std::uint32_t const>(m.candidate_ids), static_cast<std::uint32_t>(m.pair_room), as<std::uint32_t>(m.indices));
  COALESCE_CUDA_TRY(cudaGetLastError());
  COALESCE_CUDA_TRY(cudaStreamSynchronize(s));
}

template <class Real> void cuda_list_backend::refill_rows(list_memory& m, pair_build_view<Real> const& v,
                                                          std::size_t clusters, void* stream) {
  cudaStream_t const s = as_stream(stream);
  auto* totals = as<unsigned long long>(m.candidate_offsets);  // the build left room for the four totals
  auto* words = as<unsigned long long>(m.words);
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto* offsets = as<std::uint32_t>(m.offsets);
  auto const room = static_cast<std::uint32_t>(m.pair_room);  // the scratch the build allocated
  COALESCE_CUDA_TRY(cudaMemsetAsync(totals, 0, 4 * sizeof(unsigned long long), s));
  count_kernel_warp<Real>
      <<<blocks(clusters * 32), threads, 0, s>>>(v, clusters, counts, totals, as<std::uint32_t>(m.candidate_ids), room);
  COALESCE_CUDA_TRY(cudaGetLastError());
  scan_counts(m, counts, clusters, offsets, s);
  clamp_offsets(offsets, clusters, m.indices.size() / sizeof(std::uint32_t), totals, words + 6, s);
  refill_status_kernel<<<1, 1, 0, s>>>(totals, words);
  COALESCE_CUDA_TRY(cudaGetLastError());
  fill_kernel_warp<Real><<<blocks(clusters * 32), threads, 0, s>>>(
      v, clusters, counts, offsets, as<std::uint32_t const>(m.candidate_ids), room, as<std::uint32_t>(m.indices));
  COALESCE_CUDA_TRY(cudaGetLastError());
}

#define COALESCE_PAIR_LIST_STEPS(Real)                                                                                \
  template void cuda_list_backend::column_clusters<Real>(list_memory&, cell_grid<Real> const&, std::uint32_t, void*); \
  template void cuda_list_backend::slots_and_boxes<Real>(pair_build_view<Real> const&, std::size_t, void*);           \
  template pair_row_totals cuda_list_backend::count_rows<Real>(list_memory&, pair_build_view<Real> const&,            \
                                                               std::size_t, void*);                                   \
  template void cuda_list_backend::fill_rows<Real>(list_memory&, pair_build_view<Real> const&, std::size_t, void*);   \
  template void cuda_list_backend::refill_rows<Real>(list_memory&, pair_build_view<Real> const&, std::size_t, void*);
COALESCE_PAIR_LIST_STEPS(float)
COALESCE_PAIR_LIST_STEPS(double)
#undef COALESCE_PAIR_LIST_STEPS

}  // namespace coalesce::detail
