// Internal to libcoalesce: what the host and CUDA halves of the neighbour-list build share.
#pragma once
#include <array>
#include <cstddef>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <coalesce/core/error.hpp>

#include "list_kernels.hpp"

namespace coalesce::detail {

// Makes b hold at least `bytes` of m.kind memory (a rebuild of the same size allocates nothing);
// true when it allocated.
bool ensure_bytes(list_memory const& m, buffer& b, std::size_t bytes);
// The same with room to grow: b holds at least twice `bytes` after every build, however large the
// builds before it were. A clusters list's candidates and runs, which a refill writes into without
// allocating, grow fast as particles move: a cluster's bounding box is set by its outermost
// members (LJ test set: +20 % candidates after moves of 0.07, +70 % after 0.42, with the runs +47 %).
// Grown, it holds 2.5 times `bytes`: builds that find up to a quarter more allocate nothing.
inline bool ensure_room(list_memory const& m, buffer& b, std::size_t bytes) {
  if (b.size() >= 2 * bytes && b.kind() == m.kind) return false;
  b = buffer(m.kind, std::max<std::size_t>(2 * bytes + bytes / 2, 1));
  ++m.allocations;
  return true;
}

bool on_gpu_memory(memory_kind kind);

// The status words a GPU build keeps in m.words (list_build_cuda.cu says what each holds; 7 to 11
// are a clusters refill's: cluster_build_cuda.cu; 6 and 11 a cluster_pairs refill's too:
// pair_list_build_cuda.cu).
inline constexpr std::size_t list_status_words = 12;

// Makes m.words hold the status words, zeroed when newly allocated (check() reads them all back,
// some of which a list's build never writes); returns them.
inline unsigned long long* status_words(list_memory& m, void* stream) {
  if (ensure_bytes(m, m.words, list_status_words * sizeof(unsigned long long)))
    zero_bytes(m.kind, m.words.data(), m.words.size(), stream);
  return reinterpret_cast<unsigned long long*>(m.words.data());
}

// Runs a GPU build, putting the status words back as they were when it throws (a refused or failed
// build leaves the previous list whole, and check() must then read that list's refills, not the
// partial counts of the build that gave up: a zeroed first-bad word would name particle 0).
template <class Build> void keeping_status_on_error(list_memory& m, void* stream, Build&& build) {
  if (!on_gpu_memory(m.kind) || m.words.size() < list_status_words * sizeof(unsigned long long)) {
    build();
    return;
  }
  unsigned long long saved[list_status_words] = {};
  copy_bytes(memory_kind::host, saved, m.kind, m.words.data(), sizeof saved, stream);
  try {
    build();
  } catch (...) {
    copy_bytes(m.kind, m.words.data(), memory_kind::host, saved, sizeof saved, stream);
    throw;
  }
}

// A refill of a format whose build keeps the particles' positions (clusters, cluster_pairs): in GPU
// memory refill(real) queues the build's steps in the precision the list was built from (positions
// of the other are refused: the list's points are another size); in host memory, or with nothing
// to queue, build().
template <class Build, class Refill> void refill_at_built_precision(list_memory& m, position_columns const& position,
                                                                    std::size_t n, char const* format, Build&& build,
                                                                    Refill&& refill) {
  if (!on_gpu_memory(m.kind) || n == 0) return build();
  if (position.width * 4 != m.point_bytes) {
    throw_error(std::string("verlet_list::refill (") + format + "): the positions are " +
                (position.width == 4 ? "float" : "double") + " and the list was built from " +
                (m.point_bytes == 16 ? "float" : "double") + " ones; build() it from these first");
  }
  if (position.width == 4) return refill(float{});
  refill(double{});
}

// Rows per chunk of a csr rebuild in GPU memory staged `width` wide: about 256 MiB of staging
// (at least 2^18 rows, a few waves of the fill kernel), or set_staged_chunk_rows'; never more
// than `rows`.
std::size_t staged_chunk_rows(std::size_t rows, std::size_t width);

// offsets[c] = sum of counts[0, c), for c in [0, count]; returns the total (host memory).
inline std::size_t exclusive_scan(std::uint32_t const* counts, std::size_t count, std::uint32_t* offsets) {
  std::size_t running = 0;
  for (std::size_t c = 0; c < count; ++c) {
    offsets[c] = static_cast<std::uint32_t>(running);
    running += counts[c];
  }
  offsets[count] = static_cast<std::uint32_t>(running);
  return running;
}

// The start every build shares: the geometry and count checked, and an empty set made an empty
// list (a rank may own no particle). True when there is nothing more to build.
bool start_build(list_memory& m, list_geometry const& g, std::size_t n);
// Refuses a cutoff, skin or box a list cannot be built for (coalesce::error saying which).
void check_geometry(list_geometry const& g);
// Throws the error for particle i (not finite, or outside an open axis), naming its coordinates.
[[noreturn]] void report_bad_particle(list_memory const& m, position_columns const& p, list_geometry const& g,
                                      std::size_t i);

// Cells at least width[a] wide along axis a (at most 1e6 per axis); no more cells than a few per
// particle (a tiny cutoff in a large box would otherwise make the empty cells the cost): past that
// every axis's cells are halved, or axis 0's alone first where `coarsen_axis0_first` (the pair
// list's grid keeps its columns and coarsens the slices along them).
template <class Real> inline cell_grid<Real> make_grid(list_geometry const& g, std::size_t n, std::size_t& cell_count,
                                                       std::array<double, 3> const& width,
                                                       bool coarsen_axis0_first = false) {
  cell_grid<Real> out{};
  double cells[3] = {1, 1, 1};
  for (unsigned a = 0; a < 3; ++a) {
    bool const used = a < g.dims;
    double const length = used ? g.hi[a] - g.lo[a] : 1.0;
    cells[a] = used ? std::clamp(std::floor(length / width[a]), 1.0, 1e6) : 1.0;
    out.lo[a] = static_cast<Real>(used ? g.lo[a] : 0.0);
    out.length[a] = static_cast<Real>(length);
    out.periodic[a] = used && g.periodic[a];
  }
  double const most = std::max<double>(64.0, 4.0 * static_cast<double>(n));
  while (cells[0] * cells[1] * cells[2] > most) {
    if (coarsen_axis0_first && cells[0] > 1) {
      cells[0] = std::max(1.0, std::floor(cells[0] / 2));
    } else {
      for (double& c : cells) c = std::max(1.0, std::floor(c / 2));
    }
  }
  cell_count = 1;
  for (unsigned a = 0; a < 3; ++a) {
    out.cells[a] = static_cast<int>(cells[a]);
    out.cells_per_length[a] = static_cast<Real>(cells[a] / static_cast<double>(out.length[a]));
    cell_count *= static_cast<std::size_t>(cells[a]);
  }
  out.reach2 = static_cast<Real>(g.reach() * g.reach());
  out.half = g.half;
  return out;
}
// The cell list's grid: cells at least the reach (cutoff + skin) wide, so that a particle's
// neighbours lie in its cell and the adjacent ones.
template <class Real> inline cell_grid<Real> make_grid(list_geometry const& g, std::size_t n, std::size_t& cell_count) {
  return make_grid<Real>(g, n, cell_count, {g.reach(), g.reach(), g.reach()});
}

// What a fill pass found: the widest row and the entries of all rows.
struct list_pass_result {
  std::size_t widest = 0;
  std::size_t entries = 0;
};

// The cluster-pair build's types (pair_list_kernels.hpp, pair_list_backend.hpp), named here for
// the backends' declarations.
template <class Real> struct pair_build_view;
struct pair_row_totals;

// The steps of a build that differ between host and GPU memory, one struct per memory. Each format's
// driver (list_build.cpp, cluster_build.cpp, pair_list_build.cpp) is written once, as a template over
// the backend, and with_list_backend below chooses the backend once per call: no driver asks which
// memory it is in. Both backends take the same arguments for the same step; the host's steps always
// finish before they return, so it ignores `read_back` and the stream. The steps only a GPU build
// has (refills for CUDA graphs, status words, staged csr rows) are cuda_list_backend's alone, and a driver
// reaches them under `if constexpr (Backend::gpu)`.
//
// The bodies both run are shared: list_kernels.hpp, cluster_kernels.hpp, pair_list_kernels.hpp.
// The host's steps are in list_build_host.cpp, cluster_build_host.cpp and pair_list_build_host.cpp;
// the GPU's in the *_cuda.cu files of the same names.
struct host_list_backend {
  static constexpr bool gpu = false;

