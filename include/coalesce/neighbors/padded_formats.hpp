// coalesce/neighbors/padded_formats.hpp - the padded list formats: `width` slots per row, a count
// per row, in one of two storage orders (the same two a user's coalesce::neighbor_list names with
// neighbor_order): padded_columns puts entry k of particle i at indices[k * n + i] (a warp's loads
// of slot k coalesce), padded_rows at indices[i * width + k] (one particle's row contiguous).
// A padded list is a coalesce::neighbor_list description too (verlet_list::as_neighbor_list()).
//
//   coalesce::verlet_list<coalesce::padded_rows, coalesce::host> list({.cutoff = 1.0, .skin = 0.2});
//   list.build(h, &Particle::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::open});
//   auto nl = list.view(h);                       // slots: nl.width per row, nl.count(i) used
//   std::uint32_t const first = nl.count(i) > 0 ? nl.neighbor(i, 0) : 0;
//   static_assert(coalesce::padded_rows::order == coalesce::neighbor_order::row_major);
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../memory/index_arrays.hpp"
#include "list_format.hpp"
#include "list_ops.hpp"
#include "list_traits.hpp"

namespace coalesce {

// The format tags: one each, as aos and soa are for particles. `order` is the storage order in the
// words of coalesce::neighbor_list.
struct padded_columns {
  static constexpr neighbor_order order = neighbor_order::column_major;  // entry k of i at indices[k * n + i]
};
// The other tag: one particle's row contiguous.
struct padded_rows {
  static constexpr neighbor_order order = neighbor_order::row_major;  // entry k of i at indices[i * width + k]
};

template <class Format> struct verlet_list_ref;  // the handle kernels take (verlet_list::view())

namespace detail {
// The padded formats' handle: slot k of row i at k * particles + i or i * width + k.
template <neighbor_order Order> struct padded_list_ref {
  std::uint32_t const* indices = nullptr;
  std::uint32_t const* counts = nullptr;
  std::size_t particles = 0;
  std::size_t width = 0;
  bool half = false;  // each pair once, in the row of its lower index
  COALESCE_HOST_DEVICE std::size_t size() const { return particles; }
  COALESCE_HOST_DEVICE std::uint32_t count(std::size_t i) const { return counts[i]; }
  COALESCE_HOST_DEVICE std::uint32_t neighbor(std::size_t i, std::uint32_t k) const { return indices[slot(i, k)]; }
  COALESCE_HOST_DEVICE std::size_t slot(std::size_t i, std::uint32_t k) const {
    return Order == neighbor_order::column_major ? k * particles + i : i * width + k;
  }
};

// Both padded formats' ops (list_format.hpp): they differ in the storage order only.
template <class Format> struct padded_format_ops {
  static constexpr bool padded = true;
  static constexpr bool reserves_width = true;     // a width a refill writes rows at (reserve_width)
  static constexpr bool tests_candidates = false;  // a traversal filters candidates (candidates())
  static constexpr list_format runtime_format =
      Format::order == neighbor_order::column_major ? list_format::column_major : list_format::row_major;

  static void build(list_memory& m, position_columns const& p, std::size_t n, std::size_t rows, list_geometry const& g,
                    void* stream) {
    build_list(m, runtime_format, p, n, rows, g, stream);
  }
  static void refill(list_memory& m, position_columns const& p, std::size_t n, std::size_t rows, list_geometry const& g,
                     void* stream) {
    refill_list(m, p, n, rows, g, stream);
  }
  static verlet_list_ref<Format> view(list_memory const& m, list_geometry const& g) {
    verlet_list_ref<Format> r;
    r.indices = reinterpret_cast<std::uint32_t const*>(m.indices.data());
    r.counts = reinterpret_cast<std::uint32_t const*>(m.counts.data());
    r.particles = m.particles;
    r.width = m.width;
    r.half = g.half;
    return r;
  }
  static std::vector<std::vector<std::uint32_t>> host_rows(list_memory const& m, list_geometry const&, void* stream) {
    std::size_t const n = m.particles;
    std::vector<std::vector<std::uint32_t>> rows(n);
    if (n == 0) return rows;
    std::vector<std::uint32_t> const indices = words_on_host(m, m.indices, n * m.width, stream);
    std::vector<std::uint32_t> const counts = words_on_host(m, m.counts, n, stream);
    padded_list_ref<Format::order> const r{indices.data(), counts.data(), n, m.width};
    for (std::size_t i = 0; i < n; ++i) {
      rows[i].resize(counts[i]);
      for (std::uint32_t k = 0; k < counts[i]; ++k) rows[i][k] = r.neighbor(i, k);
    }
    return rows;
  }
  static std::size_t bytes(list_memory const& m) { return (m.particles * m.width + m.particles) * 4; }
  static double fill(list_memory const& m) {
    if (m.particles == 0 || m.width == 0) return 1.0;
    return static_cast<double>(m.entries) / static_cast<double>(m.particles * m.width);
  }
  static bool check_refills(list_memory const& m, list_status const& status, std::string& why) {
    if (status.widest <= m.width) return false;
    why = row_too_wide(status.widest, m.width);
    return true;
  }
  template <class Point> static list_arrays<Point> arrays(verlet_list_ref<Format> const& r) {
    list_arrays<Point> a;
    a.offsets = {r.counts, r.particles};
    a.offsets_name = "list counts";
    a.indices = {r.indices, r.particles * r.width};
    a.indices_name = "list slots";
    return a;
  }
  // A thread's row: its count, then its slots (the GPU traversal's loads).
  template <class Arrays, class Body, class Tests>
  static void counted_traversal(verlet_list_ref<Format> const& r, Arrays const& a, std::size_t i, Body& body, Tests&&) {
    std::uint32_t const n = a.offsets[i];
    for (std::uint32_t k = 0; k < n; ++k) body(a.indices[r.slot(i, k)]);
  }
};
}  // namespace detail

template <> struct verlet_list_ref<padded_columns> : detail::padded_list_ref<neighbor_order::column_major> {};
template <> struct verlet_list_ref<padded_rows> : detail::padded_list_ref<neighbor_order::row_major> {};

template <> struct detail::list_format_ops<padded_columns> : detail::padded_format_ops<padded_columns> {
  static constexpr char const* name = "padded_columns";
};
template <> struct detail::list_format_ops<padded_rows> : detail::padded_format_ops<padded_rows> {
  static constexpr char const* name = "padded_rows";
};

// Both read through their members (the traits every list has, list_traits.hpp).
template <class Format>
requires(std::is_same_v<Format, padded_columns> ||
         std::is_same_v<Format, padded_rows>) struct list_traits<verlet_list_ref<Format>>
    : detail::member_list_traits<verlet_list_ref<Format>> {
};

}  // namespace coalesce
