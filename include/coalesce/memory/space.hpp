// coalesce/memory/space.hpp - where memory lives and where loops run.
//
//   coalesce::vector<Particle, coalesce::soa, coalesce::host> on_host;    // host memory, host loops
//   coalesce::vector<Particle, coalesce::soa, coalesce::device> on_gpu;   // GPU memory (CUDA), or host
//                                                    // memory with OpenMP loops without CUDA
//   coalesce::for_each_index(coalesce::device{}, n, [] COALESCE_HOST_DEVICE(std::size_t) {});
//   coalesce::for_each_index(coalesce::device{s}, n, [] COALESCE_HOST_DEVICE(std::size_t) {});  // on stream s
//
// `device` is Thrust's notion of the device system: CUDA when CUDA is enabled, OpenMP otherwise,
// so every program and test also runs on a machine without a GPU.
#pragma once
#include <type_traits>

#include "../core/config.hpp"
#include "stream.hpp"

namespace coalesce {

// Host memory, and loops that run on the calling thread.
struct host {};
// The device, and the stream its loops and copies go to: device{} is the default stream,
// device{s} a stream of yours (coalesce/memory/stream.hpp).
struct device {
  coalesce::stream stream{};  // default_stream unless named: device{s}
};

template <class S>
concept space = std::is_same_v<S, host> || std::is_same_v<S, device>;

// True when device memory is GPU memory (libcoalesce built with CUDA).
inline constexpr bool device_is_gpu = COALESCE_WITH_CUDA != 0;

}  // namespace coalesce
