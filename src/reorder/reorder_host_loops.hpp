// Internal to libcoalesce: the two loop shapes of the host backend, on all cores through
// OpenMP when `parallel` (device kind without CUDA), sequential otherwise.
#pragma once
#include <cstddef>

#include <cstdint>

#include "reorder_backend.hpp"

#ifdef _OPENMP
#define COALESCE_OMP(directive) _Pragma(directive)
#else
#define COALESCE_OMP(directive)
#endif

namespace coalesce::detail {
template <class F> void for_each(bool parallel, std::size_t n, F const& f) {
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
  COALESCE_OMP("omp parallel for schedule(static) if (parallel)")
  for (std::ptrdiff_t i = 0; i < count; ++i) f(static_cast<std::size_t>(i));
  (void)parallel;
}

// The smallest i in [0, n) with pred(i), or `none`.
template <class F> std::size_t first_where(bool parallel, std::size_t n, F const& pred) {
  std::size_t first = none;
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
  COALESCE_OMP("omp parallel for reduction(min : first) schedule(static) if (parallel)")
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    auto const k = static_cast<std::size_t>(i);
    if (k < first && pred(k)) first = k;
  }
  (void)parallel;
  return first;
}

// Keeps the smaller of the recorded and the new offending index in flags[word] (flags may be
// null: the check is off).
inline void record_first(std::uint64_t* flags, check_word word, std::size_t index) {
  if (flags != nullptr && index != none && index < flags[word]) flags[word] = index;
}

}  // namespace coalesce::detail
