// coalesce/neighbors/list_ops.hpp - the type-erased neighbour-list build, compiled once into
// libcoalesce.a (src/neighbors/): verlet_list.hpp describes the positions (columns of any
// layout) and calls these, so a user translation unit never instantiates a build kernel.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cmath>

#include "../core/config.hpp"
#include "../memory/buffer.hpp"
#include "../reorder/reorder_ops.hpp"

namespace coalesce::detail {

// A position as a list keeps it: x, y, z in the positions' precision (w unused), aligned so that
// one vector load reads it.
template <class Real> struct alignas(4 * sizeof(Real)) point4 { Real x, y, z, w; };

// A value the compiler must treat as computed (an empty asm that may change it): a product
// passed through it cannot be fused with the addition that follows.
template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real unfused(Real v) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+x"(v));
#elif !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
  asm("" : "+w"(v));
#endif
  return v;
}

// The squared distance of a pair from its separation, as the builds compute it (libcoalesce.a
// only): explicit fused multiply-adds on the GPU, plain arithmetic on the host (a call to fma()
// per pair, where the host file has no hardware FMA, cost 1.6x a hand-written CPU list build).
template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real distance2(Real ex, Real ey, Real ez) {
#if defined(__CUDA_ARCH__)
  return fma(ez, ez, fma(ey, ey, ex * ex));
#else
  return ex * ex + ey * ey + ez * ez;
#endif
}

// The same, rounded the same way wherever it is compiled: the cluster format's filter runs in a
// user's file (any -march, any -ffp-contract) and in libcoalesce.a's count, and both must classify
// a pair at the reach alike. On the host the products pass an empty-asm barrier, so no compiler
// can fuse them (it costs the CPU build about a third; the padded builds do not need it).
template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real distance2_unfused(Real ex, Real ey, Real ez) {
#if defined(__CUDA_ARCH__)
  return fma(ez, ez, fma(ey, ey, ex * ex));
#else
  return (unfused(ex * ex) + unfused(ey * ey)) + unfused(ez * ez);
#endif
}

// Where the particles live and what counts as a neighbour: pairs closer than cutoff + skin
// (the reach), with the minimum image along periodic axes.
// list_format (reorder_ops.hpp): row_major and column_major are the padded formats, csr the packed one.
struct list_geometry {
  std::array<double, 3> lo{};
  std::array<double, 3> hi{};
  std::array<bool, 3> periodic{true, true, true};
  unsigned dims = 3;
  double cutoff = 0;
  double skin = 0;
  bool half = false;  // each pair once, in the row of its lower index
  double reach() const { return cutoff + skin; }
};

