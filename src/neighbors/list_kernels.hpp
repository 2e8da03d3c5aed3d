// Internal to libcoalesce: the per-particle steps of a neighbour-list build, one body for the
// host loops (list_build_host.cpp) and the CUDA kernels (list_build_cuda.cu), so that a list
// built in host memory and one built on the GPU are the same list, entry for entry.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <coalesce/core/config.hpp>
#include <coalesce/neighbors/list_ops.hpp>

namespace coalesce::detail {

// The cell grid: cells at least `reach` wide along every axis, so the 27 cells around a
// particle's own hold every neighbour.
template <class Real> struct cell_grid {
  Real lo[3];
  Real length[3];
  Real cells_per_length[3];
  int cells[3];
  bool periodic[3];
  Real reach2;
  bool half;
};

// Position i wrapped into a periodic box (open axes as they are); false when a coordinate is not
// finite or lies outside an open axis. A bad particle is placed at the box's low corner in cell 0:
// a refill, which reports it only at check(), goes on with a position every later step can index
// (a coordinate left undefined could send a search's cell ranges past the grid).
template <class Real> COALESCE_HOST_DEVICE inline bool place_point(cell_grid<Real> const& g, position_columns const& p,
                                                                   unsigned dims, std::size_t i, point4<Real>& out,
                                                                   std::uint32_t& cell) {
  out = {g.lo[0], g.lo[1], g.lo[2], Real(0)};
  cell = 0;
  Real c[3] = {0, 0, 0};
  int index[3] = {0, 0, 0};
  for (unsigned a = 0; a < dims; ++a) {
    Real x = static_cast<Real>(coordinate_of(p, a, i));
    Real t = x - g.lo[a];
    if (!(t - t == Real(0))) return false;  // NaN or infinite
    if (g.periodic[a]) {
      if (t < Real(0) || t >= g.length[a]) {
        t -= floor(t / g.length[a]) * g.length[a];
        if (t >= g.length[a]) t = Real(0);  // rounding: the image of lo
      }
    } else if (t < Real(0) || t > g.length[a]) {
      return false;
    }
    c[a] = g.lo[a] + t;
    int k = static_cast<int>(t * g.cells_per_length[a]);
    index[a] = k < 0 ? 0 : k >= g.cells[a] ? g.cells[a] - 1 : k;
  }
  out = {c[0], c[1], c[2], Real(0)};
  cell = static_cast<std::uint32_t>((index[2] * g.cells[1] + index[1]) * g.cells[0] + index[0]);
  return true;
}

// cell_start[c] and cell_end[c] bound cell c's particles in the cell order for every cell, an empty
// one too (start == end, at the place its particles would be).
// Calls emit(j, k) for the k-th neighbour j of particle i (k = 0, 1, ...) in a fixed order: the
// 27 cells around i's own (z, then y, then x offsets, each -1, 0, +1; a periodic image where the
// offset crosses the box), inside a cell by ascending particle index. Returns the count. Along a
// periodic axis with fewer than three cells an offset reaches the same cell under another image;
// the reach is at most half the box, so at most one image of j is within it: no pair twice.
template <class Real, class Emit> COALESCE_HOST_DEVICE inline std::uint32_t visit_neighbors(
    cell_grid<Real> const& g, std::uint32_t i, point4<Real> const& xi, std::uint32_t const* cell_start,
    std::uint32_t const* cell_end, point4<Real> const* cell_points, std::uint32_t const* sorted_ids, Emit&& emit) {
  int own[3];
  for (int a = 0; a < 3; ++a) {
    int k = static_cast<int>(((a == 0 ? xi.x : a == 1 ? xi.y : xi.z) - g.lo[a]) * g.cells_per_length[a]);
    own[a] = k < 0 ? 0 : k >= g.cells[a] ? g.cells[a] - 1 : k;
  }
  std::uint32_t count = 0;
  // The neighbour cell along axis a at offset d from i's own, and the image's shift; false past
  // an open edge.
  auto const step = [&](int a, int d, int& cell, Real& shift) {
    cell = own[a] + d;
    shift = Real(0);
    if (cell >= 0 && cell < g.cells[a]) return true;
    if (!g.periodic[a]) return false;
    shift = cell < 0 ? -g.length[a] : g.length[a];
    cell = cell < 0 ? cell + g.cells[a] : cell - g.cells[a];
    return true;
  };
  // Candidates [begin, end) of the cell order, shifted by one periodic image. The grid's reach and
  // half flag as locals: read through `g` they were loaded again at every candidate on the host.
  Real const reach2 = g.reach2;
  bool const half = g.half;
  auto const scan = [&](std::uint32_t begin, std::uint32_t end, Real sx, Real sy, Real sz) {
    for (std::uint32_t k = begin; k < end; ++k) {
      std::uint32_t const j = sorted_ids[k];
      if (j == i || (half && j < i)) continue;
      point4<Real> const q = cell_points[k];
      Real const ex = xi.x - (q.x + sx), ey = xi.y - (q.y + sy), ez = xi.z - (q.z + sz);
      if (distance2(ex, ey, ez) < reach2) emit(j, count++);
    }
  };
  // The three cells along x are consecutive in the cell order unless one lies past an edge: then
  // their particles are one range (cell_start and cell_end hold every cell's bounds, empty ones
  // too), scanned as the three cells one after the other would be, in the same order.
  bool const x_inside = own[0] >= 1 && own[0] + 1 < g.cells[0];
  int const zr = g.cells[2] > 1 || g.periodic[2] ? 1 : 0;
  for (int dz = -zr; dz <= zr; ++dz) {
    int cz;
    Real sz;
    if (!step(2, dz, cz, sz)) continue;
    for (int dy = -1; dy <= 1; ++dy) {
      int cy;
      Real sy;
      if (!step(1, dy, cy, sy)) continue;
      std::uint32_t const row = static_cast<std::uint32_t>((cz * g.cells[1] + cy) * g.cells[0]);
      if (x_inside) {
        scan(cell_start[row + own[0] - 1], cell_end[row + own[0] + 1], Real(0), sy, sz);
        continue;
      }
      for (int dx = -1; dx <= 1; ++dx) {
        int cx;
        Real sx;
        if (!step(0, dx, cx, sx)) continue;
        std::uint32_t const cell = row + static_cast<std::uint32_t>(cx);
        scan(cell_start[cell], cell_end[cell], sx, sy, sz);
      }
    }
  }
  return count;
}

// The largest squared displacement of particle i since the reference (minimum image).
COALESCE_HOST_DEVICE inline double displacement2(position_columns const& p, unsigned dims, double const* reference,
                                                 std::size_t i, double const* length, bool const* periodic) {
  double sum = 0;
  for (unsigned a = 0; a < dims; ++a) {
    double d = coordinate_of(p, a, i) - reference[3 * i + a];
    if (periodic[a]) d -= length[a] * nearbyint(d / length[a]);
    sum += d * d;
  }
  return sum;
}

}  // namespace coalesce::detail
