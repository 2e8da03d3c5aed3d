// coalesce/memory/stream.hpp - the CUDA stream that coalesce's work goes to, and the one rule.
//
// The rule: every call that runs work takes a coalesce::stream as its last argument,
// coalesce::default_stream when left out (a reorder_plan's calls run on the stream the plan was
// made with, as a cuFFT plan's do), and a device vector keeps only its allocation stream.
//
//   // s: a cudaStream_t of yours (cudaStreamCreate), or coalesce::default_stream
//   coalesce::device_vector<Particle> on_s(n, s);               // allocated and zeroed on s
//   coalesce::for_each_index(coalesce::device{}, n, [] COALESCE_HOST_DEVICE(std::size_t) {}, s);  // on s
//   coalesce::reorder_plan plan(s);                             // keys, sorts, apply, remap on s
//   on_s.copy_to(legacy_out, s);                                // copies on s
//   coalesce::synchronize(s);                                   // waits for s only
//
// A stream is a cudaStream_t (or cuda::stream_ref's get()) in a CUDA build. Without CUDA it is
// an empty value: the same source compiles, and the work runs on the host as before.
// coalesce::default_stream (equal to coalesce::stream{}) is the handle 0: CUDA's legacy default
// stream for the work libcoalesce.a queues. A program built with --default-stream per-thread
// passes cudaStreamPerThread explicitly: libcoalesce.a is compiled once and cannot see that flag.
// `coalesce::device{s}` (the stream named in the space) is the older spelling of a loop's stream
// and means the same as passing s last.
//
// Which calls wait: a call whose result the host reads (a copy into host memory, a check that
// reads a flag back, a size that lives on the GPU) waits for its stream; copies and fills on the
// default stream are done when they return (so work you then put on a non-blocking stream sees
// them); anything else only queues work on its stream. Each function's comment says which it is.
#pragma once
#include "../core/config.hpp"

#if COALESCE_WITH_CUDA
struct CUstream_st;  // cudaStream_t is CUstream_st*: no CUDA header needed in plain C++ files
#endif

namespace coalesce {

// A CUDA stream handle (cudaStream_t) that every call running work takes last; an empty value
// without CUDA. Not owning: the caller creates and destroys its streams.
class stream {
 public:
  // The default stream, as default_stream.
  constexpr stream() = default;
#if COALESCE_WITH_CUDA
  // Implicit, so a cudaStream_t goes wherever a coalesce::stream is asked for.
  constexpr stream(CUstream_st* native) : native_(native) {}  // NOLINT(google-explicit-constructor)
  constexpr CUstream_st* native() const { return native_; }   // the cudaStream_t, for CUDA calls
#endif
  // The handle as libcoalesce passes it around (null: the default stream, and always on the CPU).
  constexpr void* handle() const {
#if COALESCE_WITH_CUDA
    return native_;
#else
    return nullptr;
#endif
  }
  // True when both name the same CUDA stream (always, without CUDA).
  friend constexpr bool operator==(stream a, stream b) { return a.handle() == b.handle(); }

 private:
#if COALESCE_WITH_CUDA
  CUstream_st* native_ = nullptr;
#endif
};

// The default stream, by name: what every stream argument means when it is left out.
inline constexpr stream default_stream{};

namespace detail {
// Waits for the work queued on s (CUDA), reporting asynchronous errors as coalesce::error.
void synchronize_stream(void* stream);
}  // namespace detail

// Waits until the work queued on s so far has finished; reports asynchronous errors as
// coalesce::error. Nothing to wait for without CUDA.
inline void synchronize(stream s) { detail::synchronize_stream(s.handle()); }

}  // namespace coalesce