  // Lists (list_build_host.cpp).
  // Cells of every particle, sorted by cell (by index inside a cell); the first bad particle or n.
  template <class Real> static std::size_t bin(list_memory& m, position_columns const& p, std::size_t n, unsigned dims,
                                               cell_grid<Real> const& g, std::size_t cell_count, bool read_back,
                                               void* stream);
  // Every row [0, n) into the list's format (count_only: only the counts).
  template <class Real> static list_pass_result fill(list_memory& m, std::size_t n, cell_grid<Real> const& g,
                                                     bool count_only, bool read_back, void* stream);
  // The cell bin() puts each particle in, as a sort key, into keys; the first bad particle or n.
  template <class Real> static std::size_t cell_keys(list_memory& m, position_columns const& p, std::size_t n,
                                                     unsigned dims, cell_grid<Real> const& g, std::uint32_t* keys,
                                                     void* stream);
  // A csr list in one pass: counts, offsets and indices (allocated here), the widest row and the entries.
  template <class Real> static list_pass_result fill_csr(list_memory& m, std::size_t n, cell_grid<Real> const& g);
  // The positions the next max_displacement measures from.
  static void keep_reference(list_memory& m, position_columns const& p, std::size_t n, unsigned dims, bool wait,
                             void* stream);
  // The largest squared displacement since keep_reference.
  static double max_displacement(list_memory const& m, position_columns const& p, std::size_t n, unsigned dims,
                                 double const* length, bool const* periodic, void* stream);

