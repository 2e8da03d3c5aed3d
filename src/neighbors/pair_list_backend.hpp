// Internal to libcoalesce: what the cluster-pair build's steps (host_list_backend and cuda_list_backend in
// list_backend.hpp; pair_list_build.cpp drives them, pair_list_kernels.hpp has the bodies) return.
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

}  // namespace coalesce::detail
