// coalesce/neighbors/cluster_tile.hpp - the cluster format's traversal on the GPU, a warp at a
// time: the lanes of a warp that share one cluster load each chunk of 32 candidates once, together
// (one coalesced 16-byte load per lane), into a shared-memory tile, and every lane tests its own
// particle against the tile (one broadcast read per candidate).
//
// Why: one thread per particle re-read each candidate from memory and redid its periodic image
// per pair (about 30 instructions per test, 514 tests per particle in the LJ benchmark). The tile
// moves the load and the image choice to the one lane that loads the candidate, so a test is a
// broadcast shared-memory read, three subtractions, three multiply-adds and two compares. The
// cluster's runs (about 18 candidates each) are read as one stream cut into full chunks, so the
// 32 tests of a chunk run unrolled, with no per-run remainder.
//
// Exactly the pairs of the per-thread traversal: a candidate's image is chosen once against a
// reference particle of the cluster only where, along every periodic axis, the reach plus the
// cluster's extent around that particle stays below half the box length (then no pair within
// reach can pick another image; a pair beyond the reach picks one at least half a box away and
// stays out). Otherwise each test picks the image itself, as the per-thread code does. The
// subtraction and the distance are the same operations in the same order, so the mask is the same.
//
// Bank conflicts: a chunk is written as 32 consecutive 16-byte points (four wavefronts, the least
// a warp's 512 bytes take) and read one point at a time by every lane (a broadcast, one wavefront):
// tests/gpu/cluster_tile_test.cu checks both with analysis::bank_conflicts at the offsets below.
// Double positions are 32-byte points: their stores are two-way, their reads broadcasts. The
// bodies read the chunks' indices (4-byte words, one per candidate): lanes that read different
// candidates of one chunk hit different banks.
//
// Where it applies: all 32 lanes of the warp call it together (converged), for particles of one
// cluster (for_each_index gives each warp 32 consecutive particles: one cluster), and the warp is
// one of the first 13 of its block (float positions; 8 for double: the tile is 10 KiB of static
// shared memory per block, what for_each_index's 256-thread blocks use). Otherwise the per-thread
// traversal runs, with the same result.
//
// Why all 32 lanes: the tile is a collective of the warp's lanes over one piece of shared memory
// per warp. __activemask() names the lanes that happen to run together now, not the lanes that
// will call (CUDA's guide: it does not guarantee convergence); under independent thread
// scheduling two groups of one warp's lanes (the two sides of a branch that both traverse, or
// lanes that diverged earlier) could each take the tile and overwrite each other's candidates.
// A full mask rules that out: no other lane of the warp is left to form a second group. So a
// caller needs no convergence of its own: lanes that skip the call, a partial last warp and
// diverged callers get the per-thread traversal (tests/gpu/cluster_tile_test.cu).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "list_ops.hpp"

namespace coalesce::detail {

// The image of q nearest to x along one axis (q itself along an open axis): the build's choice for
// every pair within reach (the reach is at most half a periodic length, so only one image can be
// within it). The separation is x - image, as the build computes it.
// Length: double (a list's view) or Real (a loop that converted it once: no conversion per pair).
template <class Real, class Length>
COALESCE_HOST_DEVICE COALESCE_INLINE Real nearest_image(Real x, Real q, bool periodic, Length length) {
  Real shift = Real(0);
  if (periodic) {
    Real const l = static_cast<Real>(length);
    Real const d = x - q;
    shift = d > Real(0.5) * l ? l : (d < Real(-0.5) * l ? -l : Real(0));
  }
  return q + shift;
}

// Static shared memory per block: 8 warps of double tiles (for_each_index's blocks: 256 threads),
// 13 of float ones. Every kernel that traverses a cluster list gets it, so it is kept to what the
// library's own launches use (it was 24 KiB for 1024-thread blocks, a third of what a user kernel
// with shared memory of its own could keep).
inline constexpr unsigned cluster_tile_bytes = 10240;
inline constexpr unsigned cluster_tile_chunk = 32;  // candidates per chunk, one per lane

// A warp's part of the tile: the current chunk's 32 points, then the indices of the last two
// chunks (their bodies run together: see the drain in visit_cluster_tiled).
template <class Real> COALESCE_HOST_DEVICE constexpr std::size_t cluster_tile_warp_bytes() {
  return cluster_tile_chunk * sizeof(point4<Real>) + 2 * cluster_tile_chunk * sizeof(std::uint32_t);
}

// Where warp w's tile keeps candidate k's point, and index slot b (0..63), in bytes from the
// tile's start: the kernel's addresses, and the ones the bank-conflict check reads.
template <class Real> COALESCE_HOST_DEVICE constexpr std::size_t cluster_tile_offset(unsigned warp, unsigned k) {
  return warp * cluster_tile_warp_bytes<Real>() + k * sizeof(point4<Real>);
}
template <class Real> COALESCE_HOST_DEVICE constexpr std::size_t cluster_tile_index_offset(unsigned warp, unsigned b) {
  return cluster_tile_offset<Real>(warp, cluster_tile_chunk) + b * sizeof(std::uint32_t);
}

// Warps of a block that have a tile: 13 for float positions, 8 for double.
template <class Real>
inline constexpr unsigned cluster_tile_warps = static_cast<unsigned>(cluster_tile_bytes /
                                                                     cluster_tile_warp_bytes<Real>());

#if defined(__CUDA_ARCH__)
// One static tile per block, whatever the positions' precision (one array, not one per type).
__device__ __forceinline__ unsigned char* cluster_tile_memory() {
  __shared__ __align__(32) unsigned char memory[cluster_tile_bytes];
  return memory;
}

// Largest float of the active lanes (non-negative values: their bits order as unsigned integers).
__device__ __forceinline__ float warp_max_nonnegative(unsigned active, float v) {
#if __CUDA_ARCH__ >= 800
  return __uint_as_float(__reduce_max_sync(active, __float_as_uint(v)));
#else
  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((active >> lane) & 1u) v = fmaxf(v, __shfl_sync(active, v, static_cast<int>(lane)));
  }
  return v;
#endif
}