  // Clusters (cluster_build_host.cpp), after bin() has sorted the particles by cell:
  //   boxes:       each cluster's bounding box; returns the cells all clusters' reach covers
  //   candidates:  each cluster's candidates, sorted by index; returns how many in all
  //   runs:        the runs of every cluster into m.next_runs / m.next_offsets; returns how many,
  //                and the candidates a traversal of every row tests
  //   count:       each particle's neighbours through the traversal (entries, widest row)
  template <class Real>
  static std::uint64_t boxes(list_memory& m, std::size_t n, cell_grid<Real> const& g, void* stream);
  template <class Real>
  static std::size_t candidates(list_memory& m, std::size_t n, cell_grid<Real> const& g, void* stream);
  static std::size_t runs(list_memory& m, std::size_t n, std::size_t& tested, void* stream);
  static list_pass_result count(list_memory& m, std::size_t n, list_geometry const& g, void* stream);

  // Cluster pairs (pair_list_build_host.cpp), after bin() has sorted the particles by column and slice.
  // Each column's first cluster (the clusters of the columns before it: their particles / 8, rounded
  // up) into m.column_clusters, columns + 1 of them (m.cluster_counts: scratch of columns + 1).
  template <class Real>
  static void column_clusters(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns, void* stream);
  // Every slot's particle and position, every cluster's bounding box.
  template <class Real> static void slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters, void* stream);
  // Each row's count into m.cluster_counts, their offsets into m.offsets; the totals.
  template <class Real>
  static pair_row_totals count_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
  // Each row's entries into m.indices at m.offsets (returns when the list is complete).
  template <class Real>
  static void fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
};

#if COALESCE_WITH_CUDA
// The GPU's steps (list_build_cuda.cu, cluster_build_cuda.cu, pair_list_build_cuda.cu); without
// CUDA there is no GPU memory, and the type is not declared. read_back false (a refill): nothing
// waits; the first bad particle stays in the status word.
struct cuda_list_backend {
  static constexpr bool gpu = true;

