// Internal to libcoalesce: the per-cluster steps of the cluster format's build (clusters.hpp),
// one body for the host loops (cluster_build_host.cpp) and the CUDA kernels
// (cluster_build_cuda.cu), so both memories get the same runs.
//
// A cluster is 32 consecutive particles. Its candidates are the particles within reach of the
// cluster's bounding box (a superset of every member's neighbours), found through the cell grid
// the padded build uses; sorted by index they become runs [first, end), two runs merging when
// fewer than run_gap indices lie between them (a short gap costs a traversal a few distance
// tests, a run costs 8 bytes of list).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <coalesce/core/config.hpp>
#include <coalesce/neighbors/clusters.hpp>

#include "list_kernels.hpp"

namespace coalesce::detail {

inline constexpr std::uint32_t cluster_size = clusters::cluster_size;
inline constexpr std::uint32_t run_gap = 4;

template <class Real> struct cluster_box {
  Real lo[3];
  Real hi[3];
};

template <class Real>
COALESCE_HOST_DEVICE inline cluster_box<Real> box_of_cluster(point4<Real> const* own, std::size_t n, std::size_t c) {
  std::size_t const first = c * cluster_size;
  std::size_t const end = first + cluster_size < n ? first + cluster_size : n;
  cluster_box<Real> b{{own[first].x, own[first].y, own[first].z}, {own[first].x, own[first].y, own[first].z}};
  for (std::size_t i = first + 1; i < end; ++i) {
    Real const x[3] = {own[i].x, own[i].y, own[i].z};
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = x[a] < b.lo[a] ? x[a] : b.lo[a];
      b.hi[a] = x[a] > b.hi[a] ? x[a] : b.hi[a];
    }
  }
  return b;
}

// The cells (raw indices, possibly outside the grid along periodic axes: an image) that can hold
// a particle within reach of the box.
template <class Real> struct cell_span {
  int first[3];
  int last[3];
};
template <class Real>
COALESCE_HOST_DEVICE inline cell_span<Real> cells_near(cell_grid<Real> const& g, cluster_box<Real> const& b) {
  cell_span<Real> s{};
  Real const reach = sqrt(g.reach2);
  for (int a = 0; a < 3; ++a) {
    int lo = static_cast<int>(floor((b.lo[a] - reach - g.lo[a]) * g.cells_per_length[a]));
    int hi = static_cast<int>(floor((b.hi[a] + reach - g.lo[a]) * g.cells_per_length[a]));
    if (!g.periodic[a]) {
      lo = lo < 0 ? 0 : (lo >= g.cells[a] ? g.cells[a] - 1 : lo);
      hi = hi < 0 ? 0 : (hi >= g.cells[a] ? g.cells[a] - 1 : hi);
    } else if (hi - lo + 1 > g.cells[a]) {
      // The whole axis: each cell once, its image chosen per particle below.
      lo = 0;
      hi = g.cells[a] - 1;
    }
    s.first[a] = lo;
    s.last[a] = hi;
  }
  return s;
}
template <class Real> COALESCE_HOST_DEVICE inline std::uint64_t cells_in(cell_span<Real> const& s) {
  std::uint64_t count = 1;
  for (int a = 0; a < 3; ++a) count *= static_cast<std::uint64_t>(s.last[a] - s.first[a] + 1);
  return count;
}

// The gap between coordinate x (under its nearest image along a periodic axis) and [lo, hi].
template <class Real>
COALESCE_HOST_DEVICE inline Real gap_to(cell_grid<Real> const& g, int a, Real x, Real lo, Real hi) {
  Real best = x < lo ? lo - x : (x > hi ? x - hi : Real(0));
  if (g.periodic[a]) {
    for (int image = -1; image <= 1; image += 2) {
      Real const y = x + static_cast<Real>(image) * g.length[a];
      Real const d = y < lo ? lo - y : (y > hi ? y - hi : Real(0));
      best = d < best ? d : best;
    }
  }
  return best;
}

// emit(j) for every particle j within reach of the box (a little more: the test is widened by a
// relative 1e-5 so that no rounding drops a neighbour; the traversal's exact test decides).
template <class Real, class Emit>
COALESCE_HOST_DEVICE inline void visit_candidates(cell_grid<Real> const& g, cluster_box<Real> const& b,
                                                  std::uint32_t const* cell_start, std::uint32_t const* cell_end,
                                                  point4<Real> const* cell_points, std::uint32_t const* sorted_ids,
                                                  Emit&& emit) {
  cell_span<Real> const s = cells_near(g, b);
  Real const limit = g.reach2 * Real(1.00001);
  for (int rz = s.first[2]; rz <= s.last[2]; ++rz) {
    int const cz = ((rz % g.cells[2]) + g.cells[2]) % g.cells[2];
    for (int ry = s.first[1]; ry <= s.last[1]; ++ry) {
      int const cy = ((ry % g.cells[1]) + g.cells[1]) % g.cells[1];
      for (int rx = s.first[0]; rx <= s.last[0]; ++rx) {
        int const cx = ((rx % g.cells[0]) + g.cells[0]) % g.cells[0];
        std::uint32_t const cell = static_cast<std::uint32_t>((cz * g.cells[1] + cy) * g.cells[0] + cx);
        std::uint32_t const end = cell_end[cell];
        for (std::uint32_t k = cell_start[cell]; k < end; ++k) {
          point4<Real> const q = cell_points[k];
          Real const ex = gap_to(g, 0, q.x, b.lo[0], b.hi[0]);
          Real const ey = gap_to(g, 1, q.y, b.lo[1], b.hi[1]);
          Real const ez = gap_to(g, 2, q.z, b.lo[2], b.hi[2]);
          if (ex * ex + ey * ey + ez * ez < limit) emit(sorted_ids[k]);
        }
      }
    }
  }
}

// Runs of one cluster's sorted candidates (duplicates, from a cell reached under two images,
// fall inside a run): emit(first, end) for each; returns the count.
template <class Emit>
COALESCE_HOST_DEVICE inline std::uint32_t runs_of(std::uint32_t const* sorted, std::size_t count, Emit&& emit) {
  if (count == 0) return 0;
  std::uint32_t runs = 0;
  std::uint32_t first = sorted[0], end = sorted[0] + 1;
  for (std::size_t k = 1; k < count; ++k) {
    std::uint32_t const j = sorted[k];
    if (j <= end + run_gap) {
      end = j + 1 > end ? j + 1 : end;
    } else {
      emit(runs++, first, end);
      first = j;
      end = j + 1;
    }
  }
  emit(runs++, first, end);
  return runs;
}

}  // namespace coalesce::detail