// A built list and the scratch its rebuilds reuse (a steady-state rebuild allocates nothing).
struct list_memory {
  memory_kind kind = memory_kind::host;
  list_format format = list_format::column_major;
  std::size_t particles = 0;    // rows: the first `particles` of the `built_over` particles
  std::size_t built_over = 0;   // particles the list was built over (every one a candidate neighbour)
  std::size_t width = 0;        // padded formats: slots per row
  std::size_t entries = 0;      // neighbours stored, all rows
  std::size_t widest = 0;       // the longest row
  std::size_t least_width = 0;  // the width a padded build grows to, or a csr build stages at, at least (reserve_width)
  std::uint64_t builds = 0;     // how many builds this memory has seen
  // Sorts by cell the list queued itself: a build of particles already in its cell order (sorted by
  // the keys of list_cell_keys) skips its sort.
  std::uint64_t cell_sorts = 0;
  // Buffers allocated so far (each with an eighth to spare): a steady-state rebuild adds none.
  mutable std::uint64_t allocations = 0;
  // Builds that changed the row width a refill writes at (padded width, csr staging width): with
  // allocations, what decides whether a captured refill still fits the list (graph_generation).
  std::uint64_t reshapes = 0;
  buffer indices;    // padded: particles x width slots; csr: entries
  buffer counts;     // uint32 per particle
  buffer offsets;    // csr: particles + 1 (uint32)
  buffer reference;  // positions at the last build (3 x double per particle)
  // clusters (the compressed format): indices holds runs (first, end) of candidate particles, offsets
  // the runs of each cluster of 32 particles, points the wrapped positions a traversal filters with
  buffer points;
  std::size_t point_bytes = 0;  // clusters, cluster_pairs: 16 (float positions) or 32 (double)
  std::size_t runs = 0;         // clusters: runs, all clusters
  std::size_t candidates = 0;   // clusters: particles a traversal tests, all rows
  // csr in GPU memory: the row width a rebuild stages its rows at (the last widest row and 8 more;
  // 0 before the first build): rebuilds then test each pair once instead of counting first
  std::size_t staged_width = 0;
  std::size_t staged_chunk = 0;  // csr in GPU memory: rows per staging chunk the build allocated for (refill's)
  // scratch of a build
  buffer keys, ids, sorted_keys, sorted_ids, cell_points, own_points, cell_start, cell_end, temp, words;
  buffer staged;  // csr in GPU memory: a chunk of rows at staged_width, before they are packed
  // clusters: per-cluster counts, and the next runs and their offsets, copied into indices and
  // offsets at the end of a build (a build that throws part-way leaves the previous list whole)
  buffer boxes, candidate_offsets, candidate_ids, candidate_sorted, cluster_counts, next_offsets, next_runs;
  // cluster_pairs (neighbors/cluster_pairs.hpp): indices holds the entries (listed clusters), offsets
  // each cluster's row, slots each slot's particle, slot_of each particle's slot; points the slots'
  // positions during a build, column_clusters each column's first cluster
  buffer slots, slot_of, column_clusters;
  std::size_t clusters = 0;      // cluster_pairs: clusters of 8 slots
  std::size_t pair_entries = 0;  // cluster_pairs: entries (pairs of clusters), all rows
  std::size_t pair_room = 0;     // cluster_pairs in GPU memory: entries per row its counting pass keeps (candidate_ids)
};

// The first `count` 32-bit words of a list buffer, copied to the host (verlet_list::rows_on_host).
// Queued on `stream` after the work there, which it waits for.
inline std::vector<std::uint32_t> words_on_host(list_memory const& m, buffer const& b, std::size_t count,
                                                void* stream) {
  std::vector<std::uint32_t> out(count);
  if (count > 0) copy_bytes(memory_kind::host, out.data(), m.kind, b.data(), count * sizeof(std::uint32_t), stream);
  return out;
}

// What verlet_list::check says of a refill that found a row wider than the width it wrote rows at.
inline std::string row_too_wide(std::size_t widest, std::size_t width) {
  return "verlet_list::check: a refill found a row of " + std::to_string(widest) +
         " neighbours, more than the list's width of " + std::to_string(width) +
         ", so rows were cut to the width and forces summed over them since missed pairs; build() grows the width "
         "(redo the steps since the last check), and reserve_width() keeps room for rows that grow between builds";
}

// A cluster list's room, in candidates and in runs: what a refill writes at most (the rest is cut;
// verlet_list::check() compares a refill's counts with these). A refill sorts its candidates with
// CUB's segmented radix sort, whose item count is an int: never more than 2^31 - 1 (a build sorts
// with a 64-bit count, so only a refill of so many candidates is cut, and check() says so).
inline std::size_t candidate_memory(list_memory const& m) {  // the candidates the buffers hold (a build's sort)
  return std::min(m.candidate_ids.size(), m.candidate_sorted.size()) / sizeof(std::uint32_t);
}
inline std::size_t candidate_capacity(list_memory const& m) {
  return std::min<std::size_t>(candidate_memory(m), 0x7fffffffu);
}
inline std::size_t run_capacity(list_memory const& m) { return m.indices.size() / (2 * sizeof(std::uint32_t)); }

// Builds the list of `n` particles whose positions are `position`, rows for the first `rows` of
// them (every one a candidate neighbour), into m (memory of m.kind,
// work on `stream`; returns when the list is complete). Checks first, writes nothing on bad
// input: coalesce::error naming the first particle that is not finite or lies outside an open
// axis, or the geometry that is wrong.
void build_list(list_memory& m, list_format format, position_columns const& position, std::size_t n, std::size_t rows,
                list_geometry const& g, void* stream);
