// coalesce/neighbors/clusters.hpp - the compressed neighbour-list format: for each cluster of 32
// consecutive particles, runs of candidate indices [first, end) instead of one slot per neighbour.
//
//   // d: a coalesce::device_vector<Particle>, sorted along space first (hilbert_keys + sort_by_key)
//   coalesce::box const domain{.lo = {0, 0, 0}, .hi = {L, L, L}, .edges = coalesce::boundary::periodic};
//   coalesce::verlet_list<coalesce::clusters> list({.cutoff = 2.5, .skin = 0.3});
//   list.build(d, &Particle::pos, domain);                   // a few bytes per particle
//   auto nl = list.view(d);
//   auto v = d.view();
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
//     coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { v[i][&Particle::mass] += 0 * j; });
//   });
//
// Why: after a spatial sort the neighbours of a particle are mostly a few runs of nearby indices,
// and the 32 particles of a cluster share them. A padded list spends 4 bytes per neighbour per
// particle (about 350 B at 80 neighbours); the runs of a cluster cost 8 bytes each, shared by 32
// particles. A traversal reads each run's candidates' positions (the list keeps them as of the
// build), keeps those within cutoff + skin in a 32-bit mask, then calls the body for the mask's
// bits: for_each_neighbor yields exactly the pairs the padded formats hold (same reach, same
// minimum image, same rounding), in ascending index order, and the kernel's body is unchanged.
//
// On the GPU a warp traverses its cluster together through a shared-memory tile (cluster_tile.hpp):
// the same pairs, order and rounding, each candidate loaded once per warp.
//
// The price is the candidates: particles within reach of the cluster's bounding box, tested and
// mostly dropped (a body that is not called costs little, a distance test does). The build needs
// particles in a spatial order; on particles in a random order every cluster spans the box, and
// the build refuses them with a message (sort first, or use padded_columns).
//
// Streams (the one rule of coalesce/memory/stream.hpp): every call that runs work takes a stream
// last, coalesce::default_stream when left out.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "cluster_tile.hpp"
#include "list_format.hpp"
#include "list_ops.hpp"
#include "list_traits.hpp"

