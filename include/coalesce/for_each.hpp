// coalesce/for_each.hpp - one loop for every layout and space.
//
//   auto v = d.view();
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE (std::size_t i) {
//     v[i][&Particle::mass] *= 0.5f;
//   });
//   coalesce::synchronize(coalesce::device{});   // launches are asynchronous, like a kernel launch
//
// host: a plain loop. device: one GPU thread per index (CUDA; the calling file must be compiled
// by nvcc with --extended-lambda, which the coalesce target adds), or all CPU cores through
// OpenMP when coalesce is built without CUDA.
#pragma once
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <type_traits>

#include "config.hpp"
#include "detail/memory.hpp"
#include "error.hpp"
#include "space.hpp"

#if COALESCE_WITH_CUDA && COALESCE_DEVICE_COMPILER
#include <cuda_runtime.h>
#endif

namespace coalesce {

namespace detail {
template <class> inline constexpr bool dependent_false = false;

#if COALESCE_WITH_CUDA && COALESCE_DEVICE_COMPILER
template <class F> __global__ void for_each_index_kernel(std::size_t n, F f) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

template <class F> void launch_for_each_index(std::size_t n, F const& f) {
  constexpr unsigned threads = 256;
  std::size_t const blocks = (n + threads - 1) / threads;
  for_each_index_kernel<<<static_cast<unsigned>(blocks), threads>>>(n, f);
  cudaError_t const status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw_error(std::string("for_each_index: kernel launch failed: ") + cudaGetErrorName(status) + " (" +
                cudaGetErrorString(status) + ")");
  }
}
#endif

// An exception must not leave an OpenMP region (that calls std::terminate): each iteration
// catches, the lowest failing index is kept, and the loop's caller gets it after the loop. When
// f cannot throw once inlined (bounds checks off), the handler is dead code and the loop still
// vectorizes.
class loop_exception {
 public:
  void record(std::size_t index) noexcept {
    std::lock_guard<std::mutex> const lock(mutex_);
    if (!first_ || index < index_) {
      first_ = std::current_exception();
      index_ = index;
    }
  }
  void rethrow_if_any() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
  std::size_t index_ = 0;
};
}  // namespace detail

template <class F> void for_each_index(host, std::size_t n, F&& f) {
  for (std::size_t i = 0; i < n; ++i) f(i);
}

template <class F> void for_each_index(device, std::size_t n, F f) {
  if (n == 0) return;
#if COALESCE_WITH_CUDA
#if COALESCE_DEVICE_COMPILER
  detail::launch_for_each_index(n, f);
#else
  static_assert(detail::dependent_false<F>,
                "coalesce: for_each_index(device{}, ...) runs f on the GPU, so this file must be compiled "
                "as CUDA (a .cu file, or set_source_files_properties(... LANGUAGE CUDA))");
#endif
#else
  // simd: iterations are independent (the contract of for_each_index), which also tells the
  // compiler that one index's stores do not feed another's loads, so the loop vectorizes.
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
  detail::loop_exception failure;
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    try {
      f(static_cast<std::size_t>(i));
    } catch (...) {
      failure.record(static_cast<std::size_t>(i));
    }
  }
  failure.rethrow_if_any();
#endif
}

// Waits until device work queued so far has finished; reports asynchronous errors as coalesce::error.
inline void synchronize(device) { detail::synchronize(detail::memory_kind::device); }
inline void synchronize(host) {}

}  // namespace coalesce
