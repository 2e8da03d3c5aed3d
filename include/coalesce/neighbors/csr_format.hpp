// coalesce/neighbors/csr_format.hpp - the compressed-row list format: the neighbours of particle i
// at indices[offsets[i], offsets[i + 1]), no padding (a user's coalesce::csr_neighbor_list holds the
// same two arrays).
//
//   coalesce::verlet_list<coalesce::csr, coalesce::host> list({.cutoff = 1.0, .skin = 0.2});
//   list.build(h, &Particle::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::open});
//   auto nl = list.view(h);                       // row i: nl.indices[nl.offsets[i], nl.offsets[i + 1])
//   std::size_t stored = 0;
//   for (std::size_t r = 0; r < nl.size(); ++r) coalesce::for_each_neighbor(nl, r, [&](std::uint32_t) { ++stored; });
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

struct csr {};  // the format tag

template <class Format> struct verlet_list_ref;

// The handle kernels take by value (verlet_list<csr>::view()), pointing into the list's memory.
template <> struct verlet_list_ref<csr> {
  std::uint32_t const* indices = nullptr;  // the rows' neighbours, row after row
  std::uint32_t const* offsets = nullptr;  // row i: indices[offsets[i], offsets[i + 1]); size() + 1 of them
  std::size_t particles = 0;               // rows: the first particles (list_rows::owned)
  bool half = false;                       // each pair once, in the row of its lower index
  COALESCE_HOST_DEVICE std::size_t size() const { return particles; }  // rows (particles with a row)
  // Entries in row i: offsets[i + 1] - offsets[i].
  COALESCE_HOST_DEVICE std::uint32_t count(std::size_t i) const { return offsets[i + 1] - offsets[i]; }
  // The k-th neighbour of row i, k < count(i).
  COALESCE_HOST_DEVICE std::uint32_t neighbor(std::size_t i, std::uint32_t k) const { return indices[offsets[i] + k]; }
};

template <> struct list_traits<verlet_list_ref<csr>> : detail::member_list_traits<verlet_list_ref<csr>> {};

template <> struct detail::list_format_ops<csr> {
  static constexpr char const* name = "csr";
  static constexpr bool padded = false;
  static constexpr bool reserves_width = true;     // a width a refill writes rows at (reserve_width)
  static constexpr bool tests_candidates = false;  // a traversal filters candidates (candidates())

  static void build(list_memory& m, position_columns const& p, std::size_t n, std::size_t rows, list_geometry const& g,
                    void* stream) {
    build_list(m, list_format::csr, p, n, rows, g, stream);
  }
  static void refill(list_memory& m, position_columns const& p, std::size_t n, std::size_t rows, list_geometry const& g,
                     void* stream) {
    refill_list(m, p, n, rows, g, stream);
  }
  static verlet_list_ref<csr> view(list_memory const& m, list_geometry const& g) {
    verlet_list_ref<csr> r;
    r.indices = reinterpret_cast<std::uint32_t const*>(m.indices.data());
    r.offsets = reinterpret_cast<std::uint32_t const*>(m.offsets.data());
    r.particles = m.particles;
    r.half = g.half;
    return r;
  }
  // The entries the offsets hold (after a refill cut at the capacity, fewer than entries()).
  static std::vector<std::vector<std::uint32_t>> host_rows(list_memory const& m, list_geometry const&, void* stream) {
    std::size_t const n = m.particles;
    std::vector<std::vector<std::uint32_t>> rows(n);
    if (n == 0) return rows;
    std::vector<std::uint32_t> const offsets = words_on_host(m, m.offsets, n + 1, stream);
    std::vector<std::uint32_t> const indices = words_on_host(m, m.indices, offsets[n], stream);
    for (std::size_t i = 0; i < n; ++i) rows[i].assign(indices.begin() + offsets[i], indices.begin() + offsets[i + 1]);
    return rows;
  }
  static std::size_t bytes(list_memory const& m) { return (m.entries + m.particles + 1) * 4; }
  static double fill(list_memory const&) { return 1.0; }
  // A GPU refill stages rows at staged_width and packs them into the memory the build left.
  static bool check_refills(list_memory const& m, list_status const& status, std::string& why) {
    if (status.widest > m.staged_width) {
      why = row_too_wide(status.widest, m.staged_width);
      return true;
    }
    std::size_t const capacity = m.indices.size() / sizeof(std::uint32_t);
    if (status.most_entries > capacity) {
      why = "verlet_list::check: a refill found " + std::to_string(status.most_entries) +
            " neighbours in all, more than the " + std::to_string(capacity) +
            " the csr list's memory holds, so the last rows were cut and forces summed over them since missed "
            "pairs; build() makes room (redo the steps since the last check)";
      return true;
    }
    return false;
  }
  template <class Point> static list_arrays<Point> arrays(verlet_list_ref<csr> const& r) {
    list_arrays<Point> a;
    a.offsets = {r.offsets, r.particles + 1};
    a.offsets_name = "list offsets";
    a.indices = {r.indices, r.offsets[r.particles]};
    a.indices_name = "list entries";
    return a;
  }
  // A thread's row: its two offsets, then its entries.
  template <class Arrays, class Body, class Tests>
  static void counted_traversal(verlet_list_ref<csr> const&, Arrays const& a, std::size_t i, Body& body, Tests&&) {
    std::uint32_t const begin = a.offsets[i], end = a.offsets[i + 1];
    for (std::uint32_t e = begin; e < end; ++e) body(a.indices[e]);
  }
};

}  // namespace coalesce