namespace coalesce {

// The format tag, beside padded_columns, padded_rows (padded_formats.hpp) and csr (csr_format.hpp).
struct clusters {
  static constexpr std::uint32_t cluster_size = 32;  // consecutive particles per cluster: one warp
};
static_assert(clusters::cluster_size == detail::cluster_tile_chunk, "the GPU traversal tiles a cluster per warp");

template <class Format> struct verlet_list_ref;

// The handle kernels take by value (verlet_list<clusters>::view()).
template <> struct verlet_list_ref<clusters> {
  std::uint32_t const* runs = nullptr;               // run r: candidates [runs[2r], runs[2r + 1])
  std::uint32_t const* run_offsets = nullptr;        // cluster c: runs [run_offsets[c], run_offsets[c + 1])
  detail::point4<float> const* points32 = nullptr;   // positions at the build (float positions)
  detail::point4<double> const* points64 = nullptr;  // or these (double positions)
  std::size_t particles = 0;                         // rows: the first particles (list_rows::owned)
  double reach2 = 0;                                 // (cutoff + skin)^2
  double length[3] = {0, 0, 0};                      // box lengths along periodic axes
  bool periodic[3] = {false, false, false};          // axes along which the minimum image applies
  bool half = false;                                 // each pair once, in the row of its lower index

  COALESCE_HOST_DEVICE std::size_t size() const { return particles; }  // rows (particles with a row)

  // body(j) for every j within reach of i, ascending j (the body's own cutoff test stays).
  template <class Body> COALESCE_HOST_DEVICE COALESCE_INLINE void visit(std::size_t i, Body& body) const {
    if (points32 != nullptr) {
      visit_in(points32, static_cast<std::uint32_t>(i), body);
    } else {
      visit_in(points64, static_cast<std::uint32_t>(i), body);
    }
  }

  // The members every format's handle has (verlet_list.hpp), so that a kernel written against
  // count(i) / neighbor(i, k) runs on this format too. Slow: each call tests the cluster's
  // candidates again (about 500 distance tests at the LJ liquid state, against one load from a
  // padded list), and neighbor(i, k) inside a loop over k is quadratic in the row. for_each_neighbor
  // is this format's traversal; use these for a count, a check or a port, not in a force loop.
  COALESCE_HOST_DEVICE std::uint32_t count(std::size_t i) const {
    std::uint32_t n = 0;
    auto one = [&n](std::uint32_t) { ++n; };
    visit_per_thread(i, one);
    return n;
  }
  // The k-th neighbour of i in the traversal's (ascending) order; k < count(i).
  COALESCE_HOST_DEVICE std::uint32_t neighbor(std::size_t i, std::uint32_t k) const {
    std::uint32_t seen = 0, found = 0xffffffffu;
    auto kth = [&](std::uint32_t j) {
      if (seen++ == k) found = j;
    };
    visit_per_thread(i, kth);
    return found;
  }

 private:
  template <class Body> COALESCE_HOST_DEVICE COALESCE_INLINE void visit_per_thread(std::size_t i, Body& body) const {
    if (points32 != nullptr) {
      visit_each(points32, static_cast<std::uint32_t>(i), body);
    } else {
      visit_each(points64, static_cast<std::uint32_t>(i), body);
    }
  }

  template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real separation(Real x, Real q, int a) const {
    return x - detail::nearest_image(x, q, periodic[a], length[a]);  // as the build computes it
  }

  template <class Real, class Body>
  COALESCE_HOST_DEVICE COALESCE_INLINE void visit_in(detail::point4<Real> const* points, std::uint32_t i,
                                                     Body& body) const {
#if defined(__CUDA_ARCH__)
    if (detail::visit_cluster_tiled(*this, points, i, body)) return;  // a warp per cluster (cluster_tile.hpp)
#endif
    visit_each(points, i, body);
  }

  // One thread's traversal of its own particle: no warp collective, no shared memory.
  template <class Real, class Body>
  COALESCE_HOST_DEVICE COALESCE_INLINE void visit_each(detail::point4<Real> const* points, std::uint32_t i,
                                                       Body& body) const {
    detail::point4<Real> const xi = points[i];
    Real const r2 = static_cast<Real>(reach2);
    std::uint32_t const c = i / clusters::cluster_size;
    std::uint32_t const last_run = run_offsets[c + 1];
    for (std::uint32_t r = run_offsets[c]; r < last_run; ++r) {
      // 64-bit: 2 * r and base + 32 must not wrap near 2^32 runs or particles
      std::size_t const end = runs[2 * static_cast<std::size_t>(r) + 1];
      for (std::size_t base = runs[2 * static_cast<std::size_t>(r)]; base < end; base += 32) {
        auto const m = static_cast<std::uint32_t>(end - base < 32 ? end - base : 32);
        std::uint32_t mask = 0;
        for (std::uint32_t k = 0; k < m; ++k) {
          auto const j = static_cast<std::uint32_t>(base + k);
          detail::point4<Real> const q = points[j];
          Real const d2 =
              detail::distance2_unfused(separation(xi.x, q.x, 0), separation(xi.y, q.y, 1), separation(xi.z, q.z, 2));
          bool const keep = d2 < r2 && j != i && (!half || j > i);
          mask |= static_cast<std::uint32_t>(keep) << k;
        }
        while (mask != 0) {
#if defined(__CUDA_ARCH__)
          std::uint32_t const k = static_cast<std::uint32_t>(__ffs(mask) - 1);
#else
          std::uint32_t const k = static_cast<std::uint32_t>(std::countr_zero(mask));
#endif
          mask &= mask - 1;
          body(static_cast<std::uint32_t>(base + k));
        }
      }
    }
  }
};

namespace detail {
// Clusters of n particles (the last one may hold fewer than 32).
COALESCE_HOST_DEVICE inline std::size_t cluster_count_of(std::size_t n) {
  return (n + clusters::cluster_size - 1) / clusters::cluster_size;
}

// The handle over a built list's memory (verlet_list::view(), and the build's own count pass).
inline verlet_list_ref<clusters> cluster_ref(list_memory const& m, list_geometry const& g) {
  verlet_list_ref<clusters> r;
  r.runs = reinterpret_cast<std::uint32_t const*>(m.indices.data());
  r.run_offsets = reinterpret_cast<std::uint32_t const*>(m.offsets.data());
  if (m.point_bytes == sizeof(point4<float>)) {
    r.points32 = reinterpret_cast<point4<float> const*>(m.points.data());
  } else {
    r.points64 = reinterpret_cast<point4<double> const*>(m.points.data());
  }
  r.particles = m.particles;
  r.reach2 = g.reach() * g.reach();
  for (unsigned a = 0; a < 3; ++a) {
    r.periodic[a] = a < g.dims && g.periodic[a];
    r.length[a] = g.hi[a] - g.lo[a];
  }
  r.half = g.half;
  return r;
}
}  // namespace detail

// Its traversal is its own (list_traits.hpp): one filter pass over the cluster's candidates per row,
// where count/neighbor would filter again per neighbour.
template <> struct list_traits<verlet_list_ref<clusters>> : detail::member_list_traits<verlet_list_ref<clusters>> {
  // body(j) for every neighbour j of row i, ascending (visit: on the GPU a warp per cluster).
  template <class Body>
  COALESCE_HOST_DEVICE COALESCE_INLINE static void for_each(ref const& l, std::size_t i, Body& body) {
    l.visit(i, body);
  }
};

template <> struct detail::list_format_ops<clusters> {
  static constexpr char const* name = "clusters";
  static constexpr bool padded = false;
  static constexpr bool reserves_width = false;   // a width a refill writes rows at (reserve_width)
  static constexpr bool tests_candidates = true;  // a traversal filters candidates (candidates())

  static void build(list_memory& m, position_columns const& p, std::size_t n, std::size_t rows, list_geometry const& g,
                    void* stream) {
    if (rows != n) {
      throw_error(
          "verlet_list<clusters>::build: the cluster format has a row for every particle; build it without "
          "list_rows, or use padded_columns, padded_rows or csr");
    }
    build_cluster_list(m, p, n, g, stream);
  }
  static void refill(list_memory& m, position_columns const& p, std::size_t n, std::size_t, list_geometry const& g,
                     void* stream) {
    refill_cluster_list(m, p, n, g, stream);
  }
  static verlet_list_ref<clusters> view(list_memory const& m, list_geometry const& g) { return cluster_ref(m, g); }
  // Its traversal, run where the list lives (the library's).
  static std::vector<std::vector<std::uint32_t>> host_rows(list_memory const& m, list_geometry const& g, void* stream) {
    std::vector<std::uint32_t> offsets, indices;
    cluster_rows(m, g, offsets, indices, stream);
    std::vector<std::vector<std::uint32_t>> rows(m.particles);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      rows[i].assign(indices.begin() + offsets[i], indices.begin() + offsets[i + 1]);
    }
    return rows;
  }
  // The runs and their offsets, not the positions it filters with: those are the particles' own.
  static std::size_t bytes(list_memory const& m) {
    if (m.entries == 0 && m.particles == 0) return 0;
    return m.runs * 2 * sizeof(std::uint32_t) + (cluster_count_of(m.particles) + 1) * sizeof(std::uint32_t);
  }
  // The share of the candidates a traversal tests that are neighbours.
  static double fill(list_memory const& m) {
    if (m.candidates == 0) return 1.0;
    return static_cast<double>(m.entries) / static_cast<double>(m.candidates);
  }
  // A refill's candidates and runs against the memory its build left.
  static bool check_refills(list_memory& m, list_status const& status, std::string& why) {
    m.candidates = status.tested;  // fill() compares the refill's entries with its own tests
    std::size_t const candidate_room = candidate_capacity(m);
    std::size_t const run_room = run_capacity(m);
    if (status.most_candidates <= candidate_room && status.most_runs <= run_room) return false;
    why = "verlet_list::check: a clusters refill found " + std::to_string(status.most_candidates) + " candidates in " +
          std::to_string(status.most_runs) + " runs, more than the " + std::to_string(candidate_room) +
          " candidates and " + std::to_string(run_room) +
          " runs its memory holds (the last build's twice over), so clusters lost candidates and forces summed "
          "over the list since missed pairs; build() makes room (redo the steps since the last check); "
          "particles moved far or out of their spatial order since the build";
    return true;
  }
  template <class Point> static list_arrays<Point> arrays(verlet_list_ref<clusters> const& r) {
    std::size_t const c = cluster_count_of(r.particles);
    list_arrays<Point> a;
    a.offsets = {r.run_offsets, c + 1};
    a.offsets_name = "cluster run offsets";
    a.indices = {r.runs, 2 * std::size_t{r.run_offsets[c]}};
    a.indices_name = "cluster runs";
    if (r.points32 == nullptr) {
      throw_error("analysis::counted_list<clusters>: the list holds double positions; count with float ones");
    }
    a.points = {r.points32, r.particles};
    a.points_name = "cluster points";
    return a;
  }
  // What the warp tile (cluster_tile.hpp) loads: lane i % 32 loads candidate i % 32 of every chunk
  // of the cluster's candidate stream (walking the runs from the chunk's start); the bodies of the
  // neighbours in a chunk follow its load. tests(n): the distance tests, 32 per chunk.
  template <class Arrays, class Body, class Tests> static void counted_traversal(verlet_list_ref<clusters> const& ref,
                                                                                 Arrays const& a, std::size_t i,
                                                                                 Body& body, Tests&& tests) {
    std::vector<std::uint32_t> hits;  // the list's own neighbours of i, ascending
    auto collect = [&](std::uint32_t j) { hits.push_back(j); };
    ref.visit(i, collect);
    std::size_t const c = i / clusters::cluster_size, lane = i % clusters::cluster_size;
    std::uint32_t r = a.offsets[c];
    std::uint32_t const last_run = a.offsets[c + 1];
    auto const first = [&](std::uint32_t k) -> std::size_t { return a.indices[2 * std::size_t{k}]; };
    auto const end = [&](std::uint32_t k) -> std::size_t { return a.indices[2 * std::size_t{k} + 1]; };
    std::size_t o = 0;
    if (ref.half) {
      std::size_t const cluster_begin = c * clusters::cluster_size;
      while (r < last_run && end(r) <= cluster_begin) ++r;
      if (r < last_run && first(r) < cluster_begin) o = cluster_begin - first(r);
    }
    std::size_t next_hit = 0;
    std::uint64_t tested = 0;
    while (r < last_run) {
      std::uint32_t rr = r;
      std::size_t at = o + lane;
      while (rr < last_run && at >= end(rr) - first(rr)) {
        at -= end(rr) - first(rr);
        ++rr;
      }
      if (rr < last_run) (void)a.points[first(rr) + at];  // this lane's load of the chunk
      tested += clusters::cluster_size;
      // The chunk's last candidate: its position in the stream is o + 31.
      std::uint32_t lr = r;
      std::size_t last_at = o + clusters::cluster_size - 1;
      while (lr < last_run && last_at >= end(lr) - first(lr)) {
        last_at -= end(lr) - first(lr);
        ++lr;
      }
      std::size_t const chunk_last = lr < last_run ? first(lr) + last_at : SIZE_MAX;
      while (next_hit < hits.size() && hits[next_hit] <= chunk_last) body(hits[next_hit++]);
      o += clusters::cluster_size;
      while (r < last_run && o >= end(r) - first(r)) {
        o -= end(r) - first(r);
        ++r;
      }
    }
    tests(tested);
  }
};

}  // namespace coalesce
