// Internal to libcoalesce: every CUDA call is checked and turned into coalesce::error.
#pragma once
#include <string>

#include <cuda_runtime.h>

#include <coalesce/core/error.hpp>

#define COALESCE_CUDA_TRY(call)                                                                                      \
  do {                                                                                                               \
    cudaError_t const coalesce_status_ = (call);                                                                     \
    if (coalesce_status_ != cudaSuccess) {                                                                           \
      cudaGetLastError(); /* cleared: an error reported here must not resurface at the next check */                 \
      ::coalesce::detail::throw_error(std::string(#call) + " failed: " + cudaGetErrorName(coalesce_status_) + " (" + \
                                      cudaGetErrorString(coalesce_status_) + ")");                                   \
    }                                                                                                                \
  } while (0)
