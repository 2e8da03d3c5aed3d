// The cluster-pair format's build in host memory (and in device memory when the device is OpenMP):
// one loop per step over the columns, slots, clusters and rows (OpenMP threads where OpenMP is on),
// the bodies of pair_list_kernels.hpp that the GPU kernels run too.
#include <algorithm>
#include <cstdint>

#include "pair_list_backend.hpp"

namespace coalesce::detail {

namespace {
template <class U> U* as(buffer const& b) { return reinterpret_cast<U*>(b.data()); }
}  // namespace

template <class Real>
void host_list_backend::column_clusters(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns, void*) {
  auto const* start = as<std::uint32_t const>(m.cell_start);
  auto const* end = as<std::uint32_t const>(m.cell_end);
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  for (std::uint32_t k = 0; k < columns; ++k) {
    std::uint32_t first = 0;
    std::uint32_t const particles = column_particles(start, end, static_cast<std::uint32_t>(g.cells[0]), k, first);
    counts[k] = (particles + pair_cluster - 1) / pair_cluster;
  }
  exclusive_scan(counts, columns, as<std::uint32_t>(m.column_clusters));
}

template <class Real>
void host_list_backend::slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters, void*) {
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

template <class Real> pair_row_totals host_list_backend::count_rows(list_memory& m, pair_build_view<Real> const& v,
                                                                    std::size_t clusters, void*) {
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

template <class Real>
void host_list_backend::fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void*) {
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

template void host_list_backend::column_clusters<float>(list_memory&, cell_grid<float> const&, std::uint32_t, void*);
template void host_list_backend::slots_and_boxes<float>(pair_build_view<float> const&, std::size_t, void*);
template pair_row_totals host_list_backend::count_rows<float>(list_memory&, pair_build_view<float> const&, std::size_t,
                                                              void*);
template void host_list_backend::fill_rows<float>(list_memory&, pair_build_view<float> const&, std::size_t, void*);
template void host_list_backend::column_clusters<double>(list_memory&, cell_grid<double> const&, std::uint32_t, void*);
template void host_list_backend::slots_and_boxes<double>(pair_build_view<double> const&, std::size_t, void*);
template pair_row_totals host_list_backend::count_rows<double>(list_memory&, pair_build_view<double> const&,
                                                               std::size_t, void*);
template void host_list_backend::fill_rows<double>(list_memory&, pair_build_view<double> const&, std::size_t, void*);

}  // namespace coalesce::detail
