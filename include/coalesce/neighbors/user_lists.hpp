// coalesce/neighbors/user_lists.hpp - a list the user built (coalesce::neighbor_list, padded in either
// storage order, and coalesce::csr_neighbor_list: memory/index_arrays.hpp) read by the one traversal:
//
//   coalesce::neighbor_list<std::uint32_t> own{.indices = nbr, .particles = n, .max_neighbors = 32,
//                                              .order = coalesce::neighbor_order::column_major, .counts = counts};
//   float mass_around = 0;                                     // host or device code alike
//   coalesce::for_each_neighbor(own, i, [&](std::uint32_t j) { mass_around += legacy[j].mass; });
//
// A neighbour index is any integer type the user stores; the traversal hands it on as std::uint32_t
// (the library's index type: lists of more than 2^32 particles are not read this way).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "../memory/index_arrays.hpp"
#include "list_traits.hpp"

namespace coalesce {

// Rows of max_neighbors slots, counts[i] used (every slot where counts is null).
template <class Index, class Space> struct list_traits<neighbor_list<Index, Space>> {
  using list = neighbor_list<Index, Space>;                                                  // the description read
  COALESCE_HOST_DEVICE static std::size_t size(list const& l) { return l.particles.value; }  // rows: l.particles
  // counts[i], or max_neighbors where counts is null.
  COALESCE_HOST_DEVICE static std::uint32_t count(list const& l, std::size_t i) {
    return static_cast<std::uint32_t>(l.counts != nullptr ? l.counts[i] : l.max_neighbors.value);
  }
  // Slot k of row i in the list's storage order, as std::uint32_t.
  COALESCE_HOST_DEVICE static std::uint32_t neighbor(list const& l, std::size_t i, std::uint32_t k) {
    std::size_t const at =
        l.order.value == neighbor_order::column_major ? k * l.particles.value + i : i * l.max_neighbors.value + k;
    return static_cast<std::uint32_t>(l.indices[at]);
  }
};

// Row i at indices[offsets[i], offsets[i + 1]).
template <class Index, class Space> struct list_traits<csr_neighbor_list<Index, Space>> {
  using list = csr_neighbor_list<Index, Space>;                                              // the description read
  COALESCE_HOST_DEVICE static std::size_t size(list const& l) { return l.particles.value; }  // rows: l.particles
  // offsets[i + 1] - offsets[i].
  COALESCE_HOST_DEVICE static std::uint32_t count(list const& l, std::size_t i) {
    return static_cast<std::uint32_t>(l.offsets[i + 1] - l.offsets[i]);
  }
  // indices[offsets[i] + k], as std::uint32_t.
  COALESCE_HOST_DEVICE static std::uint32_t neighbor(list const& l, std::size_t i, std::uint32_t k) {
    return static_cast<std::uint32_t>(l.indices[static_cast<std::size_t>(l.offsets[i]) + k]);
  }
};

}  // namespace coalesce
