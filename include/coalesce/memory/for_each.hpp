// coalesce/memory/for_each.hpp - one loop for every layout and space.
//
//   auto v = d.view();
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE (std::size_t i) {
//     v[i][&Particle::mass] *= 0.5f;
//   });
//   coalesce::synchronize(coalesce::device{});   // launches are asynchronous, like a kernel launch
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE (std::size_t i) {
//     v[i][&Particle::mass] *= 2.0f;
//   }, s);                                        // on the CUDA stream s: the stream last, as every
//                                                 // call that runs work takes it (memory/stream.hpp)
//
// host: a plain loop. device: one GPU thread per index (CUDA; the calling file must be compiled
// by nvcc with --extended-lambda, which the coalesce target adds), or all CPU cores through
// OpenMP when coalesce is built without CUDA.
#pragma once
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "../core/element_index.hpp"
#include "buffer.hpp"
#include "../core/error.hpp"
#include "space.hpp"
#include "stream.hpp"

#if !COALESCE_WITH_CUDA && defined(_OPENMP)
#include <omp.h>
#endif

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

template <class F> void launch_for_each_index(cudaStream_t stream, std::size_t n, F const& f) {
  constexpr unsigned threads = 256;
  std::size_t const blocks = (n + threads - 1) / threads;
  for_each_index_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(n, f);
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

// g++ 12 does not inline a kernel whose proxies keep copies of the view's pointers in its stack
// frame ("--param large-stack-frame-growth limit reached"): the loop then makes one call per
// element and cannot vectorize (7x-100x the raw loop, docs/dev/performance-history.md "CPU vectorization").
// Once inlined, the proxies fold to plain loads and stores and that frame is gone. So the
// functions that hold the loops are flattened: f and everything it calls are inlined into them,
// whatever the inliner's size and frame heuristics say (a function the kernel calls that must
// stay out of line can say so with __attribute__((noinline))).
#if defined(__GNUC__)
#define COALESCE_DETAIL_FLATTEN __attribute__((flatten))
// A thread's share of a loop stays one function, called once per thread: profilers and the
// assembly check of benchmarks/cpu_kernels find each kernel's loop under a name that says which
// kernel it runs (inlined into the OpenMP region's outlined function, it took a name that
// binutils cannot demangle).
#define COALESCE_DETAIL_OUT_OF_LINE __attribute__((noinline))
#else
#define COALESCE_DETAIL_FLATTEN
#define COALESCE_DETAIL_OUT_OF_LINE
#endif

template <class F> COALESCE_DETAIL_FLATTEN void for_each_index_serial(F& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) f(i);
}

#if !COALESCE_WITH_CUDA
// Indices [begin, end) of one thread. The kernel is copied first, so that its captures (the
// view's pointers, dt ...) live in registers, where a store through a column cannot alias them.
template <class F>
COALESCE_DETAIL_FLATTEN COALESCE_DETAIL_OUT_OF_LINE void for_each_index_range(F const& shared, std::ptrdiff_t begin,
                                                                              std::ptrdiff_t end,
                                                                              loop_exception& failure) noexcept {
  try {
    F f = shared;
    // simd: iterations are independent (the contract of for_each_index), which also tells the
    // compiler that one index's stores do not feed another's loads, so the loop vectorizes.
    // clang refuses a try statement inside an omp simd loop, so there the loop is left to its
    // own vectorizer.
#if !defined(__clang__)
#pragma omp simd
#endif
    for (std::ptrdiff_t i = begin; i < end; ++i) {
      try {
        f(static_cast<std::size_t>(i));
      } catch (...) {
        failure.record(static_cast<std::size_t>(i));
      }
    }
  } catch (...) {  // copying the kernel threw: no index of this thread ran
    failure.record(static_cast<std::size_t>(begin));
  }
}

// Blocks [first_block, end_block) of W elements of [0, n), as element_index{first, lane, W}: the
// lane loop of a whole block has a constant trip count and unit strides in the lane (what lets
// aosoa<W> loops vectorize, core/element_index.hpp); a partial last block runs lane by lane.
template <std::size_t W, class F>
COALESCE_DETAIL_FLATTEN COALESCE_DETAIL_OUT_OF_LINE void for_each_block_range(F const& shared,
                                                                              std::ptrdiff_t first_block,
                                                                              std::ptrdiff_t end_block, std::size_t n,
                                                                              loop_exception& failure) noexcept {
  try {
    F f = shared;
    for (std::ptrdiff_t b = first_block; b < end_block; ++b) {
      std::size_t const first = static_cast<std::size_t>(b) * W;
      if (first + W <= n) {
#if !defined(__clang__)
#pragma omp simd
#endif
        for (std::size_t lane = 0; lane < W; ++lane) {
          try {
            f(element_index{first, lane, W});
          } catch (...) {
            failure.record(first + lane);
          }
        }
      } else {
        for (std::size_t lane = 0; first + lane < n; ++lane) {
          try {
            f(element_index{first, lane, W});
          } catch (...) {
            failure.record(first + lane);
          }
        }
      }
    }
  } catch (...) {  // copying the kernel threw: no index of this thread ran
    failure.record(static_cast<std::size_t>(first_block) * W);
  }
}

// This thread's share of [0, count) units (indices or blocks): contiguous, static, each boundary
// a multiple of `grain` units (64 indices: whole cache lines of 4-byte fields).
inline void thread_share(std::ptrdiff_t count, std::ptrdiff_t grain, std::ptrdiff_t& begin, std::ptrdiff_t& end) {
#if defined(_OPENMP)
  std::ptrdiff_t const threads = omp_get_num_threads();
  std::ptrdiff_t const thread = omp_get_thread_num();
#else
  std::ptrdiff_t const threads = 1, thread = 0;
#endif
  std::ptrdiff_t const share = ((count + threads - 1) / threads + grain - 1) / grain * grain;
  begin = std::min(count, thread * share);
  end = std::min(count, begin + share);
}

// Runs run(begin, end, failure) on every thread for its share of `count` units.
// Called outside a parallel region, it opens one over all threads; called by every thread of an
// existing region (a time loop inside one `#pragma omp parallel`), it work-shares like an
// orphaned `omp for`, each thread its part, then a barrier. (A nested `omp parallel` there would
// give each thread a team of one that ran every unit: each element updated once per thread.) An
// exception is rethrown by the thread whose units threw it, the lowest index first.
template <class Run> void share_among_threads(std::ptrdiff_t count, std::ptrdiff_t grain, Run const& run) {
#if defined(_OPENMP)
  if (omp_in_parallel()) {
    std::ptrdiff_t begin = 0, end = 0;
    thread_share(count, grain, begin, end);
    loop_exception failure;  // this thread's: it rethrows what its own units threw
    run(begin, end, failure);
#pragma omp barrier
    failure.rethrow_if_any();
    return;
  }
#endif
  loop_exception failure;
#pragma omp parallel
  {
    std::ptrdiff_t begin = 0, end = 0;
    thread_share(count, grain, begin, end);
    run(begin, end, failure);
  }
  failure.rethrow_if_any();
}
#endif

template <std::size_t W, class F> COALESCE_DETAIL_FLATTEN void for_each_block_serial(F& f, std::size_t n) {
  std::size_t const whole = n / W * W;
  for (std::size_t first = 0; first < whole; first += W) {
    for (std::size_t lane = 0; lane < W; ++lane) f(element_index{first, lane, W});
  }
  for (std::size_t lane = 0; whole + lane < n; ++lane) f(element_index{whole, lane, W});
}

// A view of any layout (what for_each_index(space, view, f) loops over).
template <class V>
concept loop_view = requires(V const& v) {
  V::storage_type::blocked_width;
  { v.size() } -> std::convertible_to<std::size_t>;
};

// The device of a loop given device{s} and a last stream argument: the one stream they name.
inline device device_on(device where, stream on) {
  if (where.stream != default_stream && on != default_stream && where.stream != on) {
    throw_error(
        "for_each_index: device{s} and the last argument name two different streams; name the stream once "
        "(for_each_index(coalesce::device{}, n, f, s))");
  }
  return device{on == default_stream ? where.stream : on};
}
}  // namespace detail

// f(i) for i in [0, n), in order, on the calling thread; done when it returns.
template <class F> void for_each_index(host, std::size_t n, F&& f) { detail::for_each_index_serial(f, n); }

// device{}: the default stream; device{s}: the stream s. Returns once the kernel is queued (CUDA;
// synchronize to wait), or once the loop has run (OpenMP, where a stream means nothing).
// OpenMP: called outside a parallel region, it opens one over all threads; called by every thread
// of an existing region, it shares the indices among that region's threads as an orphaned
// `omp for` does, with the barrier at its end (every thread of the team must call it, as for
// `omp for`); an exception is rethrown by the thread whose indices threw it.
template <class F> void for_each_index(device on, std::size_t n, F f) {
  if (n == 0) return;
#if COALESCE_WITH_CUDA
#if COALESCE_DEVICE_COMPILER
  detail::launch_for_each_index(on.stream.native(), n, f);
#else
  static_assert(detail::dependent_false<F>,
                "coalesce: for_each_index(device{}, ...) runs f on the GPU, so this file must be compiled "
                "as CUDA (a .cu file, or set_source_files_properties(... LANGUAGE CUDA))");
#endif
#else
  (void)on;
  detail::share_among_threads(static_cast<std::ptrdiff_t>(n), 64,
                              [&](std::ptrdiff_t begin, std::ptrdiff_t end, detail::loop_exception& failure) {
                                detail::for_each_index_range(f, begin, end, failure);
                              });
#endif
}

// The loop over the elements of a view v (any layout), the kernel given each element's
// coalesce::element_index (core/element_index.hpp; a kernel taking std::size_t gets the plain
// index). Over aosoa<W> views on the CPU (OpenMP or host) it runs block by block, lane loops
// inside: the kernel's accesses then vectorize as a hand-written loop over blocks of lanes does.
// Every other layout, and the GPU, run for_each_index(space, v.size(), f) as it is.
template <detail::loop_view V, class F> void for_each_index(device on, V const& v, F f) {
#if COALESCE_WITH_CUDA
  for_each_index(on, static_cast<std::size_t>(v.size()), std::move(f));
#else
  constexpr std::size_t width = V::storage_type::blocked_width;
  if constexpr (width == 0) {
    for_each_index(on, static_cast<std::size_t>(v.size()), std::move(f));
  } else {
    (void)on;
    std::size_t const n = v.size();
    if (n == 0) return;
    auto const blocks = static_cast<std::ptrdiff_t>((n + width - 1) / width);
    constexpr auto grain = static_cast<std::ptrdiff_t>(width >= 64 ? 1 : 64 / width);  // >= 64 elements
    detail::share_among_threads(blocks, grain,
                                [&](std::ptrdiff_t begin, std::ptrdiff_t end, detail::loop_exception& failure) {
                                  detail::for_each_block_range<width>(f, begin, end, n, failure);
                                });
  }
#endif
}
// The same on stream `on`, given last (device{s} is the older spelling; naming two different streams
// throws coalesce::error).
template <detail::loop_view V, class F> void for_each_index(device where, V const& v, F f, stream on) {
  for_each_index(detail::device_on(where, on), v, std::move(f));
}
// The loop over a view's elements on the calling thread, in order (aosoa<W>: block by block, the
// kernel given each element's element_index); done when it returns.
template <detail::loop_view V, class F> void for_each_index(host, V const& v, F&& f) {
  constexpr std::size_t width = V::storage_type::blocked_width;
  if constexpr (width == 0) {
    detail::for_each_index_serial(f, static_cast<std::size_t>(v.size()));
  } else {
    detail::for_each_block_serial<width>(f, static_cast<std::size_t>(v.size()));
  }
}
// The same; a host loop ignores the stream and runs before returning.
template <detail::loop_view V, class F> void for_each_index(host, V const& v, F&& f, stream) {
  for_each_index(host{}, v, f);
}

// The loop on stream `on`, given last as every call that runs work takes its stream
// (coalesce/memory/stream.hpp); device{s} is the older spelling of the same. A host loop has no
// stream to run on: it runs before returning, whatever `on` is.
template <class F> void for_each_index(device where, std::size_t n, F f, stream on) {
  for_each_index(detail::device_on(where, on), n, std::move(f));
}
// The host loop, which runs before returning whatever the stream.
template <class F> void for_each_index(host, std::size_t n, F&& f, stream) { detail::for_each_index_serial(f, n); }

// Waits until device work queued so far has finished: all of it for device{}, the stream's for
// device{s}; reports asynchronous errors as coalesce::error.
inline void synchronize(device on) {
  if (on.stream == default_stream) {
    detail::synchronize(detail::memory_kind::device);
  } else {
    synchronize(on.stream);
  }
}
inline void synchronize(host) {}  // nothing to wait for: host loops are done when they return

}  // namespace coalesce
