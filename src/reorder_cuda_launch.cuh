// Internal to libcoalesce: the two loop shapes of the GPU reorder primitives (one thread per
// index; the first index where a predicate holds), for reorder_cuda.cu and keys_cuda.cu.
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>

#include "cuda_check.hpp"
#include "reorder_state.hpp"

namespace coalesce::detail {

inline constexpr int launch_threads = 256;

template <class F> __global__ void each_kernel(std::size_t n, F f) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads) f(i);
}

inline unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + launch_threads - 1) / launch_threads, 1, 1u << 20));
}

template <class F> void each_on_device(std::size_t n, F f) {
  if (n == 0) return;
  each_kernel<<<blocks_for(n), launch_threads>>>(n, f);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

// f(i, k) for i in [0, fast) and k in [0, slow): i runs along x (consecutive threads), k along y,
// so kernels over a column-major neighbour list (slot k * particles + i) need no division.
template <class F> __global__ void each_2d_kernel(std::size_t fast, F f) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < fast) f(i, static_cast<std::size_t>(blockIdx.y));
}

inline bool fits_2d(std::size_t fast, std::size_t slow) {
  return slow > 0 && slow <= 65535 && (fast + launch_threads - 1) / launch_threads <= 0x7fffffffu;
}

inline dim3 grid_2d(std::size_t fast, std::size_t slow) {
  return dim3(static_cast<unsigned>((fast + launch_threads - 1) / launch_threads), static_cast<unsigned>(slow));
}

template <class F> void each_2d_on_device(std::size_t fast, std::size_t slow, F f) {
  if (fast == 0 || slow == 0) return;
  each_2d_kernel<<<grid_2d(fast, slow), launch_threads>>>(fast, f);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

template <class P> __global__ void first_where_kernel(std::size_t n, P pred, unsigned long long* first) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads) {
    if (pred(i)) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// Runs launch(first) with *first = all ones in the plan's flag buffer, and reads back the
// smallest index the kernel recorded there with atomicMin, or `none`.
template <class Launch> std::size_t first_flagged(reorder_state& s, Launch launch) {
  auto* first = static_cast<unsigned long long*>(s.ensure(s.flag, memory_kind::device, 32));
  COALESCE_CUDA_TRY(cudaMemset(first, 0xff, sizeof(unsigned long long)));
  launch(first);
  COALESCE_CUDA_TRY(cudaGetLastError());
  unsigned long long result = 0;
  COALESCE_CUDA_TRY(cudaMemcpy(&result, first, sizeof result, cudaMemcpyDeviceToHost));
  return result == std::numeric_limits<unsigned long long>::max() ? none : static_cast<std::size_t>(result);
}

// The smallest i in [0, n) with pred(i), or `none`.
template <class P> std::size_t first_where_on_device(reorder_state& s, std::size_t n, P pred) {
  if (n == 0) return none;
  return first_flagged(s, [&](unsigned long long* first) {
    first_where_kernel<<<blocks_for(n), launch_threads>>>(n, pred, first);
  });
}

template <class P> __global__ void first_where_2d_kernel(std::size_t fast, P pred, unsigned long long* first) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t const k = blockIdx.y;
  if (i < fast && pred(i, k)) atomicMin(first, static_cast<unsigned long long>(k * fast + i));
}

// The smallest k * fast + i with pred(i, k) (column-major slots), or `none`; needs fits_2d.
template <class P> std::size_t first_where_2d_on_device(reorder_state& s, std::size_t fast, std::size_t slow, P pred) {
  if (fast == 0 || slow == 0) return none;
  return first_flagged(s, [&](unsigned long long* first) {
    first_where_2d_kernel<<<grid_2d(fast, slow), launch_threads>>>(fast, pred, first);
  });
}

}  // namespace coalesce::detail
