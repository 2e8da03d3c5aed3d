// Whether tests that touch device memory can run here.
#pragma once
#include <coalesce/core/config.hpp>

#if COALESCE_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace coalesce_test {
inline bool needs_gpu_but_has_none() {
#if COALESCE_WITH_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) != cudaSuccess || count == 0;
#else
  return false;
#endif
}
}  // namespace coalesce_test
