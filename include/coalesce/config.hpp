// coalesce/config.hpp - macros shared by every header.
//
//   COALESCE_HOST_DEVICE   __host__ __device__ under nvcc, nothing otherwise
//   COALESCE_WITH_CUDA     1 when libcoalesce was built with CUDA (set by the CMake target)
//   COALESCE_CHECK_BOUNDS  1 to check every v[i] (default: on unless NDEBUG)
#pragma once

#if defined(__CUDACC__)
#define COALESCE_HOST_DEVICE __host__ __device__
#define COALESCE_DEVICE_COMPILER 1
#else
#define COALESCE_HOST_DEVICE
#define COALESCE_DEVICE_COMPILER 0
#endif

#ifndef COALESCE_WITH_CUDA
#define COALESCE_WITH_CUDA 0
#endif

#ifndef COALESCE_CHECK_BOUNDS
#ifdef NDEBUG
#define COALESCE_CHECK_BOUNDS 0
#else
#define COALESCE_CHECK_BOUNDS 1
#endif
#endif

// Proxies and address arithmetic must inline completely, so that member lookups fold to
// constants and kernels compile to the same loads and stores as hand-written ones.
#if defined(__CUDACC__)
#define COALESCE_INLINE __forceinline__
#elif defined(__GNUC__)
#define COALESCE_INLINE inline __attribute__((always_inline))
#else
#define COALESCE_INLINE inline
#endif

#if defined(__CUDA_ARCH__)
#define COALESCE_IN_DEVICE_CODE 1
#else
#define COALESCE_IN_DEVICE_CODE 0
#endif
