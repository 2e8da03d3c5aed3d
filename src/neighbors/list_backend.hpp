// Internal to libcoalesce: what the host and CUDA halves of the neighbour-list build share.
#pragma once
#include <cstddef>
#include <cstdint>

#include "list_kernels.hpp"

namespace coalesce::detail {

// Makes b hold at least `bytes` of m.kind memory (a rebuild of the same size allocates nothing);
// true when it allocated.
bool ensure_bytes(list_memory const& m, buffer& b, std::size_t bytes);

// The steps of a build that differ between host and GPU memory. Each returns what the driver
// (list_build.cpp) needs to decide the next step.
struct list_pass_result {
  std::size_t widest = 0;
  std::size_t entries = 0;
};
namespace host_lists {
// Cells of every particle, sorted by cell (by index inside a cell); the first bad particle or n.
template <class Real> std::size_t bin(list_memory& m, position_columns const& p, std::size_t n, unsigned dims,
                                      cell_grid<Real> const& g, std::size_t cell_count);
template <class Real> list_pass_result fill(list_memory& m, std::size_t n, cell_grid<Real> const& g, bool count_only);
void offsets_from_counts(list_memory& m, std::size_t n);
void keep_reference(list_memory& m, position_columns const& p, std::size_t n, unsigned dims);
double max_displacement(list_memory const& m, position_columns const& p, std::size_t n, unsigned dims,
                        double const* length, bool const* periodic);
}  // namespace host_lists
// The GPU half (list_build_cuda.cu); without CUDA never called (GPU memory does not exist), so
// it is not declared and the driver's calls compile away.
namespace cuda_lists {
#if COALESCE_WITH_CUDA
template <class Real> std::size_t bin(list_memory& m, position_columns const& p, std::size_t n, unsigned dims,
                                      cell_grid<Real> const& g, std::size_t cell_count, void* stream);
template <class Real>
list_pass_result fill(list_memory& m, std::size_t n, cell_grid<Real> const& g, bool count_only, void* stream);
std::size_t offsets_from_counts(list_memory& m, std::size_t n, void* stream);
void keep_reference(list_memory& m, position_columns const& p, std::size_t n, unsigned dims, void* stream);
double max_displacement(list_memory const& m, position_columns const& p, std::size_t n, unsigned dims,
                        double const* length, bool const* periodic, void* stream);
#else
template <class Real> std::size_t bin(list_memory&, position_columns const&, std::size_t, unsigned,
                                      cell_grid<Real> const&, std::size_t, void*) {
  return 0;
}
template <class Real> list_pass_result fill(list_memory&, std::size_t, cell_grid<Real> const&, bool, void*) {
  return {};
}
inline std::size_t offsets_from_counts(list_memory&, std::size_t, void*) { return 0; }
inline void keep_reference(list_memory&, position_columns const&, std::size_t, unsigned, void*) {}
inline double max_displacement(list_memory const&, position_columns const&, std::size_t, unsigned, double const*,
                               bool const*, void*) {
  return 0.0;
}
#endif
}  // namespace cuda_lists

}  // namespace coalesce::detail
