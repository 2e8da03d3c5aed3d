// The cluster format's build in host memory (and in device memory when the device is OpenMP):
// one loop per step over the clusters, OpenMP threads where OpenMP is on, the bodies of
// cluster_kernels.hpp.
#include <algorithm>
#include <cstring>
#include <string>

#include <coalesce/core/error.hpp>

#include "cluster_kernels.hpp"
#include "list_backend.hpp"

namespace coalesce::detail {

namespace {
template <class U> U* as(buffer const& b) { return reinterpret_cast<U*>(b.data()); }
}  // namespace

template <class Real>
std::uint64_t host_list_backend::boxes(list_memory& m, std::size_t n, cell_grid<Real> const& g, void*) {
  std::size_t const clusters = cluster_count_of(n);
  ensure_bytes(m, m.boxes, clusters * sizeof(cluster_box<Real>));
  auto const* own = as<point4<Real> const>(m.own_points);
  auto* out = as<cluster_box<Real>>(m.boxes);
  std::uint64_t covered = 0;
  auto const count = static_cast<std::ptrdiff_t>(clusters);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : covered)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    out[c] = box_of_cluster(own, n, static_cast<std::size_t>(c));
    covered += cells_in(cells_near(g, out[c]));
  }
  return covered;
}

template <class Real>
std::size_t host_list_backend::candidates(list_memory& m, std::size_t n, cell_grid<Real> const& g, void*) {
  std::size_t const clusters = cluster_count_of(n);
  auto const* bx = as<cluster_box<Real> const>(m.boxes);
  auto const* start = as<std::uint32_t const>(m.cell_start);
  auto const* end = as<std::uint32_t const>(m.cell_end);
  auto const* points = as<point4<Real> const>(m.cell_points);
  auto const* sorted = as<std::uint32_t const>(m.sorted_ids);
  ensure_bytes(m, m.cluster_counts, (clusters + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.candidate_offsets, (clusters + 1) * sizeof(std::uint32_t));
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto const count = static_cast<std::ptrdiff_t>(clusters);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    std::uint32_t k = 0;
    visit_candidates(g, bx[c], start, end, points, sorted, [&](std::uint32_t) { ++k; });
    counts[c] = k;
  }
  auto* offsets = as<std::uint32_t>(m.candidate_offsets);
  std::size_t const total = exclusive_scan(counts, clusters, offsets);
  if (total >= 0xffffffffull) {
    throw_error("neighbor list (clusters): " + std::to_string(total) +
                " candidates do not fit 32-bit offsets; use padded_columns for a system this size");
  }
  // Room to grow, as in GPU memory (where a refill writes into it): rebuilds of particles that
  // moved a little allocate nothing.
  ensure_room(m, m.candidate_sorted, total * sizeof(std::uint32_t));
  auto* ids = as<std::uint32_t>(m.candidate_sorted);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    std::uint32_t* out = ids + offsets[c];
    std::uint32_t k = 0;
    visit_candidates(g, bx[c], start, end, points, sorted, [&](std::uint32_t j) { out[k++] = j; });
    std::sort(out, out + k);
  }
  return total;
}

std::size_t host_list_backend::runs(list_memory& m, std::size_t n, std::size_t& tested_out, void*) {
  std::size_t const clusters = cluster_count_of(n);
  auto const* offsets = as<std::uint32_t const>(m.candidate_offsets);
  auto const* ids = as<std::uint32_t const>(m.candidate_sorted);
  auto* counts = as<std::uint32_t>(m.cluster_counts);
  auto const count = static_cast<std::ptrdiff_t>(clusters);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    counts[c] =
        runs_of(ids + offsets[c], offsets[c + 1] - offsets[c], [](std::uint32_t, std::uint32_t, std::uint32_t) {});
  }
  ensure_bytes(m, m.next_offsets, (clusters + 1) * sizeof(std::uint32_t));
  auto* run_offsets = as<std::uint32_t>(m.next_offsets);
  std::size_t const total = exclusive_scan(counts, clusters, run_offsets);
  ensure_room(m, m.next_runs, 2 * total * sizeof(std::uint32_t));
  auto* out = as<std::uint32_t>(m.next_runs);
  std::size_t tested = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : tested)
#endif
  for (std::ptrdiff_t c = 0; c < count; ++c) {
    std::uint32_t* runs = out + 2 * static_cast<std::size_t>(run_offsets[c]);
    std::size_t length = 0;
    runs_of(ids + offsets[c], offsets[c + 1] - offsets[c],
            [&](std::uint32_t r, std::uint32_t first, std::uint32_t end) {
              runs[2 * r] = first;
              runs[2 * r + 1] = end;
              length += end - first;
            });
    std::size_t const members = std::min<std::size_t>(cluster_size, n - static_cast<std::size_t>(c) * cluster_size);
    tested += length * members;
  }
  tested_out = tested;
  return total;
}

list_pass_result host_list_backend::count(list_memory& m, std::size_t n, list_geometry const& g, void*) {
  verlet_list_ref<clusters> const r = cluster_ref(m, g);
  auto* counts = as<std::uint32_t>(m.counts);
  std::size_t widest = 0, entries = 0;
  auto const n_signed = static_cast<std::ptrdiff_t>(n);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(max : widest) reduction(+ : entries)
#endif
  for (std::ptrdiff_t s = 0; s < n_signed; ++s) {
    std::uint32_t k = 0;
    auto counter = [&](std::uint32_t) { ++k; };
    r.visit(static_cast<std::size_t>(s), counter);
    counts[s] = k;
    widest = std::max<std::size_t>(widest, k);
    entries += k;
  }
  return {widest, entries};
}

template std::uint64_t host_list_backend::boxes<float>(list_memory&, std::size_t, cell_grid<float> const&, void*);
template std::size_t host_list_backend::candidates<float>(list_memory&, std::size_t, cell_grid<float> const&, void*);
template std::uint64_t host_list_backend::boxes<double>(list_memory&, std::size_t, cell_grid<double> const&, void*);
template std::size_t host_list_backend::candidates<double>(list_memory&, std::size_t, cell_grid<double> const&, void*);

}  // namespace coalesce::detail
