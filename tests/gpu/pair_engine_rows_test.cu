// coalesce::compute_pairs in GPU memory over the lists read a thread per row (padded_columns,
// padded_rows, csr): the host's forces, energy and virial, full and half lists, with exclusions
// (bonded chains). Clusters and cluster_pairs: pair_engine_clusters_test.cu.
#include <cstdint>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "pair_engine_common.hpp"

using namespace pair_engine_gpu_test;

TEST_CASE_TEMPLATE("compute_pairs in GPU memory gives the host's forces and sums: the row formats, full and half",
                   Format, coalesce::padded_columns, coalesce::padded_rows, coalesce::csr) {
  // soa for every format, aos for padded_columns (read a thread per row); each combination is a set
  // of kernels to compile: CI's time
  for (bool const half : {false, true}) {
    check_device_against_host<Format, coalesce::soa>(half);
    if constexpr (std::is_same_v<Format, coalesce::padded_columns>)
      check_device_against_host<Format, coalesce::aos>(half);
  }
}

TEST_CASE_TEMPLATE(
    "compute_pairs in GPU memory with exclusions gives the host's forces and sums: the row loop, "
    "full and half",
    Format, coalesce::padded_columns, coalesce::csr) {
  for (bool const half : {false, true}) check_device_against_host<Format, coalesce::soa, true>(half);
}
