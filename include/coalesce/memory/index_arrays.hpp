// coalesce/memory/index_arrays.hpp - index arrays that say where they live and how they are stored.
//
//   coalesce::reorder_plan plan;
//   // A column-major list in GPU memory (entry k of particle i at nbr[k * n + i]):
//   coalesce::device_neighbor_list<std::uint32_t> pairs{
//       .indices = nbr, .particles = n, .max_neighbors = 32, .order = coalesce::neighbor_order::column_major};
//   coalesce::device_span<std::uint32_t> bond_ends{.data = bonds, .size = 2 * nb};
//   coalesce::remap(pairs, plan);       // after a sort_by_key (reorder.hpp): rows follow, entries renumbered
//   coalesce::remap(bond_ends, plan);   // old index -> new index
//
// The storage order has no default: a column-major list read as row-major is still a valid
// list of the same size, so a forgotten order would renumber every entry wrongly and silently.
// Leaving it out of an initializer is a compile error that says so. The memory space defaults to
// `host`, as coalesce::vector's does; a list of GPU pointers is a device_neighbor_list (or names
// coalesce::device), and in a CUDA build every call checks the pointers against the space.
#pragma once
#include <concepts>
#include <cstddef>
#include <string>

#include "../core/error.hpp"
#include "space.hpp"

namespace coalesce {

// How a neighbor_list's slots are stored; it must be stated (no default, see above). row_major:
// entry k of particle i at indices[i * max_neighbors + k]; column_major: at indices[k * particles + i].
enum class neighbor_order : unsigned char { row_major, column_major };

namespace detail {
template <class> inline constexpr bool always_false = false;

// A neighbor_order that must be given: an initializer that leaves it out calls the default
// constructor template, whose body fails with the message below.
struct stated_neighbor_order {
  neighbor_order value;
  constexpr stated_neighbor_order(neighbor_order order) : value(order) {}  // NOLINT: implicit on purpose
  template <class Missing = void> constexpr stated_neighbor_order() : value() {
    static_assert(always_false<Missing>,
                  "coalesce: say how the neighbour list is stored: .order = coalesce::neighbor_order::row_major "
                  "(entry k of particle i at indices[i * max_neighbors + k]) or neighbor_order::column_major "
                  "(at indices[k * particles + i]); there is no default");
  }
  constexpr operator neighbor_order() const { return value; }  // NOLINT: reads like the enum
};

// A count of any integer type: simulation codes keep `int n`, and a std::size_t member would
// make {nbr, n, 32} a narrowing error (followed by a misleading "no matching remap").
// Negative counts throw.
struct element_count {
  std::size_t value = 0;
  constexpr element_count() = default;
  template <std::integral I> element_count(I count) : value(static_cast<std::size_t>(count)) {  // NOLINT: implicit
    if constexpr (std::is_signed_v<I>) {
      if (count < 0) throw_error("a neighbour list or span was given a negative count (" + std::to_string(count) + ")");
    }
  }
  constexpr operator std::size_t() const { return value; }  // NOLINT: reads like the number
};
}  // namespace detail

// A range of elements in the memory of Space: a cudaMalloc'ed array, a thrust::device_vector's
// data, a host array. (std::span cannot say where its memory lives.)
template <class U, class Space = host> struct span_in {
  U* data = nullptr;           // the first element, in Space's memory
  detail::element_count size;  // elements: any integer type; a negative count throws coalesce::error
};
template <class U> using device_span = span_in<U, device>;  // elements in GPU memory (host memory without CUDA)
template <class U> using host_span = span_in<U, host>;      // elements in host memory

// particles rows of max_neighbors slots: entry k of particle i at indices[i * max_neighbors + k]
// (row_major) or indices[k * particles + i] (column_major, coalesced when a thread owns a
// particle). counts[i] slots of row i are used (every slot when counts is null); the rest are
// left as they are.
template <class Index, class Space = host> struct neighbor_list {
  Index* indices = nullptr;             // particles x max_neighbors slots, in Space's memory
  detail::element_count particles;      // rows; any integer type
  detail::element_count max_neighbors;  // slots per row
  detail::stated_neighbor_order order;  // row_major or column_major: leaving it out does not compile
  Index* counts = nullptr;              // slots used per row (particles entries); null: every slot
};
template <class Index> using device_neighbor_list = neighbor_list<Index, device>;  // in GPU memory
template <class Index> using host_neighbor_list = neighbor_list<Index, host>;      // in host memory

// Compressed rows: row i is indices[offsets[i] .. offsets[i + 1]), offsets has particles + 1 entries.
template <class Index, class Space = host> struct csr_neighbor_list {
  Index* indices = nullptr;         // every row's entries, row after row, in Space's memory
  Index* offsets = nullptr;         // particles + 1 of them: row i is [offsets[i], offsets[i + 1])
  detail::element_count particles;  // rows; any integer type
};
template <class Index> using device_csr_neighbor_list = csr_neighbor_list<Index, device>;  // in GPU memory
template <class Index> using host_csr_neighbor_list = csr_neighbor_list<Index, host>;      // in host memory

}  // namespace coalesce