// A candidate as the tile keeps it: its position (its image chosen once where that is exact)
// and, in the unused fourth word, its index.
__device__ __forceinline__ float tile_word(std::uint32_t j, float) { return __uint_as_float(j); }
__device__ __forceinline__ double tile_word(std::uint32_t j, double) { return static_cast<double>(j); }
__device__ __forceinline__ std::uint32_t tile_index(float w) { return __float_as_uint(w); }
__device__ __forceinline__ std::uint32_t tile_index(double w) { return static_cast<std::uint32_t>(w); }

template <class Real, class List>
__device__ __forceinline__ point4<Real> tile_candidate(point4<Real> const* points, std::uint32_t j, bool image_once,
                                                       Real const (&reference)[3], List const& list) {
  point4<Real> q = points[j];
  if (image_once) {
    q.x = nearest_image(reference[0], q.x, list.periodic[0], list.length[0]);
    q.y = nearest_image(reference[1], q.y, list.periodic[1], list.length[1]);
    q.z = nearest_image(reference[2], q.z, list.periodic[2], list.length[2]);
  }
  q.w = tile_word(j, Real{});
  return q;
}

// The slots past the cluster's last candidate: a position so far away that its distance squared
// is infinite (finite itself, so no fast-math setting can turn the test around).
template <class Real> __device__ __forceinline__ point4<Real> tile_nothing() {
  Real const far = static_cast<Real>(1e30);
  return {far, far, far, tile_word(0xffffffffu, Real{})};
}

// The 32 tests of one lane against a chunk: a bit per candidate within reach (j != i; j > i in a
// half list). The same operations as the per-thread traversal's (clusters.hpp).
template <bool ImageOnce, bool Half, class Real, class List>
__device__ __forceinline__ std::uint32_t test_chunk(point4<Real> const* tile, point4<Real> const& xi, std::uint32_t i,
                                                    Real r2, List const& list) {
  std::uint32_t mask = 0;
#pragma unroll
  for (std::uint32_t k = 0; k < cluster_tile_chunk; ++k) {
    point4<Real> const q = tile[k];
    std::uint32_t const j = tile_index(q.w);
    Real ex, ey, ez;
    if constexpr (ImageOnce) {
      ex = xi.x - q.x;
      ey = xi.y - q.y;
      ez = xi.z - q.z;
    } else {
      ex = xi.x - nearest_image(xi.x, q.x, list.periodic[0], list.length[0]);
      ey = xi.y - nearest_image(xi.y, q.y, list.periodic[1], list.length[1]);
      ez = xi.z - nearest_image(xi.z, q.z, list.periodic[2], list.length[2]);
    }
    bool const other = Half ? j > i : j != i;
    mask |= static_cast<std::uint32_t>(distance2_unfused(ex, ey, ez) < r2 && other) << k;
  }
  return mask;
}