// A rebuild of a padded list that reads nothing back, waits for nothing and allocates nothing, so
// that it can be captured into a CUDA graph: the count, rows and geometry of the last build_list,
// rows filled at the list's width. What build_list checks on the host stays in the list's status
// words (list_status below): the first bad particle, the widest row (a row over the width keeps the
// width's first entries, and its count says the width). In host memory it is build_list.
void refill_list(list_memory& m, position_columns const& position, std::size_t n, std::size_t rows,
                 list_geometry const& g, void* stream);
// What the last build or refill found (GPU memory: one read-back, after waiting for `stream`).
struct list_status {
  std::size_t first_bad = 0;        // the first particle not finite or outside an open axis; n when none
  std::size_t widest = 0;           // the longest row, counted in full
  std::size_t entries = 0;          // neighbours, all rows, counted in full
  std::size_t most_entries = 0;     // csr (cluster_pairs): the most entries any refill since the build found
  std::size_t most_candidates = 0;  // clusters: the most candidates any refill since the build found
  std::size_t most_runs = 0;        // clusters: the most runs any refill since the build found
  std::size_t tested = 0;           // clusters (cluster_pairs): the particles (pairs) the last refill's rows test
};
list_status read_list_status(list_memory const& m, void* stream);
// Sets a CUDA graph conditional handle to 1 when some particle moved more than `threshold` since the
// last build or refill, to 0 otherwise (queued on `stream`; GPU memory only).
void set_condition_if_moved(list_memory const& m, position_columns const& position, std::size_t n,
                            list_geometry const& g, double threshold, std::uint64_t condition, void* stream);
// Rows a csr rebuild in GPU memory stages per chunk (0, the default: chosen from the row width so a
// chunk's staged rows take about 256 MiB). Tests set a few hundred to cross chunk boundaries at
// small sizes. Returns the previous setting.
std::size_t set_staged_chunk_rows(std::size_t rows);
// The cell each of the n particles falls in on the grid a build of this geometry bins them into,
// as sort keys: keys (n uint32 in memory of m.kind, written on `stream`), the cells per axis into
// `grid`; returns the number of cells. A stable sort by these keys puts the particles in the
// list's cell order, and a build of them then skips its own sort (one sort serves both). Checks
// first: coalesce::error for a bad geometry or a particle that is not finite or outside an open
// axis (naming it).
std::uint64_t list_cell_keys(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                             std::uint32_t* keys, std::array<std::uint32_t, 3>& grid, void* stream);
// The same checks, then the compressed cluster format (neighbors/clusters.hpp) into m.
void build_cluster_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                        void* stream);
// The same rebuild for CUDA graphs (GPU memory): the last build's particle count and box, queued
// into the memory the build left, nothing read back, waited for or allocated; candidates or runs
// past that memory are cut and read_list_status says so. In host memory it is build_cluster_list.
void refill_cluster_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                         void* stream);
// A cluster list's rows as its traversal yields them, run where the list lives (the GPU's
// arithmetic for a GPU list), returned to the host: row i is indices[offsets[i], offsets[i + 1]).
void cluster_rows(list_memory const& m, list_geometry const& g, std::vector<std::uint32_t>& offsets,
                  std::vector<std::uint32_t>& indices, void* stream);

// The same checks, then the cluster-pair format (neighbors/cluster_pairs.hpp) into m.
void build_pair_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                     void* stream);
// The same rebuild for CUDA graphs (GPU memory): the last build's particle count and box, queued
// into the memory the build left (its clusters, the most a column split can make; its entries and an
// eighth), nothing read back, waited for or allocated; rows past the entries' memory are cut and
// read_list_status says so. In host memory it is build_pair_list.
void refill_pair_list(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                      void* stream);
// The cell of the cluster-pair build's grid each particle falls in, as sort keys (list_cell_keys'
// contract): sorted by them the particles are in the list's cluster order.
std::uint64_t pair_list_cell_keys(list_memory& m, position_columns const& position, std::size_t n,
                                  list_geometry const& g, std::uint32_t* keys, std::array<std::uint32_t, 3>& grid,
                                  void* stream);

// The largest distance (minimum image) any particle moved since the list was built.
double max_displacement(list_memory const& m, position_columns const& position, std::size_t n, list_geometry const& g,
                        void* stream);

}  // namespace coalesce::detail
