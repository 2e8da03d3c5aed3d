// Timing for the samples: CUDA events on the GPU, a steady clock on the CPU; medians of many
// runs after a warm-up, so one slow run (a page fault, a clock ramp) does not move the figure.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <coalesce/coalesce.hpp>

#if COALESCE_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace bench {

inline void check_cuda([[maybe_unused]] int status, [[maybe_unused]] char const* what) {
#if COALESCE_WITH_CUDA
  if (status != 0) {
    std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(static_cast<cudaError_t>(status)));
    std::exit(1);
  }
#endif
}

// Median milliseconds of `runs` calls of f() after `warmup` calls.
template <class F> double median_ms(F&& f, int runs = 15, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  ms.reserve(runs);
#if COALESCE_WITH_CUDA
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < runs; ++i) {
    check_cuda(cudaEventRecord(start), "cudaEventRecord");
    f();
    check_cuda(cudaEventRecord(stop), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float elapsed = 0;
    check_cuda(cudaEventElapsedTime(&elapsed, start, stop), "cudaEventElapsedTime");
    ms.push_back(elapsed);
  }
  check_cuda(cudaGetLastError(), "kernel");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
#else
  for (int i = 0; i < runs; ++i) {
    auto const t0 = std::chrono::steady_clock::now();
    f();
    auto const t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
#endif
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Exit status for "could not run here" (CTest's SKIP_RETURN_CODE in this project).
inline constexpr int skipped = 77;

// A CUDA build needs a GPU to run its device code; say so plainly instead of failing later.
inline bool gpu_missing() {
#if COALESCE_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr,
                 "SKIPPED: this build of coalesce uses CUDA and no CUDA GPU is visible; run it on a GPU "
                 "machine, or build with -DCOALESCE_ENABLE_CUDA=OFF to run on the CPU\n");
    return true;
  }
#endif
  return false;
}

inline char const* device_name() {
#if COALESCE_WITH_CUDA
  static cudaDeviceProp prop{};
  static bool const ok = cudaGetDeviceProperties(&prop, 0) == cudaSuccess;
  return ok ? prop.name : "unknown GPU";
#else
  return "CPU (OpenMP device system)";
#endif
}

}  // namespace bench
