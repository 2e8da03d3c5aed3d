// coalesce/neighbors/list_format.hpp - what verlet_list asks of a list format, so that it holds no
// branch on the format: each format's file (padded_formats.hpp, csr_format.hpp, clusters.hpp)
// specialises detail::list_format_ops<Format> with
//   name                                      "padded_columns", ... (messages, reports)
//   build(memory, positions, n, rows, geometry, stream)    the type-erased build (list_ops.hpp)
//   refill(memory, positions, n, rows, geometry, stream)   the same for CUDA graphs
//   view(memory, geometry)                    the handle kernels take (verlet_list_ref<Format>)
//   host_rows(memory, geometry, stream)       every row, on the host (after the work on stream)
//   bytes(memory), fill(memory)               what a traversal of every row reads; slots used
//   check_refills(memory, status)             what a GPU refill found against the memory it had:
//                                             true when rows were cut (and a message in `why`)
//   arrays(view)                              the arrays a traversal loads, named (counted_list)
//   counted_traversal(view, arrays, i, body, tests)   the loads the GPU traversal makes, through
//                                             the caller's readers (analysis::counted), and the
//                                             distance tests it runs (compute, not loads)
// and, for formats that have them, padded (rows of a fixed width: as_neighbor_list, reserve_width).
// A new format is one file with its tag, its handle, its list_traits and these.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace coalesce::detail {

template <class Format> struct list_format_ops;  // specialised in each format's file

// A format tag: one that has its ops.
template <class Format>
concept list_format_tag = requires {
  list_format_ops<Format>::name;
};

// The arrays one traversal of a list loads (counted by the advisor as it counts the particles'):
// offsets (padded: counts; csr: offsets; clusters: run offsets), indices (slots, entries or runs)
// and, for clusters, the positions it filters with.
template <class Point> struct list_arrays {
  std::span<std::uint32_t const> offsets;
  char const* offsets_name = "";
  std::span<std::uint32_t const> indices;
  char const* indices_name = "";
  std::span<Point const> points;
  char const* points_name = "";
};

}  // namespace coalesce::detail
