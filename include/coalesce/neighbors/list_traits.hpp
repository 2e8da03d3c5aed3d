// coalesce/neighbors/list_traits.hpp - what every neighbour list is to the algorithms that read it:
// one customization point, as Cabana's NeighborList<T> is, so that the traversal, remap, the analysis,
// the advisor and the pair loops read any list (a verlet_list's view of any format, a counted list,
// a list the user built) and a new format is one file.
//
//   auto heaviest_neighbour = [&](auto const& list, std::size_t i) {  // list: any neighbour list
//     float most = 0;
//     coalesce::for_each_neighbor(list, i, [&](std::uint32_t j) { most = std::max(most, legacy[j].mass); });
//     return most;
//   };
//   coalesce::verlet_list<coalesce::csr, coalesce::host> library({.cutoff = 1.0, .skin = 0.2});
//   library.build(h, &Particle::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::open});
//   coalesce::host_neighbor_list<std::uint32_t> own{.indices = neighbour_list.data(), .particles = n,
//                                                   .max_neighbors = 32, .order = coalesce::neighbor_order::column_major};
//   float const a = heaviest_neighbour(library.view(h), i), b = heaviest_neighbour(own, i);
//   static_assert(coalesce::neighbor_list_view<coalesce::verlet_list_ref<coalesce::clusters>>);
//
// A list type L joins by specialising coalesce::list_traits<L> (in its own file) with
//   static std::size_t size(L const&)                       rows
//   static std::uint32_t count(L const&, std::size_t i)     neighbours of row i
//   static std::uint32_t neighbor(L const&, std::size_t i, std::uint32_t k)   the k-th, k < count
// and, where the format has a faster traversal than count/neighbor (the cluster format filters its
// candidates once per row, not once per neighbour), with
//
//   template <class Body> static void for_each(L const&, std::size_t i, Body& body)
//
// All of them COALESCE_HOST_DEVICE where the list lives in GPU memory.
//
// A list's own file says which format files exist (docs/architecture.md): padded_formats.hpp
// (padded_columns, padded_rows), csr_format.hpp, clusters.hpp, user_lists.hpp (the user's own
// neighbor_list and csr_neighbor_list descriptions) and analysis/counted_list.hpp (any of those,
// counted by the advisor).
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"

namespace coalesce {

// Specialised by each list type in its own file; a type without one is not a neighbour list.
template <class List> struct list_traits;

// A list the traversal reads: rows, a count per row and the k-th neighbour of a row.
template <class List>
concept neighbor_list_view = requires(List const& list, std::size_t i, std::uint32_t k) {
  { list_traits<std::remove_cvref_t<List>>::size(list) } -> std::convertible_to<std::size_t>;
  { list_traits<std::remove_cvref_t<List>>::count(list, i) } -> std::convertible_to<std::uint32_t>;
  { list_traits<std::remove_cvref_t<List>>::neighbor(list, i, k) } -> std::convertible_to<std::uint32_t>;
};

namespace detail {
// The traits of a handle that answers size(), count(i) and neighbor(i, k) itself (the library's
// views): each format's file derives its list_traits from this.
template <class Ref> struct member_list_traits {
  using ref = Ref;
  COALESCE_HOST_DEVICE static std::size_t size(ref const& l) { return l.size(); }
  COALESCE_HOST_DEVICE static std::uint32_t count(ref const& l, std::size_t i) { return l.count(i); }
  COALESCE_HOST_DEVICE static std::uint32_t neighbor(ref const& l, std::size_t i, std::uint32_t k) {
    return l.neighbor(i, k);
  }
};

template <class List, class Body>
concept has_own_traversal = requires(List const& list, std::size_t i, Body& body) {
  list_traits<List>::for_each(list, i, body);
};
}  // namespace detail

// body(j) for every neighbour j of row i, in the list's order: the one traversal a kernel writes,
// whatever the list.
template <class List, class Body>
requires neighbor_list_view<List> COALESCE_HOST_DEVICE COALESCE_INLINE void for_each_neighbor(List const& list,
                                                                                              std::size_t i,
                                                                                              Body&& body) {
  using traits = list_traits<List>;
  if constexpr (detail::has_own_traversal<List, std::remove_reference_t<Body>>) {
    traits::for_each(list, i, body);
  } else {
    std::uint32_t const n = traits::count(list, i);
    for (std::uint32_t k = 0; k < n; ++k) body(traits::neighbor(list, i, k));
  }
}

}  // namespace coalesce
