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

namespace host_pairs {

template <class Real>
void column_cluster_counts(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns, std::uint32_t* counts) {
  auto const* start = as<std::uint32_t const>(m.cell_start);
  auto const* end = as<std::uint32_t const>(m.cell_end);
  for (std::uint32_t k = 0; k < columns; ++k) {
    std::uint32_t first = 0;
    std::uint32_t const particles = column_particles(start, end, static_cast<std::uint32_t>(g.cells[0]), k, first);
    counts[k] = (particles + pair_cluster - 1) / pair_cluster;
  }
}

template <class Real> void slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters) {
  auto const slots = static_cast<std::ptrdiff_t>(clusters * pair_cluster);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::ptrdiff_t s = 0; s < slots; ++s) fill_slot(v, static_cast<std::size_t>(s));
  auto const count = static_cast<std::ptrdiff_t>(clusters);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) fill_box(v, static_cast<std::size_t>(c));
}

template <class Real> pair_row_totals count_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters) {
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto const count = static_cast<std::ptrdiff_t>(clusters);
  std::size_t widest = 0;
  std::uint64_t within = 0, tested = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64) reduction(max : widest) reduction(+ : within, tested)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    pair_search_counts pairs;
    std::uint32_t const k =
        search_row<true>(v, static_cast<std::uint32_t>(c), pairs, [](std::uint32_t, std::uint32_t) {});
    counts[c] = k;
    widest = std::max<std::size_t>(widest, k);
    within += pairs.within;
    tested += pairs.tested;
  }
  pair_row_totals out;
  out.entries = exclusive_scan(counts, clusters, as<std::uint32_t>(m.offsets));
  out.widest = widest;
  out.pairs.within = within;
  out.pairs.tested = tested;
  return out;
}

template <class Real> void fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters) {
  auto const* offsets = as<std::uint32_t const>(m.offsets);
  auto* entries = as<std::uint32_t>(m.indices);
  auto const count = static_cast<std::ptrdiff_t>(clusters);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    std::uint32_t* row = entries + offsets[c];
    pair_search_counts unused;
    search_row<false>(v, static_cast<std::uint32_t>(c), unused, [&](std::uint32_t k, std::uint32_t j) { row[k] = j; });
  }
}

}  // namespace host_pairs

template <class Real>
void build_pairs_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g, void* stream) {
  list_geometry const gp = permuted(g);
  position_columns const pp = permuted(p);
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_pair_grid<Real>(gp, n, cell_count);
  bool const gpu = on_gpu_memory(m.kind);
#if COALESCE_WITH_CUDA
  std::size_t const bad = gpu ? cuda_lists::bin(m, pp, n, gp.dims, grid, cell_count, true, stream)
                              : host_lists::bin(m, pp, n, gp.dims, grid, cell_count);
#else
  (void)stream;
  std::size_t const bad = host_lists::bin(m, pp, n, gp.dims, grid, cell_count);
#endif
  if (bad < n) report_bad_particle(m, p, g, bad);
  auto const columns = static_cast<std::uint32_t>(grid.cells[1] * grid.cells[2]);
  std::vector<std::uint32_t> column_counts(columns), column_clusters(columns + 1);
#if COALESCE_WITH_CUDA
  if (gpu) {
    cuda_pairs::column_cluster_counts(m, grid, columns, column_counts.data(), stream);
  } else {
    host_pairs::column_cluster_counts(m, grid, columns, column_counts.data());
  }
#else
  host_pairs::column_cluster_counts(m, grid, columns, column_counts.data());
#endif
  std::size_t const clusters = exclusive_scan(column_counts.data(), columns, column_clusters.data());
  if (clusters * pair_cluster >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list (cluster_pairs): " + std::to_string(clusters * pair_cluster) +
                " slots do not fit 32-bit indices; use padded_columns for a system this size");
  }
  ensure_bytes(m, m.column_clusters, (columns + 1) * sizeof(std::uint32_t));
  copy_bytes(m.kind, m.column_clusters.data(), memory_kind::host, column_clusters.data(),
             (columns + 1) * sizeof(std::uint32_t), gpu ? stream : nullptr);
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
  pair_row_totals totals;
#if COALESCE_WITH_CUDA
  if (gpu) {
    cuda_pairs::slots_and_boxes(v, clusters, stream);
    totals = cuda_pairs::count_rows(m, v, clusters, stream);
  } else {
    host_pairs::slots_and_boxes(v, clusters);
    totals = host_pairs::count_rows(m, v, clusters);
  }
#else
  host_pairs::slots_and_boxes(v, clusters);
  totals = host_pairs::count_rows(m, v, clusters);
#endif
  if (totals.entries >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list (cluster_pairs): " + std::to_string(totals.entries) +
                " pairs of clusters do not fit 32-bit offsets; use padded_columns for a system this size");
  }
  ensure_bytes(m, m.indices, totals.entries * sizeof(std::uint32_t));
#if COALESCE_WITH_CUDA
  if (gpu) {
    cuda_pairs::fill_rows(m, v, clusters, stream);
    cuda_lists::keep_reference(m, p, n, g.dims, true, stream);
  } else {
    host_pairs::fill_rows(m, v, clusters);
    host_lists::keep_reference(m, p, n, g.dims);
  }
#else
  host_pairs::fill_rows(m, v, clusters);
  host_lists::keep_reference(m, p, n, g.dims);
#endif
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

template <class Real> std::uint64_t pair_keys_in(list_memory& m, position_columns const& p, std::size_t n,
                                                 list_geometry const& g, std::uint32_t* keys,
                                                 std::array<std::uint32_t, 3>& grid_cells, void* stream) {
  list_geometry const gp = permuted(g);
  position_columns const pp = permuted(p);
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_pair_grid<Real>(gp, n, cell_count);
#if COALESCE_WITH_CUDA
  std::size_t const bad = on_gpu_memory(m.kind) ? cuda_lists::cell_keys(m, pp, n, gp.dims, grid, keys, stream)
                                                : host_lists::cell_keys(pp, n, gp.dims, grid, keys);
#else
  (void)stream;
  std::size_t const bad = host_lists::cell_keys(pp, n, gp.dims, grid, keys);
#endif
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
    if (position.width == 4) {
      build_pairs_in<float>(m, position, n, g, stream);
    } else {
      build_pairs_in<double>(m, position, n, g, stream);
    }
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
  return position.width == 4 ? pair_keys_in<float>(m, position, n, g, keys, grid, stream)
                             : pair_keys_in<double>(m, position, n, g, keys, grid, stream);
}

}  // namespace coalesce::detail
