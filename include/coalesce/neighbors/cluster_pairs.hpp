// coalesce/neighbors/cluster_pairs.hpp - the cluster-pair list format (as GROMACS's nbnxm): the
// particles grouped into spatial clusters of 8 on a grid of the list's own, and for each cluster
// the clusters within reach of it, 4 bytes per pair of clusters instead of 4 per pair of particles.
//
//   // d: a coalesce::device_vector<Particle> (any layout)
//   coalesce::box const domain{.lo = {0, 0, 0}, .hi = {L, L, L}, .edges = coalesce::boundary::periodic};
//   coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = 2.5, .skin = 0.3, .half = true});
//   coalesce::reorder_plan plan;  // the particles in the list's cluster order: its loads coalesce
//   coalesce::sort_by_key(d, list.cell_keys(d, &Particle::pos, domain, plan), plan);
//   list.build(d, &Particle::pos, domain);
//   // then coalesce::compute_pairs(d, &Particle::pos, &Particle::force, list.view(d), domain, law, table)
//
// The grid: columns along every axis but the last (about as wide as a cluster of 8 particles at the
// particles' mean density), and in each column the particles sorted along the last axis; each
// column's particles, in that order, fill clusters of 8 slots (the last one of a column padded with
// empty slots). A cluster's bounding box is then about as long as it is wide. The search: for each
// cluster, the clusters of the columns within reach whose bounding boxes come within cutoff + skin
// of its own and that hold at least one pair of particles within cutoff + skin (the exact test,
// minimum image along periodic axes). A half list keeps each pair of clusters once (the higher
// cluster in the row of the lower; a cluster's own pairs in its row, each once).
//
// The pair engine (pair_engine.hpp) runs a warp per cluster over this list on the GPU: 8 particles
// of the cluster against 8 of each listed cluster in two steps of 32 pairs, the reactions summed
// across the warp before one atomic per particle (Newton's third law on a half list); on the CPU a
// cluster's 8 particles are the 8 lanes of a SIMD loop (cluster_pair_loop_host.hpp). Any other
// traversal (for_each_neighbor, count, neighbor: list_traits.hpp) yields a superset: every particle
// of the listed clusters, in reach or not, so a body keeps its own cutoff test (compute_pairs has
// one). `entries()` counts the pairs within reach at the build, `candidates()` the pairs a traversal
// evaluates, `fill()` their ratio.
//
// Sorting the particles by `cell_keys` puts them in the list's cluster order, so that a cluster's 8
// particles are neighbours in memory too (a build of sorted particles also skips its own sort).
//
// refill() (CUDA graphs, docs/neighbors.md) runs the build's steps into the memory the build left:
// the build keeps room for the most clusters its columns can make ((n + 7 columns) / 8: clusters
// past the columns' own are empty, and the view covers them all), so only the entries can run out
// (the build's and an eighth: particles crowding together); check() says so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "list_format.hpp"
#include "list_ops.hpp"
#include "list_traits.hpp"

