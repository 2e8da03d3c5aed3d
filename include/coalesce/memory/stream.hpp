// coalesce/memory/stream.hpp - the CUDA stream that coalesce's work goes to.
//
//   // s: a cudaStream_t of yours (cudaStreamCreate), or coalesce::stream{} for the default stream
//   coalesce::for_each_index(coalesce::device{s}, n, [] COALESCE_HOST_DEVICE(std::size_t) {});  // launched on s
//   coalesce::reorder_plan plan(s);                             // keys, sorts, apply, remap on s
//   d.copy_to(legacy_out, s);                                   // copies on s
//   coalesce::synchronize(s);                                   // waits for s only
//
// A stream is a cudaStream_t (or cuda::stream_ref's get()) in a CUDA build. Without CUDA it is
// an empty value: the same source compiles, and the work runs on the host as before. The
// default, coalesce::stream{}, is the handle 0: CUDA's legacy default stream for the work
// libcoalesce.a queues. A program built with --default-stream per-thread passes
// cudaStreamPerThread explicitly (coalesce::device{cudaStreamPerThread}, reorder_plan
// plan(cudaStreamPerThread)): libcoalesce.a is compiled once and cannot see that flag.
//
// Which calls wait: a call whose result the host reads (a copy into host memory, a check that
// reads a flag back, a size that lives on the GPU) waits for its stream; anything else only
// queues work on it. Each function's comment says which it is.
#pragma once
#include "../core/config.hpp"

#if COALESCE_WITH_CUDA
struct CUstream_st;  // cudaStream_t is CUstream_st*: no CUDA header needed in plain C++ files
#endif

namespace coalesce {

class stream {
 public:
  constexpr stream() = default;
#if COALESCE_WITH_CUDA
  // Implicit, so a cudaStream_t goes wherever a coalesce::stream is asked for.
  constexpr stream(CUstream_st* native) : native_(native) {}  // NOLINT(google-explicit-constructor)
  constexpr CUstream_st* native() const { return native_; }
#endif
  // The handle as libcoalesce passes it around (null: the default stream, and always on the CPU).
  constexpr void* handle() const {
#if COALESCE_WITH_CUDA
    return native_;
#else
    return nullptr;
#endif
  }
  friend constexpr bool operator==(stream a, stream b) { return a.handle() == b.handle(); }

 private:
#if COALESCE_WITH_CUDA
  CUstream_st* native_ = nullptr;
#endif
};

namespace detail {
// Waits for the work queued on s (CUDA), reporting asynchronous errors as coalesce::error.
void synchronize_stream(void* stream);
}  // namespace detail

// Waits until the work queued on s so far has finished; reports asynchronous errors as
// coalesce::error. Nothing to wait for without CUDA.
inline void synchronize(stream s) { detail::synchronize_stream(s.handle()); }

}  // namespace coalesce
