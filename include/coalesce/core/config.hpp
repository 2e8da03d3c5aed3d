// coalesce/core/config.hpp - macros shared by every header.
//
//   COALESCE_HOST_DEVICE   __host__ __device__ under nvcc, nothing otherwise
//   COALESCE_WITH_CUDA     1 when libcoalesce was built with CUDA: read from the header its build
//                          generated (coalesce/detail/build_config.hpp), never from your command line
//   COALESCE_CHECK_BOUNDS  1 to check every v[i]: set by the CMake target (COALESCE_CHECK_BOUNDS=
//                          AUTO|ON|OFF, AUTO = Debug builds only); without CMake, on unless NDEBUG
//
// docs/building.md says how to build with and without CMake.
#pragma once

// How libcoalesce.a was built. Every build tree and every installed tree has this header (next to
// core/ once installed: coalesce/detail/, so another build's copy on the include path cannot win); the source
// tree has none.
#if __has_include("../detail/build_config.hpp")
#include "../detail/build_config.hpp"
#elif __has_include(<coalesce/detail/build_config.hpp>)
#include <coalesce/detail/build_config.hpp>
#endif

#if defined(COALESCE_BUILD_WITH_CUDA)
// A definition of one's own that disagrees would compile the headers one way and libcoalesce.a
// the other: device loops without kernels, and an ODR violation between translation units.
#if defined(COALESCE_WITH_CUDA) && (COALESCE_WITH_CUDA + 0) != COALESCE_BUILD_WITH_CUDA
#if COALESCE_BUILD_WITH_CUDA
#error \
    "coalesce: this libcoalesce was built with CUDA, but COALESCE_WITH_CUDA is defined as 0 here; remove -DCOALESCE_WITH_CUDA (the build's coalesce/detail/build_config.hpp sets it), or build coalesce with -DCOALESCE_ENABLE_CUDA=OFF"
#else
#error \
    "coalesce: this libcoalesce was built without CUDA, but COALESCE_WITH_CUDA is defined as 1 here; remove -DCOALESCE_WITH_CUDA (the build's coalesce/detail/build_config.hpp sets it), or build coalesce with -DCOALESCE_ENABLE_CUDA=ON"
#endif
#endif
#undef COALESCE_WITH_CUDA
#define COALESCE_WITH_CUDA COALESCE_BUILD_WITH_CUDA
#elif !defined(COALESCE_WITH_CUDA)
#error \
    "coalesce: no coalesce/detail/build_config.hpp on the include path, so this is coalesce's source tree: compile against a build's or an installed include directory (cmake --install), or say how the libcoalesce.a you link was built: -DCOALESCE_WITH_CUDA=1 (CUDA) or -DCOALESCE_WITH_CUDA=0 (see docs/building.md)"
#endif

// Every translation unit compiled against a build's configuration refers to a symbol that only
// a libcoalesce.a built that way defines (cmake/build_config.cpp), so linking headers of one
// configuration (or version) with a library of another fails at link time, naming both, instead
// of running with two meanings of COALESCE_WITH_CUDA.
#if defined(COALESCE_BUILD_WITH_CUDA) && defined(__GNUC__)
#define COALESCE_DETAIL_LINK_CHECK_NAME_(major, minor, cuda) libcoalesce_##major##_##minor##_built_with_cuda_##cuda
#define COALESCE_DETAIL_LINK_CHECK_NAME(major, minor, cuda) COALESCE_DETAIL_LINK_CHECK_NAME_(major, minor, cuda)
#define COALESCE_DETAIL_LINK_CHECK \
  COALESCE_DETAIL_LINK_CHECK_NAME(COALESCE_BUILD_VERSION_MAJOR, COALESCE_BUILD_VERSION_MINOR, COALESCE_BUILD_WITH_CUDA)
namespace coalesce::detail {
extern int const COALESCE_DETAIL_LINK_CHECK;
__attribute__((used)) static int const* const link_check = &COALESCE_DETAIL_LINK_CHECK;
}  // namespace coalesce::detail
#endif

#if defined(__CUDACC__)
#define COALESCE_HOST_DEVICE __host__ __device__
#define COALESCE_DEVICE_COMPILER 1
#else
#define COALESCE_HOST_DEVICE
#define COALESCE_DEVICE_COMPILER 0
#endif

// Checks are inline header code, so each translation unit may choose: the two versions of an
// accessor differ only for an index out of range (undefined behaviour either way), and no type's
// layout or libcoalesce.a's code depends on the choice.
#ifndef COALESCE_CHECK_BOUNDS
#ifdef NDEBUG
#define COALESCE_CHECK_BOUNDS 0
#else
#define COALESCE_CHECK_BOUNDS 1
// An optimised build that says nothing (a legacy Makefile's -O3 without -DNDEBUG) gets checks it
// probably did not ask for: say so once per file, and how to choose. CMake builds always define
// COALESCE_CHECK_BOUNDS, so they never see this.
#if defined(__OPTIMIZE__) && !defined(__CUDA_ARCH__)
#pragma message( \
    "coalesce: bounds checks of v[i] are ON in this optimised build (no NDEBUG, no COALESCE_CHECK_BOUNDS); they cost 1.75-2.3x in member access. Add -DNDEBUG or -DCOALESCE_CHECK_BOUNDS=0 to turn them off, or -DCOALESCE_CHECK_BOUNDS=1 to keep them without this note")
#endif
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

// The same for the lambdas inside the access chain (the folds over members and leaves): an
// always_inline function that calls a plain lambda still makes one call per access once g++'s
// unit-growth limit is reached (tests/large_unit). Placed after a lambda's parameter list.
#if defined(__GNUC__)
#define COALESCE_INLINE_LAMBDA __attribute__((always_inline))
#else
#define COALESCE_INLINE_LAMBDA
#endif

#if defined(__CUDA_ARCH__)
#define COALESCE_IN_DEVICE_CODE 1
#else
#define COALESCE_IN_DEVICE_CODE 0
#endif
