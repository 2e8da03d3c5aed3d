// Internal to libcoalesce: the loop shapes of the GPU reorder primitives (one thread per index,
// one per (row, slot), the first index where a predicate holds), each on the backend's stream,
// for reorder_cuda.cu and keys_cuda.cu.
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>

#include "../core/cuda_check.hpp"
#include "reorder_backend.hpp"

namespace coalesce::detail {

inline constexpr int launch_threads = 256;

template <class F> __global__ void each_kernel(std::size_t n, F f) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads) f(i);
}

inline unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + launch_threads - 1) / launch_threads, 1, 1u << 20));
}

template <class F> void each_on_device(cudaStream_t stream, std::size_t n, F f) {
  if (n == 0) return;
  each_kernel<<<blocks_for(n), launch_threads, 0, stream>>>(n, f);
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

template <class F> void each_2d_on_device(cudaStream_t stream, std::size_t fast, std::size_t slow, F f) {
  if (fast == 0 || slow == 0) return;
  each_2d_kernel<<<grid_2d(fast, slow), launch_threads, 0, stream>>>(fast, f);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

// Records index in *word with an atomic minimum (word null: the check is off).
__device__ inline void record_first(std::uint64_t* word, std::size_t index) {
  if (word != nullptr) atomicMin(reinterpret_cast<unsigned long long*>(word), static_cast<unsigned long long>(index));
}

// The smallest i in [0, n) with pred(i) into *word (queued; nothing waits).
template <class P> void find_first_on_device(cudaStream_t stream, std::size_t n, P pred, std::uint64_t* word) {
  if (n == 0 || word == nullptr) return;
  each_on_device(stream, n, [=] __device__(std::size_t i) {
    if (pred(i)) record_first(word, i);
  });
}

}  // namespace coalesce::detail
