// The cluster-pair format's build (coalesce/neighbors/cluster_pairs.hpp): the padded build's
// checks and bin() on a grid of its own (columns, sorted along the last axis), then slots,
// bounding boxes and the search (count, offsets, fill), on host or GPU memory; and its refill for
// CUDA graphs (GPU memory), the same steps with nothing read back.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <coalesce/core/error.hpp>

#include "pair_list_backend.hpp"

namespace coalesce::detail {

namespace {

template <class U> U* as(buffer const& b) { return reinterpret_cast<U*>(b.data()); }

// The build's axes: the last used axis first (see pair_list_kernels.hpp).
unsigned sorted_axis(unsigned dims) { return dims == 0 ? 0 : dims - 1; }

// The sorted axis's entries of each per-axis array swapped with axis 0's (its own inverse).
template <class... PerAxis> void swap_with_axis0(unsigned a, PerAxis&... per_axis) {
  (std::swap(per_axis[0], per_axis[a]), ...);
}
list_geometry permuted(list_geometry g) {
  swap_with_axis0(sorted_axis(g.dims), g.lo, g.hi, g.periodic);
  return g;
}
position_columns permuted(position_columns p) {
  swap_with_axis0(sorted_axis(p.dims), p.axis, p.box_format, p.box_slack);
  return p;
}

// Columns about as wide as a cluster of 8 particles at the mean density of the box, slices along
// them a quarter of that (the order inside a slice is the particles' own).
template <class Real> cell_grid<Real> make_pair_grid(list_geometry const& g, std::size_t n, std::size_t& cell_count) {
  double volume = 1;
  for (unsigned a = 0; a < g.dims; ++a) volume *= g.hi[a] - g.lo[a];
  double const width = std::pow(static_cast<double>(pair_cluster) * volume / static_cast<double>(n),
                                1.0 / static_cast<double>(std::max(1u, g.dims)));
  return make_grid<Real>(g, n, cell_count, {0.25 * width, width, width}, true);
}

// The clusters a list of n particles in `columns` columns keeps room for: a column of k particles
// makes (k + 7) / 8 clusters, so all columns make at most (n + 7 columns) / 8 however the particles
// move between them. Clusters past the columns' own are empty (no slot holds a particle, no row an
// entry), so a refill, which cannot read the new count back, writes every column's clusters into
// the same memory and the same view (a CUDA graph holds both), never cutting a column.
std::size_t pair_cluster_room(std::size_t n, std::size_t columns) { return (n + 7 * columns) / pair_cluster; }

template <class Real>
pair_build_view<Real> pair_view(list_memory& m, cell_grid<Real> const& grid, std::uint32_t columns) {
  return {grid,
          as<std::uint32_t const>(m.cell_start),
          as<std::uint32_t const>(m.cell_end),
          as<std::uint32_t const>(m.sorted_ids),
          as<point4<Real> const>(m.cell_points),
          as<std::uint32_t const>(m.column_clusters),
          columns,
          as<std::uint32_t>(m.slots),
          as<std::uint32_t>(m.slot_of),
          as<point4<Real>>(m.points),
          as<pair_box<Real>>(m.boxes)};
}

template <class Real> std::uint32_t column_count(cell_grid<Real> const& grid) {
  return static_cast<std::uint32_t>(grid.cells[1] * grid.cells[2]);
}

template <class Backend, class Real>
void build_pairs_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g, void* stream) {
  list_geometry const gp = permuted(g);
  position_columns const pp = permuted(p);
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_pair_grid<Real>(gp, n, cell_count);
  std::size_t const bad = Backend::bin(m, pp, n, gp.dims, grid, cell_count, true, stream);
  if (bad < n) report_bad_particle(m, p, g, bad);
  std::uint32_t const columns = column_count(grid);
  std::size_t const clusters = pair_cluster_room(n, columns);
  if (clusters * pair_cluster >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list (cluster_pairs): " + std::to_string(clusters * pair_cluster) +
                " slots do not fit 32-bit indices; use padded_columns for a system this size");
  }
  ensure_bytes(m, m.column_clusters, (columns + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.cluster_counts, (std::max<std::size_t>(columns, clusters) + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.slots, clusters * pair_cluster * sizeof(std::uint32_t));
  ensure_bytes(m, m.slot_of, n * sizeof(std::uint32_t));
  ensure_bytes(m, m.points, clusters * pair_cluster * sizeof(point4<Real>));
  ensure_bytes(m, m.boxes, clusters * sizeof(pair_box<Real>));
  ensure_bytes(m, m.offsets, (clusters + 1) * sizeof(std::uint32_t));
  Backend::column_clusters(m, grid, columns, stream);
  pair_build_view<Real> const v = pair_view(m, grid, columns);
  Backend::slots_and_boxes(v, clusters, stream);
  pair_row_totals const totals = Backend::count_rows(m, v, clusters, stream);
  if (totals.entries >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list (cluster_pairs): " + std::to_string(totals.entries) +
                " pairs of clusters do not fit 32-bit offsets; use padded_columns for a system this size");
  }
  ensure_bytes(m, m.indices, totals.entries * sizeof(std::uint32_t));
  Backend::fill_rows(m, v, clusters, stream);
  Backend::keep_reference(m, p, n, g.dims, true, stream);
  m.particles = n;
  m.built_over = n;
  m.clusters = clusters;
  m.pair_entries = totals.entries;
  m.entries = totals.pairs.within;
  m.candidates = totals.pairs.tested;
  m.widest = totals.widest * pair_cluster;
  m.width = 0;
  m.point_bytes = sizeof(point4<Real>);
  if constexpr (Backend::gpu) Backend::keep_status(m, stream);
  ++m.builds;
}

// A refill in GPU memory (refill_pair_list): the build's steps queued into the memory it left, at
// its cluster count (pair_cluster_room: the same for the same particle count and box).
template <class Real>
void refill_pairs_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g, void* stream) {
#if COALESCE_WITH_CUDA
  using gpu = cuda_list_backend;
  list_geometry const gp = permuted(g);
  position_columns const pp = permuted(p);
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_pair_grid<Real>(gp, n, cell_count);
  (void)gpu::bin(m, pp, n, gp.dims, grid, cell_count, false, stream);
  std::uint32_t const columns = column_count(grid);
  gpu::column_clusters(m, grid, columns, stream);
  pair_build_view<Real> const v = pair_view(m, grid, columns);
  gpu::slots_and_boxes(v, m.clusters, stream);
  gpu::refill_rows(m, v, m.clusters, stream);
  gpu::keep_reference(m, p, n, g.dims, false, stream);
  ++m.builds;
#else
  (void)m, (void)p, (void)n, (void)g, (void)stream;
#endif
}

