// coalesce/neighbors/verlet_list.hpp - neighbour lists built by the library from the particles'
// cells, in a format chosen by one type like a layout, read by one traversal for every format.
//
//   // d: a coalesce::device_vector<Particle> (any layout)
//   coalesce::box const domain{.lo = {0, 0, 0}, .hi = {L, L, L}, .edges = coalesce::boundary::periodic};  // per axis: {...}
//   coalesce::verlet_list<coalesce::padded_columns> list({.cutoff = 2.5, .skin = 0.3});
//   list.build(d, &Particle::pos, domain);                               // cells, sort, rows
//   auto nl = list.view(d);     // by value into kernels; throws if d was reordered since the build
//   auto v = d.view();
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE (std::size_t i) {
//     coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { v[i][&Particle::mass] += 0 * j; });
//   });
//   if (list.needs_rebuild(d, &Particle::pos)) list.build(d, &Particle::pos, domain);  // moved > skin/2
//   list.refill(d, &Particle::pos, domain);   // the same rebuild, nothing read back: for CUDA graphs
//   list.check();                             // what refills found (a cut row, a bad position): throws
//   // One sort for particles and list: sorted by the list's own cells, the build sorts nothing.
//   coalesce::reorder_plan plan;
//   coalesce::sort_by_key(d, list.cell_keys(d, &Particle::pos, domain, plan), plan);
//   list.build(d, &Particle::pos, domain);
//
// Formats (the list's bytes are a layout decision, like the particles'), one file each:
//   padded_columns  entry k of particle i at indices[k * n + i]: a warp's loads of slot k coalesce
//   padded_rows     entry k of particle i at indices[i * width + k]: one particle's row contiguous
//                   (both padded_formats.hpp)
//   csr             the neighbours of i at indices[offsets[i], offsets[i + 1]): no padding (csr_format.hpp)
//   clusters        runs of candidate indices per cluster of 32 particles, filtered by distance
//                   as they are read: a few bytes per particle (clusters.hpp)
//   cluster_pairs   clusters of 8 on a grid of the list's own, each with the clusters within reach:
//                   what the pair engine's warp-per-cluster loop reads (cluster_pairs.hpp)
// Every format's view is a neighbour list to the traversal (list_traits.hpp), as a list of the
// user's is (user_lists.hpp). Padded lists are coalesce::neighbor_list descriptions too
// (as_neighbor_list()): remap, the analysis and the advisor read them as they read a list of the user's.
//
// Rows for the first particles only (a rank's own, with its ghosts behind them as neighbours):
//   list.build(d, &Particle::pos, domain, coalesce::list_rows{.owned = owned});   // size() == owned
//
// What is in a row: every particle j != i closer than cutoff + skin (the reach), with the
// minimum image along periodic axes; a half list (.half = true) keeps each pair once, in the row
// of its lower index (kernels that apply Newton's third law). Rows are in a fixed order (the 27
// cells around i's own, then ascending index), so a force sum is the same run to run and host and
// GPU memory hold the same list. A row is never truncated: a padded list grows its width when a
// row outgrows it and fills again, and reports the widest row and its fill.
//
// Bad input writes nothing and throws coalesce::error: a position that is not finite or lies
// outside an open axis (naming the particle), a cutoff that is not positive, a negative skin,
// cutoff + skin over half a periodic box length. An empty set gives an empty list (a rank may own
// no particle). GPU memory: the build runs on `stream` and returns when the list is complete.
// refill() only queues (CUDA graphs, docs/neighbors.md): its checks wait for check().
//
// Streams (the one rule of coalesce/memory/stream.hpp): every call that runs work takes a stream
// last, coalesce::default_stream when left out.
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../memory/graph.hpp"
#include "../memory/index_arrays.hpp"
#include "../memory/stream.hpp"
#include "../memory/vector.hpp"
#include "../reorder/keys.hpp"
#include "cluster_pairs.hpp"
#include "clusters.hpp"
#include "csr_format.hpp"
#include "list_format.hpp"
#include "list_ops.hpp"
#include "list_traits.hpp"
#include "padded_formats.hpp"
#include "user_lists.hpp"

namespace coalesce {

// What a list holds: pairs closer than cutoff + skin; half: each pair once.
struct list_params {
  double cutoff = 0;  // the pair law's largest cutoff
  double skin = 0;    // the margin that lets the list serve until a particle moved skin / 2
  bool half = false;  // each pair once (Newton's third law in the loop); else in both rows
};

// Which particles get a row: the first `owned` (default: every one). The others are candidate
// neighbours only: a rank's ghosts, which are neighbours of its own particles and need no row of
// their own. The traversal's size() is then `owned`. The same spelling as halo_options::owned.
struct list_rows {
  static constexpr std::size_t every_particle = static_cast<std::size_t>(-1);  // owned's default: all rows
  std::size_t owned = every_particle;                                          // the particles [0, owned) get a row
};

// The handle kernels take by value (verlet_list::view()): count(i) neighbours of particle i,
// neighbor(i, k) the k-th, and for_each_neighbor(view, i, body) (list_traits.hpp) for every format.
// Each format's file defines its own (padded_formats.hpp, csr_format.hpp, clusters.hpp).

template <class Format, class Space = device> class verlet_list {
  static_assert(
      detail::list_format_tag<Format>,
      "coalesce: a verlet_list's format is coalesce::padded_columns, padded_rows, csr, clusters or cluster_pairs (a "
      "format is a tag with detail::list_format_ops, in a file of its own: neighbors/list_format.hpp)");
  using ops = detail::list_format_ops<Format>;
  static constexpr bool is_padded = ops::padded;

 public:
  using format_type = Format;  // padded_columns, padded_rows, csr, clusters or cluster_pairs
  using space_type = Space;    // the memory the list (and its particles) live in
  static constexpr detail::memory_kind kind = detail::kind_of_space<Space>;  // Space as a memory kind

  // An empty list for pairs within params.cutoff + params.skin; build() fills it.
  explicit verlet_list(list_params params) : params_(params) { memory_.kind = kind; }

  // Builds the list of `particles` (any layout) whose position is the member (path) `position`,
  // in `domain` (periodic or open per axis as its edges say; `periodic` overrides that per axis).
  template <class T, class L, class Pos>
  void build(vector<T, L, Space> const& particles, Pos const& position, box const& domain, stream on = default_stream) {
    build(particles, position, domain, domain.periodic_axes(), on);
  }
  // The same with periodicity per axis given (it overrides the box's edges).
  template <class T, class L, class Pos> void build(vector<T, L, Space> const& particles, Pos const& position,
                                                    box const& domain, std::array<bool, 3> periodic,
                                                    stream on = default_stream) {
    build(particles, position, domain, periodic, list_rows{}, on);
  }
  // Rows for the first rows.owned particles only (padded and csr formats); every particle is
  // still a candidate neighbour.
  template <class T, class L, class Pos> void build(vector<T, L, Space> const& particles, Pos const& position,
                                                    box const& domain, list_rows rows, stream on = default_stream) {
    build(particles, position, domain, domain.periodic_axes(), rows, on);
  }
  // Rows for the first rows.owned particles, periodicity per axis given.
  template <class T, class L, class Pos> void build(vector<T, L, Space> const& particles, Pos const& position,
                                                    box const& domain, std::array<bool, 3> periodic, list_rows rows,
                                                    stream on = default_stream) {
    build_from(particles, position, domain, periodic, rows, on);
  }

  // One sort for the particles and the list: the cell each particle falls in on the grid build()
  // bins them into (this list's cutoff and skin, this box and particle count), as keys computed
  // through `plan` on its stream. coalesce::sort_by_key(particles, keys, plan) then puts the
  // particles in the list's cell order, and the next build() finds them so and skips its own sort
  // (the rows are the same either way; cell_sorts() counts the sorts the list did itself);
  // coalesce::cell_offsets(plan, keys) gives each cell's first particle after the sort. Checks as
  // build() does (a bad position throws, naming the particle; the particles are not touched).
  template <class T, class L, class Pos>
  [[nodiscard]] key_array<std::uint32_t, Space> cell_keys(vector<T, L, Space> const& particles, Pos const& position,
                                                          box const& domain, reorder_plan& plan) {
    return cell_keys(particles, position, domain, domain.periodic_axes(), plan);
  }
  template <class T, class L, class Pos>
  [[nodiscard]] key_array<std::uint32_t, Space> cell_keys(vector<T, L, Space> const& particles, Pos const& position,
                                                          box const& domain, std::array<bool, 3> periodic,
                                                          reorder_plan& plan) {
    auto const columns = detail::readable_position_columns_of(particles.storage(), position);
    detail::list_geometry const g{domain.lo,      domain.hi,    periodic,    columns.dims,
                                  params_.cutoff, params_.skin, params_.half};
    std::size_t const n = particles.size();
    auto* const keys = static_cast<std::uint32_t*>(detail::keys_for_writing(plan, kind, sizeof(std::uint32_t), n));
    key_array<std::uint32_t, Space> out;
    if constexpr (requires { &ops::cell_keys; }) {  // a format with a grid of its own
      out.cells = ops::cell_keys(memory_, columns, n, g, keys, out.grid, plan.stream().handle());
    } else {
      out.cells = detail::list_cell_keys(memory_, columns, n, g, keys, out.grid, plan.stream().handle());
    }
    out.data = keys;
    out.size = n;
    out.end_bit = std::max(1, static_cast<int>(std::bit_width(out.cells - 1)));
    out.generation = detail::keys_written(plan);
    return out;
  }

  // A rebuild for CUDA graphs (every format): the particle count, rows and box of the last build(),
  // rows filled again into the memory the list has, and nothing read back, waited for or allocated,
  // so stream capture records it and every replay rebuilds. What build() checks before returning,
  // refill leaves in the list's status for check(): a position that is not finite or outside an
  // open axis, a row wider than the width (padded: width(); csr: the width its rows are staged at,
  // the last build's widest row + 8 or more), for csr more entries than its memory holds (the last
  // build's and an eighth), for clusters more candidates or runs than its memory holds (the last
  // build's twice over), for cluster_pairs more pairs of clusters than its memory holds (the last
  // build's and an eighth; its clusters never run out: cluster_pairs.hpp). Such a row keeps its first entries and count(i) says how many (a
  // clusters row loses the candidates past the memory): a traversal never reads past a row, but that
  // row misses neighbours. A clusters refill does not check the particles' spatial order (a build
  // refuses a random order; a refill of shuffled particles runs out of room, and check() says so).
  // In host memory (and without CUDA) it is build(). widest(), entries(), fill() and candidates()
  // are those of the last build() or check(); bytes() that of the last build(). A graph captured
  // before a build() refills the rebuilt list when graph_generation() did not change (no buffer
  // moved, no width changed); otherwise capture again.
  // reserve_width() keeps room for rows that grow between builds.
  template <class T, class L, class Pos> void refill(vector<T, L, Space> const& particles, Pos const& position,
                                                     box const& domain, stream on = default_stream) {
    refill(particles, position, domain, domain.periodic_axes(), list_rows{}, on);
  }
  // The same with periodicity per axis and rows given.
  template <class T, class L, class Pos> void refill(vector<T, L, Space> const& particles, Pos const& position,
                                                     box const& domain, std::array<bool, 3> periodic, list_rows rows,
                                                     stream on = default_stream) {
    auto const columns = detail::readable_position_columns_of(particles.storage(), position);
    detail::list_geometry const g{domain.lo,      domain.hi,    periodic,    columns.dims,
                                  params_.cutoff, params_.skin, params_.half};
    std::size_t const n = particles.size();
    std::size_t const row_count = rows.owned == list_rows::every_particle ? n : rows.owned;
    bool const same_box =
        g.lo == geometry_.lo && g.hi == geometry_.hi && g.periodic == geometry_.periodic && g.dims == geometry_.dims;
    if (!built_ || n != memory_.built_over || row_count != memory_.particles || !same_box) {
      detail::throw_error(
          "verlet_list::refill: refill reuses the last build's cells, width and buffers, so it needs a "
          "build() of the same particle count, rows and box first (built: " +
          std::to_string(memory_.built_over) + " particles, " + std::to_string(memory_.particles) +
          " rows; now: " + std::to_string(n) + " particles, " + std::to_string(row_count) + " rows" +
          (same_box ? "" : ", another box") + "); call build() outside the graph after a change, and capture again");
    }
    if (cut_) {
      detail::throw_error(
          "verlet_list::refill: check() found rows cut at the width or a bad position; build() "
          "the list (it grows the width and checks the positions) before refilling it");
    }
    ops::refill(memory_, columns, n, row_count, g, on.handle());
    order_ = particles.order_stamp();
    refilled_ = true;
  }

  // Reads what every refill since the last build() found (GPU memory: one read-back, waiting for
  // `on`) and throws coalesce::error when a row outgrew the width (forces summed over the list
  // since then missed pairs: build() grows it, then capture again and redo those steps) or a
  // position was not finite or outside an open axis. After such an error view(particles), refill
  // and as_neighbor_list refuse until build(). Nothing to read for a list never refilled.
  void check(stream on = default_stream) {
    if (!refilled_) return;
    detail::list_status const status = detail::read_list_status(memory_, on.handle());
    if (status.first_bad < memory_.built_over) {
      cut_ = true;
      detail::throw_error("verlet_list::check: particle " + std::to_string(status.first_bad) +
                          " was not finite or lay outside an open axis at a refill, so the list is wrong; fix the "
                          "position (migrate or wrap it into the box) and build() the list");
    }
    memory_.widest = status.widest;
    memory_.entries = status.entries;
    // In host memory (and without CUDA) refill was build(): its rows are whole, its memory sized.
    if constexpr (!(device_is_gpu && kind == detail::memory_kind::device)) return;
    std::string why;
    if (ops::check_refills(memory_, status, why)) {
      cut_ = true;
      detail::throw_error(why);
    }
  }

  // Rows get at least `slots` slots (rounded up to 8) from the next build() on, however short they
  // are (padded: width(); csr: the width a GPU rebuild or refill stages rows at): room for rows
  // that grow between the builds of a captured graph.
  void reserve_width(std::size_t slots) requires(ops::reserves_width) { memory_.least_width = slots; }

  // Inside a CUDA graph capture (coalesce/memory/graph.hpp): sets `condition` to 1 when some
  // particle moved more than skin / 2 since the last build or refill, 0 otherwise (one fused pass
  // and a one-thread kernel, queued on `on`; nothing read back), so that
  // capture_if(on, condition, [&] { list.refill(...); }) rebuilds only then. GPU memory only.
  template <class T, class L, class Pos> void set_rebuild_condition(vector<T, L, Space> const& particles,
                                                                    Pos const& position, graph_condition condition,
                                                                    stream on = default_stream) const {
    if constexpr (!(device_is_gpu && kind == detail::memory_kind::device)) {
      detail::throw_error(
          "verlet_list::set_rebuild_condition: graph conditions are set by a GPU kernel; this list is in host "
          "memory: ask needs_rebuild() instead");
    } else {
      check_current(particles, "verlet_list::set_rebuild_condition");
      auto const columns = detail::readable_position_columns_of(particles.storage(), position);
      detail::set_condition_if_moved(memory_, columns, particles.size(), geometry_, 0.5 * params_.skin,
                                     condition.handle, on.handle());
    }
  }

 private:
  template <class T, class L, class Pos> void build_from(vector<T, L, Space> const& particles, Pos const& position,
                                                         box const& domain, std::array<bool, 3> periodic,
                                                         list_rows rows, stream on) {
    auto const columns = detail::readable_position_columns_of(particles.storage(), position);
    detail::list_geometry const g{domain.lo,      domain.hi,    periodic,    columns.dims,
                                  params_.cutoff, params_.skin, params_.half};
    std::size_t const n = particles.size();
    std::size_t const row_count = rows.owned == list_rows::every_particle ? n : rows.owned;
    if (row_count > n) {
      detail::throw_error("verlet_list::build: rows for the first " + std::to_string(row_count) + " particles of " +
                          std::to_string(n) + "; list_rows::owned is at most the particle count");
    }
    ops::build(memory_, columns, n, row_count, g, on.handle());
    geometry_ = g;  // after the build: a refused build leaves the list and its geometry as they were
    built_ = true;
    cut_ = false;  // (refilled_ stays: a graph captured before may still refill; check() reads on)
    order_ = particles.order_stamp();
  }

 public:
  // True when the list must be rebuilt before its next use: never built, another particle
  // count, or some particle moved more than skin / 2 since the build (then a pair that was
  // beyond cutoff + skin may have come within the cutoff). One fused pass, one read-back.
  template <class T, class L, class Pos>
  bool needs_rebuild(vector<T, L, Space> const& particles, Pos const& position, stream on = default_stream) const {
    if (!built_ || cut_ || particles.size() != memory_.built_over || particles.order_stamp() != order_) return true;
    return max_displacement(particles, position, on) > 0.5 * params_.skin;
  }
  // The largest distance a particle moved since the build (nearest image along periodic axes).
  template <class T, class L, class Pos>
  double max_displacement(vector<T, L, Space> const& particles, Pos const& position, stream on = default_stream) const {
    check_current(particles, "verlet_list::max_displacement");
    auto const columns = detail::readable_position_columns_of(particles.storage(), position);
    return detail::max_displacement(memory_, columns, particles.size(), geometry_, on.handle());
  }

  // The handle, after checking that `particles` are in the order the list was built for: the same
  // count, and not permuted by the library since (sort_by_key, apply, migrate, erase: their
  // order_stamp()). A list read after a reorder would pair the wrong particles; this throws
  // instead. view() without particles skips the check (the caller keeps track).
  template <class T, class L> verlet_list_ref<Format> view(vector<T, L, Space> const& particles) const {
    check_current(particles, "verlet_list::view");
    return view();
  }

  // The handle without the order check.
  verlet_list_ref<Format> view() const { return ops::view(memory_, geometry_); }

  // A padded list as the description remap, the analysis and the advisor take.
  neighbor_list<std::uint32_t, Space> as_neighbor_list() const requires(is_padded) {
    if (cut_) {
      detail::throw_error(
          "verlet_list::as_neighbor_list: check() found rows cut at the width or a bad position "
          "after a refill; build() the list first");
    }
    if (memory_.particles != memory_.built_over) {
      detail::throw_error("verlet_list::as_neighbor_list: the list has rows for " + std::to_string(memory_.particles) +
                          " of its " + std::to_string(memory_.built_over) +
                          " particles (list_rows), and a neighbor_list description has a row per particle; build "
                          "it without list_rows for remap, the analysis and the advisor");
    }
    neighbor_list<std::uint32_t, Space> out{.indices = reinterpret_cast<std::uint32_t*>(memory_.indices.data()),
                                            .particles = memory_.particles,
                                            .max_neighbors = memory_.width,
                                            .order = Format::order,
                                            .counts = reinterpret_cast<std::uint32_t*>(memory_.counts.data())};
    return out;
  }

  // Every row, copied to the host (checks, output, a host-side traversal of a GPU list) after the
  // work queued on `on`.
  std::vector<std::vector<std::uint32_t>> rows_on_host(stream on = default_stream) const {
    return ops::host_rows(memory_, geometry_, on.handle());
  }

  std::size_t size() const { return memory_.particles; }         // rows (list_rows; by default every particle)
  std::size_t built_over() const { return memory_.built_over; }  // particles, rows or not
  std::size_t entries() const { return memory_.entries; }        // neighbours stored, all rows
  std::size_t widest() const { return memory_.widest; }          // the longest row (after check(): since the build)
  std::size_t width() const { return memory_.width; }            // padded: slots per row (0 otherwise)
  // Padded: the share of slots that hold a neighbour (1 for csr). Clusters: the share of the
  // candidates a traversal tests that are neighbours.
  double fill() const { return ops::fill(memory_); }
  // Clusters: the particles a traversal of every row tests (its neighbours and the rest), at the
  // last build() or check().
  std::size_t candidates() const requires(ops::tests_candidates) { return memory_.candidates; }
  // Bytes of the list a traversal of every row reads (indices plus counts or offsets; for clusters
  // the runs and their offsets, not the positions it filters with: those are the particles' own).
  std::size_t bytes() const { return ops::bytes(memory_); }
  std::uint64_t builds() const { return memory_.builds; }  // builds so far
  // Sorts by cell the list queued itself: one per build of particles that were not in its cell
  // order already (cell_keys + sort_by_key put them so: then a build sorts nothing), one per
  // refill call (a refill always sorts; a captured one counts once, not per replay).
  std::uint64_t cell_sorts() const { return memory_.cell_sorts; }
  // Buffers the list allocated so far. Each holds an eighth more than its build asked for, so
  // rebuilds whose particle count wanders by less than that (ghosts, migration) allocate nothing.
  std::uint64_t allocations() const { return memory_.allocations; }
  // Changes whenever a build moved a buffer (allocations()) or changed the row width a refill
  // writes at (padded: width(); csr: its staging width, which never shrinks): a CUDA graph whose
  // refill was captured at another generation would write into freed memory or at the wrong
  // width. Compare it before and after a build() and capture again when it moved.
  std::uint64_t graph_generation() const { return memory_.allocations + memory_.reshapes; }
  list_params const& params() const { return params_; }  // cutoff, skin, half as given

 private:
  template <class T, class L> void check_current(vector<T, L, Space> const& particles, char const* what) const {
    if (cut_) {
      detail::throw_error(std::string(what) +
                          ": check() found this list's rows cut at the width or a bad position after a refill; "
                          "build() it first");
    }
    if (!built_ || particles.size() != memory_.built_over) {
      detail::throw_error(std::string(what) + ": the list was built for " + std::to_string(memory_.built_over) +
                          " particles (or never built), these are " + std::to_string(particles.size()) +
                          "; build it first");
    }
    if (particles.order_stamp() != order_) {
      detail::throw_error(std::string(what) +
                          ": the particles were reordered (sort_by_key, apply, migrate, erase) since this list "
                          "was built, so its indices name other particles now; build it again first "
                          "(needs_rebuild says so too)");
    }
  }

  list_params params_;
  detail::list_geometry geometry_{};
  detail::list_memory memory_;
  bool built_ = false;
  bool refilled_ = false;    // ever refilled (a captured graph may refill any time): check() reads the status
  bool cut_ = false;         // check() found cut rows or a bad position: build() before use
  std::uint64_t order_ = 0;  // the particles' order_stamp() at the build
};

}  // namespace coalesce
