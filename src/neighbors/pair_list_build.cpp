// The cluster-pair format's build (coalesce/neighbors/cluster_pairs.hpp): the padded build's
// checks and bin() on a grid of its own (columns, sorted along the last axis), then slots,
// bounding boxes and the search (count, offsets, fill), on host or GPU memory.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

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

template <class Backend, class Real>
void build_pairs_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g, void* stream) {
  list_geometry const gp = permuted(g);
  position_columns const pp = permuted(p);
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_pair_grid<Real>(gp, n, cell_count);
  std::size_t const bad = Backend::bin(m, pp, n, gp.dims, grid, cell_count, true, stream);
  if (bad < n) report_bad_particle(m, p, g, bad);
  auto const columns = static_cast<std::uint32_t>(grid.cells[1] * grid.cells[2]);
  std::vector<std::uint32_t> column_counts(columns), column_clusters(columns + 1);
  Backend::column_cluster_counts(m, grid, columns, column_counts.data(), stream);
  std::size_t const clusters = exclusive_scan(column_counts.data(), columns, column_clusters.data());
  if (clusters * pair_cluster >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list (cluster_pairs): " + std::to_string(clusters * pair_cluster) +
                " slots do not fit 32-bit indices; use padded_columns for a system this size");
  }
  ensure_bytes(m, m.column_clusters, (columns + 1) * sizeof(std::uint32_t));
  copy_bytes(m.kind, m.column_clusters.data(), memory_kind::host, column_clusters.data(),
             (columns + 1) * sizeof(std::uint32_t), Backend::gpu ? stream : nullptr);
  ensure_bytes(m, m.slots, clusters * pair_cluster * sizeof(std::uint32_t));
  ensure_bytes(m, m.slot_of, n * sizeof(std::uint32_t));
  ensure_bytes(m, m.points, clusters * pair_cluster * sizeof(point4<Real>));
  ensure_bytes(m, m.boxes, clusters * sizeof(pair_box<Real>));
  ensure_bytes(m, m.cluster_counts, (clusters + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.offsets, (clusters + 1) * sizeof(std::uint32_t));
  pair_build_view<Real> const v{grid,
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
  ++m.builds;
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