// Visits i's neighbours through the warp's tile; false (nothing visited) where the tile does not
// apply. `list` is a verlet_list_ref<clusters>; the caller checks i < list.size().
template <class List, class Real, class Body>
__device__ __forceinline__ bool visit_cluster_tiled(List const& list, point4<Real> const* points, std::uint32_t i,
                                                    Body& body) {
#if __CUDA_ARCH__ < 700
  (void)list, (void)points, (void)i, (void)body;
  return false;  // __match_any_sync and independent thread scheduling: Volta and later
#else
  constexpr std::uint32_t chunk = cluster_tile_chunk;
  unsigned const thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned const warp = thread / 32;
  if (warp >= cluster_tile_warps<Real>) return false;  // the same for the whole warp
  unsigned const active = __activemask();
  if (active != 0xffffffffu) return false;  // not the whole warp: see "Why all 32 lanes" above
  std::uint32_t const c = i / chunk;        // clusters::cluster_size
  if (__match_any_sync(active, c) != active) return false;
  auto* const tile = reinterpret_cast<point4<Real>*>(cluster_tile_memory() + cluster_tile_offset<Real>(warp, 0));
  auto* const indices =
      reinterpret_cast<std::uint32_t*>(cluster_tile_memory() + cluster_tile_index_offset<Real>(warp, 0));
  unsigned const lane = thread % 32;
  unsigned const leader = static_cast<unsigned>(__ffs(static_cast<int>(active)) - 1);
  unsigned const rank = static_cast<unsigned>(__popc(active & ((1u << lane) - 1u)));
  unsigned const helpers = static_cast<unsigned>(__popc(active));

  point4<Real> const xi = points[i];
  Real const mine[3] = {xi.x, xi.y, xi.z};
  Real reference[3];
  bool image_once = true;  // candidates' images chosen once, against the leader's particle
  double const reach = sqrt(list.reach2);
  for (int a = 0; a < 3; ++a) {
    reference[a] = __shfl_sync(active, mine[a], static_cast<int>(leader));
    if (list.periodic[a]) {
      float const extent = warp_max_nonnegative(active, static_cast<float>(fabs(mine[a] - reference[a])));
      // float extent: rounded by < 1e-7 relative, far inside the 0.1 % margin below
      image_once = image_once && reach + static_cast<double>(extent) < 0.499 * list.length[a];
    }
  }
  Real const r2 = static_cast<Real>(list.reach2);
  // The cluster's runs as one stream of candidates, cut into full chunks of 32 (runs average ~18
  // candidates: a chunk per run would leave most lanes of the tile empty). The cursor (run r,
  // offset o) is the same in every lane. A half list keeps only j > i: candidates below the
  // cluster are skipped before the first chunk (runs are ascending and disjoint).
  std::uint32_t r = list.run_offsets[c];
  std::uint32_t const last_run = list.run_offsets[c + 1];
  auto run_first = [&](std::uint32_t k) -> std::size_t { return list.runs[2 * static_cast<std::size_t>(k)]; };
  auto run_end = [&](std::uint32_t k) -> std::size_t { return list.runs[2 * static_cast<std::size_t>(k) + 1]; };
  std::size_t o = 0;
  if (list.half) {
    std::size_t const cluster_begin = static_cast<std::size_t>(c) * chunk;
    while (r < last_run && run_end(r) <= cluster_begin) ++r;
    if (r < last_run && run_first(r) < cluster_begin) o = cluster_begin - run_first(r);
  }
  // The bodies of two chunks run in one loop: a lane's hits over 64 candidates vary less from lane
  // to lane than over 32, and the warp runs as many body calls as its busiest lane.
  std::uint64_t pending = 0;
  unsigned second = 0;  // 0: this chunk's indices go to slots 0..31; 1: to 32..63
  while (r < last_run) {
    for (std::uint32_t k = rank; k < chunk; k += helpers) {
      // Candidate k of the chunk: walk from the cursor (a run or two at most, typically).
      std::uint32_t rr = r;
      std::size_t at = o + k;
      while (rr < last_run && at >= run_end(rr) - run_first(rr)) {
        at -= run_end(rr) - run_first(rr);
        ++rr;
      }
      auto const j = rr < last_run ? static_cast<std::uint32_t>(run_first(rr) + at) : 0xffffffffu;
      tile[k] = rr < last_run ? tile_candidate(points, j, image_once, reference, list) : tile_nothing<Real>();
      indices[second * chunk + k] = j;
    }
    __syncwarp(active);
    std::uint32_t mask = 0;
    if (image_once) {
      mask = list.half ? test_chunk<true, true>(tile, xi, i, r2, list) : test_chunk<true, false>(tile, xi, i, r2, list);
    } else {
      mask =
          list.half ? test_chunk<false, true>(tile, xi, i, r2, list) : test_chunk<false, false>(tile, xi, i, r2, list);
    }
    pending |= static_cast<std::uint64_t>(mask) << (32 * second);
    __syncwarp(active);  // every lane has tested the chunk before the next one overwrites the points
    o += chunk;          // the cursor moves on by a chunk, the same in every lane
    while (r < last_run && o >= run_end(r) - run_first(r)) {
      o -= run_end(r) - run_first(r);
      ++r;
    }
    if (second == 1 || r >= last_run) {  // the same in every lane
      while (pending != 0) {             // ascending bits: ascending j, as the per-thread traversal
        auto const b = static_cast<unsigned>(__ffsll(static_cast<long long>(pending)) - 1);
        pending &= pending - 1;
        body(indices[b]);
      }
      __syncwarp(active);  // every lane has read its indices before they are overwritten
      second = 0;
    } else {
      second = 1;
    }
  }
  return true;
#endif
}
#endif

}  // namespace coalesce::detail