template <class Backend, class Real>
std::uint64_t pair_keys_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g,
                           std::uint32_t* keys, std::array<std::uint32_t, 3>& grid_cells, void* stream) {
  list_geometry const gp = permuted(g);
  position_columns const pp = permuted(p);
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_pair_grid<Real>(gp, n, cell_count);
  std::size_t const bad = Backend::cell_keys(m, pp, n, gp.dims, grid, keys, stream);
  if (bad < n) report_bad_particle(m, p, g, bad);
  for (unsigned a = 0; a < 3; ++a) grid_cells[a] = static_cast<std::uint32_t>(grid.cells[a]);
  return cell_count;
}

}  // namespace

void build_pair_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                     void* stream) {
  if (start_build(m, g, n)) {
    m.clusters = 0;
    m.pair_entries = 0;
    m.candidates = 0;
    return;
  }
  keeping_status_on_error(m, stream, [&] {
    with_list_backend(m.kind, position, [&](auto backend, auto real) {
      build_pairs_in<decltype(backend), decltype(real)>(m, position, n, g, stream);
    });
  });
}

void refill_pair_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                      void* stream) {
  refill_at_built_precision(
      m, position, n, "cluster_pairs", [&] { build_pair_list(m, position, n, g, stream); },
      [&](auto real) { refill_pairs_in<decltype(real)>(m, position, n, g, stream); });
}

std::uint64_t pair_list_cell_keys(list_memory& m, position_columns const& position, std::size_t n,
                                  list_geometry const& g, std::uint32_t* keys, std::array<std::uint32_t, 3>& grid,
                                  void* stream) {
  check_geometry(g);
  if (n >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list: " + std::to_string(n) + " particles do not fit 32-bit indices");
  }
  grid = {1, 1, 1};
  if (n == 0) return 1;
  return with_list_backend(m.kind, position, [&](auto backend, auto real) {
    return pair_keys_in<decltype(backend), decltype(real)>(m, position, n, g, keys, grid, stream);
  });
}

}  // namespace coalesce::detail