namespace coalesce {

// The format tag, beside padded_columns, padded_rows, csr and clusters.
struct cluster_pairs {
  static constexpr std::uint32_t cluster_size = 8;          // slots per cluster
  static constexpr std::uint32_t empty_slot = 0xffffffffu;  // a padding slot holds no particle
};

template <class Format> struct verlet_list_ref;

// The handle kernels take by value (verlet_list<cluster_pairs>::view()).
template <> struct verlet_list_ref<cluster_pairs> {
  std::uint32_t const* row_offsets = nullptr;  // cluster c: its entries [row_offsets[c], row_offsets[c + 1])
  std::uint32_t const* entries = nullptr;      // the listed clusters
  std::uint32_t const* slots = nullptr;        // slot s (of cluster s / 8): its particle, or empty_slot
  std::uint32_t const* slot_of = nullptr;      // particle i: its slot
  std::size_t particles = 0;                   // rows: the particles the list was built over
  std::size_t clusters = 0;                    // clusters of 8 slots
  bool half = false;                           // each pair of clusters once

  // The number of rows (particles).
  COALESCE_HOST_DEVICE std::size_t size() const { return particles; }

  // body(j) for every particle j of the clusters listed in i's cluster's row (i's own cluster: the
  // slots after i's on a half list, every other one on a full list): a superset of i's neighbours.
  template <class Body> COALESCE_HOST_DEVICE COALESCE_INLINE void visit(std::size_t i, Body& body) const {
    std::uint32_t const own = slot_of[i];
    std::uint32_t const c = own / cluster_pairs::cluster_size;
    std::uint32_t const end = row_offsets[c + 1];
    for (std::uint32_t e = row_offsets[c]; e < end; ++e) {
      std::uint32_t const jc = entries[e];
      for (std::uint32_t k = 0; k < cluster_pairs::cluster_size; ++k) {
        std::uint32_t const s = jc * cluster_pairs::cluster_size + k;
        std::uint32_t const j = slots[s];
        if (j == cluster_pairs::empty_slot) continue;
        if (jc == c && (half ? s <= own : s == own)) continue;
        body(j);
      }
    }
  }
  // The members every format's handle has; the superset above, so count(i) is the number of pairs
  // a traversal of i's row evaluates, not of its neighbours. neighbor(i, k) walks the row: slow in
  // a loop over k (use for_each_neighbor).
  COALESCE_HOST_DEVICE std::uint32_t count(std::size_t i) const {
    std::uint32_t n = 0;
    auto one = [&n](std::uint32_t) { ++n; };
    visit(i, one);
    return n;
  }
  // The k-th particle of i's traversal (see count).
  COALESCE_HOST_DEVICE std::uint32_t neighbor(std::size_t i, std::uint32_t k) const {
    std::uint32_t seen = 0, found = cluster_pairs::empty_slot;
    auto kth = [&](std::uint32_t j) {
      if (seen++ == k) found = j;
    };
    visit(i, kth);
    return found;
  }
};

// How algorithms read a cluster-pair list (list_traits.hpp): its traversal visits the superset above.
template <> struct list_traits<verlet_list_ref<cluster_pairs>>
    : detail::member_list_traits<verlet_list_ref<cluster_pairs>> {
  // body(j) for every particle of i's traversal.
  template <class Body>
  COALESCE_HOST_DEVICE COALESCE_INLINE static void for_each(ref const& l, std::size_t i, Body& body) {
    l.visit(i, body);
  }
};

namespace detail {

inline verlet_list_ref<cluster_pairs> pair_list_ref(list_memory const& m, list_geometry const& g) {
  verlet_list_ref<cluster_pairs> r;
  r.row_offsets = reinterpret_cast<std::uint32_t const*>(m.offsets.data());
  r.entries = reinterpret_cast<std::uint32_t const*>(m.indices.data());
  r.slots = reinterpret_cast<std::uint32_t const*>(m.slots.data());
  r.slot_of = reinterpret_cast<std::uint32_t const*>(m.slot_of.data());
  r.particles = m.particles;
  r.clusters = m.clusters;
  r.half = g.half;
  return r;
}

// The traversal's rows with the list's arrays copied to the host first (a GPU list).
inline std::vector<std::vector<std::uint32_t>> pair_list_host_rows(list_memory const& m, list_geometry const& g,
                                                                   void* stream) {
  std::vector<std::vector<std::uint32_t>> rows(m.particles);
  if (m.particles == 0) return rows;
  std::vector<std::uint32_t> const offsets = words_on_host(m, m.offsets, m.clusters + 1, stream);
  std::vector<std::uint32_t> const entries = words_on_host(m, m.indices, offsets.back(), stream);
  std::vector<std::uint32_t> const slots = words_on_host(m, m.slots, m.clusters * cluster_pairs::cluster_size, stream);
  std::vector<std::uint32_t> const slot_of = words_on_host(m, m.slot_of, m.particles, stream);
  verlet_list_ref<cluster_pairs> r = pair_list_ref(m, g);
  r.row_offsets = offsets.data();
  r.entries = entries.data();
  r.slots = slots.data();
  r.slot_of = slot_of.data();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto push = [&](std::uint32_t j) { rows[i].push_back(j); };
    r.visit(i, push);
  }
  return rows;
}

}  // namespace detail

template <> struct detail::list_format_ops<cluster_pairs> {
  static constexpr char const* name = "cluster_pairs";
  static constexpr bool padded = false;
  static constexpr bool reserves_width = false;
  static constexpr bool tests_candidates = true;  // candidates(): the pairs a traversal evaluates

  static void build(list_memory& m, position_columns const& p, std::size_t n, std::size_t rows, list_geometry const& g,
                    void* stream) {
    if (rows != n) {
      throw_error(
          "verlet_list<cluster_pairs>::build: the cluster-pair format has a row for every particle; build it "
          "without list_rows, or use padded_columns, padded_rows or csr");
    }
    build_pair_list(m, p, n, g, stream);
  }
  // In GPU memory the build's steps queued into its memory (refill_pair_list); in host memory a build.
  static void refill(list_memory& m, position_columns const& p, std::size_t n, std::size_t, list_geometry const& g,
                     void* stream) {
    refill_pair_list(m, p, n, g, stream);
  }
  static std::uint64_t cell_keys(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g,
                                 std::uint32_t* keys, std::array<std::uint32_t, 3>& grid, void* stream) {
    return pair_list_cell_keys(m, p, n, g, keys, grid, stream);
  }
  static verlet_list_ref<cluster_pairs> view(list_memory const& m, list_geometry const& g) {
    return pair_list_ref(m, g);
  }
  static std::vector<std::vector<std::uint32_t>> host_rows(list_memory const& m, list_geometry const& g, void* stream) {
    return pair_list_host_rows(m, g, stream);
  }
  // Entries and row offsets, and the slots a traversal reads particles through.
  static std::size_t bytes(list_memory const& m) {
    if (m.particles == 0) return 0;
    return (m.pair_entries + m.clusters + 1 + m.clusters * cluster_pairs::cluster_size) * sizeof(std::uint32_t);
  }
  static double fill(list_memory const& m) {
    if (m.candidates == 0) return 1.0;
    return static_cast<double>(m.entries) / static_cast<double>(m.candidates);
  }
  // A refill's entries against the memory its build left.
  static bool check_refills(list_memory& m, list_status const& status, std::string& why) {
    m.candidates = status.tested;  // fill() compares the refill's pairs within reach with these
    std::size_t const room = m.indices.size() / sizeof(std::uint32_t);
    if (status.most_entries <= room) return false;
    why = "verlet_list::check: a cluster_pairs refill found " + std::to_string(status.most_entries) +
          " pairs of clusters, more than the " + std::to_string(room) +
          " its memory holds (a build leaves an eighth more than it found), so rows lost clusters and forces summed "
          "over the "
          "list since missed pairs; build() makes room (redo the steps since the last check); particles crowded "
          "together since the build";
    return true;
  }
};

}  // namespace coalesce
