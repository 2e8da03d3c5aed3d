// Internal to libcoalesce: the steps of the cluster-pair build that differ between host and GPU
// memory (pair_list_build.cpp drives them; pair_list_kernels.hpp has the bodies).
#pragma once
#include <cstddef>
#include <cstdint>

#include "list_backend.hpp"
#include "pair_list_kernels.hpp"

namespace coalesce::detail {

// What the search's counting pass found, all rows.
struct pair_row_totals {
  std::size_t entries = 0;  // pairs of clusters kept
  std::size_t widest = 0;   // the most clusters in one row
  pair_search_counts pairs;
};

namespace cuda_pairs {
#if COALESCE_WITH_CUDA
// Each column's cluster count (its particles / 8, rounded up) into counts (host memory).
template <class Real> void column_cluster_counts(list_memory& m, cell_grid<Real> const& g, std::uint32_t columns,
                                                 std::uint32_t* counts, void* stream);
// Every slot's particle and position, every cluster's bounding box.
template <class Real> void slots_and_boxes(pair_build_view<Real> const& v, std::size_t clusters, void* stream);
// Each row's count into m.cluster_counts, their offsets into m.offsets; the totals read back.
template <class Real>
pair_row_totals count_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
// Each row's entries into m.indices at m.offsets (returns when the list is complete).
template <class Real>
void fill_rows(list_memory& m, pair_build_view<Real> const& v, std::size_t clusters, void* stream);
#endif
}  // namespace cuda_pairs

}  // namespace coalesce::detail