  // Lists (list_build_cuda.cu): the host's steps, queued on the stream.
  template <class Real> static std::size_t bin(list_memory& m, position_columns const& p, std::size_t n, unsigned dims,
                                               cell_grid<Real> const& g, std::size_t cell_count, bool read_back,
                                               void* stream);
  template <class Real> static list_pass_result fill(list_memory& m, std::size_t n, cell_grid<Real> const& g,
                                                     bool count_only, bool read_back, void* stream);
  template <class Real> static std::size_t cell_keys(list_memory& m, position_columns const& p, std::size_t n,
                                                     unsigned dims, cell_grid<Real> const& g, std::uint32_t* keys,
                                                     void* stream);
  static void keep_reference(list_memory& m, position_columns const& p, std::size_t n, unsigned dims, bool wait,
                             void* stream);
  static double max_displacement(list_memory const& m, position_columns const& p, std::size_t n, unsigned dims,
                                 double const* length, bool const* periodic, void* stream);
  // A csr list in one pass over the particles, rows staged `width` wide chunk by chunk, then packed
  // into m.indices at its capacity: counts and offsets always, indices complete only where the
  // result's widest row fits the width and its entries the capacity (else build in two passes).
  // refill: nothing read back or allocated; a row past the width keeps `width` entries and the
  // offsets stop at the capacity, both left in the status words for check().
  template <class Real> static list_pass_result fill_csr(list_memory& m, std::size_t n, cell_grid<Real> const& g,
                                                         std::size_t width, bool refill, void* stream);
  static void offsets_from_counts(list_memory& m, std::size_t n, void* stream);
  // offsets[0, count] from counts[0, count): an exclusive scan (counts[count] is zeroed first),
  // queued only. The scratch is made sure of here: a build's call allocates it, a refill's of the
  // same sizes then not (cluster_build_cuda.cu).
  static void scan_counts(list_memory& m, std::uint32_t* counts, std::size_t count, std::uint32_t* offsets,
                          void* stream);
  // offsets[0, count] clamped to `capacity` (queued): a refill's rows past its memory are cut; the
  // 64-bit total the offsets came from goes into `most` (the most since the build) for check().
  static void clamp_offsets(std::uint32_t* offsets, std::size_t count, std::size_t capacity,
                            unsigned long long const* total, unsigned long long* most, void* stream);
  // Allocates what fill_csr at `width` needs (staging, scan scratch): a rebuild or refill then allocates nothing.
  static void reserve_csr_staging(list_memory& m, std::size_t n, std::size_t width);
  // The status words of the last bin and fill (one read-back).
  static list_status read_status(list_memory const& m, void* stream);
  // Queues the largest displacement and a kernel that sets the graph condition to (it > threshold).
  static void set_condition_if_moved(list_memory const& m, position_columns const& p, std::size_t n, unsigned dims,
                                     double const* length, bool const* periodic, double threshold,
                                     std::uint64_t condition, void* stream);

  // Clusters (cluster_build_cuda.cu): the host's steps, and a refill's.
  template <class Real>
  static std::uint64_t boxes(list_memory& m, std::size_t n, cell_grid<Real> const& g, void* stream);
  template <class Real>
  static std::size_t candidates(list_memory& m, std::size_t n, cell_grid<Real> const& g, void* stream);
  static std::size_t runs(list_memory& m, std::size_t n, std::size_t& tested, void* stream);
  static list_pass_result count(list_memory& m, std::size_t n, list_geometry const& g, void* stream);
  // After a build: the status words a refill's check() starts from (no bad particle, the build's
  // widest row and entries, nothing cut).
  static void keep_status(list_memory& m, void* stream);
  // The build's steps again into the memory it left (after bin, queued): nothing read back, waited
  // for or allocated; candidates and runs past that memory cut (status words 7-10).
  template <class Real> static void refill_clusters(list_memory& m, std::size_t n, cell_grid<Real> const& g,
                                                    list_geometry const& geometry, void* stream);
  // Every row, from the counts of count() (m.counts): offsets and indices copied to the host.
  static void cluster_rows(list_memory const& m, list_geometry const& g, std::vector<std::uint32_t>& offsets,
                           std::vector<std::uint32_t>& indices, void* stream);

  // Cluster pairs (pair_list_build_cuda.cu): the host's steps, and a refill's.
  template <class Real>
  static void column_clusters(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns, void* stream);
  template <class Real> static void slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters, void* stream);
  template <class Real>
  static pair_row_totals count_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
  template <class Real>
  static void fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
  // A refill's count_rows and fill_rows (after slots_and_boxes, queued): rows at the offsets clamped
  // to the entries' memory, the totals into the status words (1: widest row in particles, 2: pairs
  // within reach, 6: the most entries since the build, 11: pairs tested), nothing read back.
  template <class Real>
  static void refill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
};
#endif

// The one place a build chooses its memory and its position precision: run(backend, real) with
// backend a host_list_backend or cuda_list_backend and real a float or double (a value of the type the
// positions are read as: 4-byte columns float, 8-byte ones double).
template <class Run> decltype(auto) with_list_backend(memory_kind kind, position_columns const& p, Run&& run) {
  auto const with_real = [&](auto backend) -> decltype(auto) {
    if (p.width == 4) return run(backend, float{});
    return run(backend, double{});
  };
#if COALESCE_WITH_CUDA
  if (on_gpu_memory(kind)) return with_real(cuda_list_backend{});
#else
  (void)kind;  // no GPU memory without CUDA
#endif
  return with_real(host_list_backend{});
}

}  // namespace coalesce::detail
