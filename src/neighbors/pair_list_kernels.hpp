// Internal to libcoalesce: the steps of the cluster-pair format's build (cluster_pairs.hpp), one
// body each for the host loops (pair_list_build_host.cpp) and the CUDA kernels (pair_list_build_cuda.cu),
// so both memories get the same list.
//
// The build bins the particles with the padded build's bin() on a grid of its own, in its own axes:
// the axes are permuted so that the last used axis (the one columns are sorted along) is axis 0 of
// the cell grid, whose index runs fastest; a cell is then one slice of one column, and the cell
// order is column by column, along the column within each. Every step below works in those permuted
// axes (distances do not depend on the axes' order).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <coalesce/core/config.hpp>
#include <coalesce/neighbors/cluster_pairs.hpp>
#include <coalesce/neighbors/cluster_tile.hpp>

#include "list_kernels.hpp"

namespace coalesce::detail {

inline constexpr std::uint32_t pair_cluster = cluster_pairs::cluster_size;

template <class Real> struct pair_box {
  Real lo[3];
  Real hi[3];
};

// What the steps read: the grid (permuted axes) and the build's arrays.
template <class Real> struct pair_build_view {
  cell_grid<Real> grid;             // cells[0]: slices along a column; cells[1] x cells[2]: columns
  std::uint32_t const* cell_start;  // bin(): each cell's particles in the cell order
  std::uint32_t const* cell_end;
  std::uint32_t const* sorted_ids;       // particle at each place of the cell order
  point4<Real> const* cell_points;       // its wrapped position (permuted axes)
  std::uint32_t const* column_clusters;  // column k: its clusters [column_clusters[k], column_clusters[k + 1])
  std::uint32_t columns;
  std::uint32_t* slots;    // slot: particle or empty_slot
  std::uint32_t* slot_of;  // particle: slot
  point4<Real>* points;    // slot: position (w: 1 for a particle, 0 for an empty slot)
  pair_box<Real>* boxes;   // cluster: bounding box
};

COALESCE_HOST_DEVICE inline std::uint32_t column_particles(std::uint32_t const* cell_start,
                                                           std::uint32_t const* cell_end, std::uint32_t slices,
                                                           std::uint32_t column, std::uint32_t& first) {
  first = cell_start[static_cast<std::size_t>(column) * slices];
  return cell_end[static_cast<std::size_t>(column) * slices + slices - 1] - first;
}

// The column holding cluster c: the last column whose first cluster is at most c (empty columns
// hold none, so that column is the one whose range contains c).
COALESCE_HOST_DEVICE inline std::uint32_t column_of_cluster(std::uint32_t const* column_clusters, std::uint32_t columns,
                                                            std::uint32_t c) {
  std::uint32_t lo = 0, hi = columns;
  while (hi - lo > 1) {
    std::uint32_t const mid = lo + (hi - lo) / 2;
    if (column_clusters[mid] <= c) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Slot s: its particle (the column's particles in cell order fill its clusters' slots), its
// position, and the particle's slot.
template <class Real> COALESCE_HOST_DEVICE inline void fill_slot(pair_build_view<Real> const& v, std::size_t s) {
  auto const c = static_cast<std::uint32_t>(s / pair_cluster);
  std::uint32_t const column = column_of_cluster(v.column_clusters, v.columns, c);
  std::uint32_t first = 0;
  std::uint32_t const count =
      column_particles(v.cell_start, v.cell_end, static_cast<std::uint32_t>(v.grid.cells[0]), column, first);
  std::size_t const k = s - static_cast<std::size_t>(v.column_clusters[column]) * pair_cluster;
  if (k < count) {
    std::uint32_t const particle = v.sorted_ids[first + k];
    point4<Real> q = v.cell_points[first + k];
    q.w = Real(1);
    v.slots[s] = particle;
    v.slot_of[particle] = static_cast<std::uint32_t>(s);
    v.points[s] = q;
  } else {
    v.slots[s] = cluster_pairs::empty_slot;
    v.points[s] = {Real(0), Real(0), Real(0), Real(0)};
  }
}

// Whether cluster c holds no particle: one of the clusters past the columns' own (the build keeps
// room for the most clusters the columns can make). A cluster that holds particles holds one in its
// first slot (a column's particles fill its clusters' slots in order).
template <class Real> COALESCE_HOST_DEVICE inline bool empty_cluster(pair_build_view<Real> const& v, std::size_t c) {
  return v.points[c * pair_cluster].w == Real(0);
}

// Cluster c's bounding box (an empty cluster's: the origin; no row lists it, and its own row is
// empty).
template <class Real> COALESCE_HOST_DEVICE inline void fill_box(pair_build_view<Real> const& v, std::size_t c) {
  point4<Real> const* p = v.points + c * pair_cluster;
  pair_box<Real> b{{p[0].x, p[0].y, p[0].z}, {p[0].x, p[0].y, p[0].z}};
  for (std::uint32_t k = 1; k < pair_cluster; ++k) {
    if (p[k].w == Real(0)) continue;
    Real const x[3] = {p[k].x, p[k].y, p[k].z};
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = x[a] < b.lo[a] ? x[a] : b.lo[a];
      b.hi[a] = x[a] > b.hi[a] ? x[a] : b.hi[a];
    }
  }
  v.boxes[c] = b;
}

// The gap between two intervals along axis a, under the nearest periodic image.
template <class Real>
COALESCE_HOST_DEVICE inline Real interval_gap(cell_grid<Real> const& g, int a, Real lo0, Real hi0, Real lo1, Real hi1) {
  auto const gap = [](Real l0, Real h0, Real l1, Real h1) { return l1 > h0 ? l1 - h0 : (l0 > h1 ? l0 - h1 : Real(0)); };
  Real best = gap(lo0, hi0, lo1, hi1);
  if (g.periodic[a]) {
    for (int image = -1; image <= 1; image += 2) {
      Real const shift = static_cast<Real>(image) * g.length[a];
      Real const d = gap(lo0, hi0, lo1 + shift, hi1 + shift);
      best = d < best ? d : best;
    }
  }
  return best;
}

// The raw cell range along axis a within reach of [lo, hi]; the whole axis once when the range
// covers it, clamped along an open axis. Returns false when the range is the whole axis.
template <class Real> COALESCE_HOST_DEVICE inline bool reach_range(cell_grid<Real> const& g, int a, Real lo, Real hi,
                                                                   Real reach, int& first, int& last) {
  first = static_cast<int>(floor((lo - reach - g.lo[a]) * g.cells_per_length[a]));
  last = static_cast<int>(floor((hi + reach - g.lo[a]) * g.cells_per_length[a]));
  if (!g.periodic[a]) {
    first = first < 0 ? 0 : (first >= g.cells[a] ? g.cells[a] - 1 : first);
    last = last < 0 ? 0 : (last >= g.cells[a] ? g.cells[a] - 1 : last);
    return true;
  }
  if (last - first + 1 >= g.cells[a]) {
    first = 0;
    last = g.cells[a] - 1;
    return false;
  }
  return true;
}

struct pair_search_counts {
  std::uint64_t within = 0;  // pairs of particles within reach
  std::uint64_t tested = 0;  // pairs of particles the kept clusters hold
};

// Particles a and b within reach under the nearest image: the exact test of both searches (the
// host's exact_pairs, the warp's exact_pairs_warp), so that both keep the same clusters.
template <class Real>
COALESCE_HOST_DEVICE inline bool pair_in_reach(cell_grid<Real> const& g, point4<Real> const& a, point4<Real> const& b) {
  Real const ex = a.x - nearest_image(a.x, b.x, g.periodic[0], g.length[0]);
  Real const ey = a.y - nearest_image(a.y, b.y, g.periodic[1], g.length[1]);
  Real const ez = a.z - nearest_image(a.z, b.z, g.periodic[2], g.length[2]);
  return distance2(ex, ey, ez) < g.reach2;
}

// Clusters i and j (i's own: each pair once on a half list): whether some pair lies within reach,
// and (Count) the counts; without them the test stops at the first pair within reach.
template <bool Count, class Real> COALESCE_HOST_DEVICE inline bool exact_pairs(pair_build_view<Real> const& v,
                                                                               std::uint32_t i, std::uint32_t j,
                                                                               pair_search_counts& counts) {
  point4<Real> const* a = v.points + static_cast<std::size_t>(i) * pair_cluster;
  point4<Real> const* b = v.points + static_cast<std::size_t>(j) * pair_cluster;
  cell_grid<Real> const& g = v.grid;
  std::uint32_t within = 0, tested = 0;
  for (std::uint32_t p = 0; p < pair_cluster; ++p) {
    if (a[p].w == Real(0)) continue;
    for (std::uint32_t q = 0; q < pair_cluster; ++q) {
      if (b[q].w == Real(0) || (i == j && (g.half ? q <= p : q == p))) continue;
      bool const in_reach = pair_in_reach(g, a[p], b[q]);
      if constexpr (!Count) {
        if (in_reach) return true;
      }
      within += in_reach ? 1u : 0u;
      ++tested;
    }
  }
  if (within == 0) return false;
  counts.within += within;
  counts.tested += tested;
  return true;
}

// emit(j) for every cluster j kept in cluster i's row: j's bounding box within reach of i's and
// some pair of particles within reach (a half list: j >= i). Returns the count; Count: the pairs
// within reach and tested into `counts` too (the counting pass; the filling pass skips them).
// The cells within reach of a cluster's bounding box: the columns (axes 1 and 2, raw indices that
// wrap along periodic axes) and the slices along a column, as at most two ranges of [0, slices),
// ascending (an empty second range: {1, 0}).
struct row_reach {
  int first[3], last[3];
  int ranges[2][2];
};
template <class Real>
COALESCE_HOST_DEVICE inline row_reach reach_of(cell_grid<Real> const& g, pair_box<Real> const& bi) {
  Real const reach = sqrt(g.reach2);
  row_reach r;
  bool const part_of_axis0 = reach_range(g, 0, bi.lo[0], bi.hi[0], reach, r.first[0], r.last[0]);
  reach_range(g, 1, bi.lo[1], bi.hi[1], reach, r.first[1], r.last[1]);
  reach_range(g, 2, bi.lo[2], bi.hi[2], reach, r.first[2], r.last[2]);
  r.ranges[0][0] = r.first[0], r.ranges[0][1] = r.last[0];
  r.ranges[1][0] = 1, r.ranges[1][1] = 0;
  if (part_of_axis0 && g.periodic[0]) {
    int const s = g.cells[0];
    if (r.first[0] < 0) {
      r.ranges[0][0] = 0, r.ranges[0][1] = r.last[0];
      r.ranges[1][0] = r.first[0] + s, r.ranges[1][1] = s - 1;
    } else if (r.last[0] >= s) {
      r.ranges[0][0] = 0, r.ranges[0][1] = r.last[0] - s;
      r.ranges[1][0] = r.first[0], r.ranges[1][1] = s - 1;
    }
  }
  return r;
}

template <bool Count, class Real, class Emit>
COALESCE_HOST_DEVICE inline std::uint32_t search_row(pair_build_view<Real> const& v, std::uint32_t i,
                                                     pair_search_counts& counts, Emit&& emit) {
  if (empty_cluster(v, i)) return 0;
  cell_grid<Real> const& g = v.grid;
  pair_box<Real> const bi = v.boxes[i];
  Real const limit = g.reach2 * Real(1.00001);  // bounding boxes: rounding never drops a pair
  auto const slices = static_cast<std::uint32_t>(g.cells[0]);
  row_reach const reach = reach_of(g, bi);
  int const(&first)[3] = reach.first;
  int const(&last)[3] = reach.last;
  int const(&ranges)[2][2] = reach.ranges;
  std::uint32_t kept = 0;
  for (int r2 = first[2]; r2 <= last[2]; ++r2) {
    int const c2 = ((r2 % g.cells[2]) + g.cells[2]) % g.cells[2];
    for (int r1 = first[1]; r1 <= last[1]; ++r1) {
      int const c1 = ((r1 % g.cells[1]) + g.cells[1]) % g.cells[1];
      auto const column = static_cast<std::uint32_t>(c2 * g.cells[1] + c1);
      std::uint32_t column_first = 0;
      if (column_particles(v.cell_start, v.cell_end, slices, column, column_first) == 0) continue;
      std::size_t const base = static_cast<std::size_t>(column) * slices;
      std::uint32_t const cluster0 = v.column_clusters[column];
      std::uint32_t done = cluster0;  // clusters below it visited (two ranges may share one)
      for (auto const& range : ranges) {
        if (range[0] > range[1]) continue;
        std::uint32_t const p0 = v.cell_start[base + static_cast<std::size_t>(range[0])];
        std::uint32_t const p1 = v.cell_end[base + static_cast<std::size_t>(range[1])];
        if (p0 >= p1) continue;
        std::uint32_t j = cluster0 + (p0 - column_first) / pair_cluster;
        std::uint32_t const j_end = cluster0 + (p1 - column_first + pair_cluster - 1) / pair_cluster;
        j = j < done ? done : j;
        for (; j < j_end; ++j) {
          if (g.half && j < i) continue;
          pair_box<Real> const bj = v.boxes[j];
          Real const ex = interval_gap(g, 0, bi.lo[0], bi.hi[0], bj.lo[0], bj.hi[0]);
          Real const ey = interval_gap(g, 1, bi.lo[1], bi.hi[1], bj.lo[1], bj.hi[1]);
          Real const ez = interval_gap(g, 2, bi.lo[2], bi.hi[2], bj.lo[2], bj.hi[2]);
          if (!(ex * ex + ey * ey + ez * ez < limit)) continue;
          if (!exact_pairs<Count>(v, i, j, counts)) continue;
          emit(kept++, j);
        }
        done = j_end > done ? j_end : done;
      }
    }
  }
  return kept;
}

}  // namespace coalesce::detail
