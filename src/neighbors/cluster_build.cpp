// The cluster format's build (coalesce/neighbors/clusters.hpp): the padded build's checks and
// cell binning, then per cluster its bounding box, candidates, runs, and a count of the
// neighbours the traversal yields (entries, widest row, fill), on host or GPU memory.
#include <string>
#include <utility>

#include <coalesce/core/error.hpp>

#include "cluster_kernels.hpp"
#include "list_backend.hpp"

namespace coalesce::detail {

namespace {

template <class Backend, class Real>
void build_clusters_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g, void* stream) {
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_grid<Real>(g, n, cell_count);
  std::size_t const bad = Backend::bin(m, p, n, g.dims, grid, cell_count, true, stream);
  std::uint64_t const covered = bad < n ? 0 : Backend::boxes(m, n, grid, stream);
  if (bad < n) report_bad_particle(m, p, g, bad);
  // Clusters of particles in a spatial order reach a few dozen cells each; in a random order
  // every cluster spans the box, and scanning it per cluster would cost more than the padded
  // build's 27 cells per particle. Refused before any list memory is written.
  std::size_t const clusters = cluster_count_of(n);
  if (covered > 27ull * n && covered > 64ull * clusters) {
    throw_error(
        "neighbor list (clusters): the particles are not in a spatial order (their clusters of 32 "
        "consecutive particles reach " +
        std::to_string(covered / clusters) + " of the " + std::to_string(cell_count) +
        " cells on average); sort them along space first (coalesce::hilbert_keys + sort_by_key), or use "
        "the padded_columns format; nothing was written");
  }
  Backend::candidates(m, n, grid, stream);
  std::size_t tested = 0;
  std::size_t const runs = Backend::runs(m, n, tested, stream);
  // Everything the rest writes is allocated before the new list replaces the old one: a build
  // that runs out of memory part-way leaves the previous list whole. The new runs, their offsets
  // and the wrapped positions the traversal filters with are copied into the list's own buffers,
  // not swapped with the scratch: a CUDA graph captured before this build refills at the same
  // addresses after it (unless a buffer grew: allocations() says so, capture again then).
  ensure_bytes(m, m.counts, (n + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.reference, 3 * n * sizeof(double));
  ensure_room(m, m.indices, 2 * runs * sizeof(std::uint32_t));  // a refill's runs grow as particles move
  ensure_bytes(m, m.offsets, (clusters + 1) * sizeof(std::uint32_t));
  ensure_bytes(m, m.points, n * sizeof(point4<Real>));
  void* const s = Backend::gpu ? stream : nullptr;
  copy_bytes(m.kind, m.indices.data(), m.kind, m.next_runs.data(), 2 * runs * sizeof(std::uint32_t), s);
  copy_bytes(m.kind, m.offsets.data(), m.kind, m.next_offsets.data(), (clusters + 1) * sizeof(std::uint32_t), s);
  copy_bytes(m.kind, m.points.data(), m.kind, m.own_points.data(), n * sizeof(point4<Real>), s);
  m.runs = runs;
  m.candidates = tested;
  m.point_bytes = sizeof(point4<Real>);
  m.particles = n;
  m.built_over = n;
  m.width = 0;
  list_pass_result const r = Backend::count(m, n, g, stream);
  Backend::keep_reference(m, p, n, g.dims, true, stream);
  m.entries = r.entries;
  m.widest = r.widest;
  if constexpr (Backend::gpu) Backend::keep_status(m, stream);
  ++m.builds;
}

// A refill in GPU memory (refill_cluster_list): the build's bin and cluster steps queued into the
// memory the build left.
template <class Real> void refill_clusters_in(list_memory& m, position_columns const& p, std::size_t n,
                                              list_geometry const& g, void* stream) {
#if COALESCE_WITH_CUDA
  using gpu = cuda_list_backend;
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_grid<Real>(g, n, cell_count);
  (void)gpu::bin(m, p, n, g.dims, grid, cell_count, false, stream);
  gpu::refill_clusters(m, n, grid, g, stream);
  gpu::keep_reference(m, p, n, g.dims, false, stream);
  ++m.builds;
#else
  (void)m, (void)p, (void)n, (void)g, (void)stream;
#endif
}

}  // namespace

void cluster_rows(list_memory const& m, list_geometry const& g, std::vector<std::uint32_t>& offsets,
                  std::vector<std::uint32_t>& indices, void* stream) {
  std::size_t const n = m.particles;
  offsets.assign(n + 1, 0);
  indices.clear();
  if (n == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu_memory(m.kind)) return cuda_list_backend::cluster_rows(m, g, offsets, indices, stream);
#else
  (void)stream;
#endif
  verlet_list_ref<clusters> const r = cluster_ref(m, g);
  for (std::size_t i = 0; i < n; ++i) {
    auto push = [&](std::uint32_t j) { indices.push_back(j); };
    r.visit(i, push);
    offsets[i + 1] = static_cast<std::uint32_t>(indices.size());
  }
}

void build_cluster_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                        void* stream) {
  if (start_build(m, g, n)) return;
  keeping_status_on_error(m, stream, [&] {
    with_list_backend(m.kind, position, [&](auto backend, auto real) {
      build_clusters_in<decltype(backend), decltype(real)>(m, position, n, g, stream);
    });
  });
}

void refill_cluster_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                         void* stream) {
  refill_at_built_precision(
      m, position, n, "clusters", [&] { build_cluster_list(m, position, n, g, stream); },
      [&](auto real) { refill_clusters_in<decltype(real)>(m, position, n, g, stream); });
}

}  // namespace coalesce::detail
