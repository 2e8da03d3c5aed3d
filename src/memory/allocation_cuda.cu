// GPU memory: allocation (stream-ordered where the device has memory pools), transfers, zero-fills
// and the checks of where a pointer lives. The column copies: column_copy_cuda.cu.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "column_chunks.hpp"  // host_allocate
#include "copy_launch.cuh"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {

// Stream-ordered allocation needs the device's memory pools (every GPU CUDA 13 supports has
// them; the query keeps a device without them working, on cudaMalloc).
static bool pools_supported() {
  int device = 0, pools = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && pools != 0;
}

[[noreturn]] static void allocation_failed(cudaError_t status, std::size_t bytes) {
  cudaGetLastError();  // clear the sticky-free allocation error so later calls do not see it
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    throw_error("could not allocate " + std::to_string(bytes) + " bytes of GPU memory: no GPU is visible (" +
                cudaGetErrorString(status) +
                "). Run on a machine with an NVIDIA GPU and its driver, check "
                "CUDA_VISIBLE_DEVICES, or build coalesce without CUDA (-DCOALESCE_ENABLE_CUDA=OFF) for the CPU");
  }
  if (status == cudaErrorStreamCaptureUnsupported || status == cudaErrorStreamCaptureInvalidated) {
    throw_error("could not allocate " + std::to_string(bytes) + " bytes of GPU memory: " + cudaGetErrorString(status) +
                " (a CUDA graph capture is under way and this allocation is not on the capturing stream; make the "
                "vector on that stream, or allocate before capturing)");
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  throw_error("could not allocate " + std::to_string(bytes) + " bytes of GPU memory: " + cudaGetErrorString(status) +
              " (" + std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
              " bytes free); reduce the size or free device memory first");
}

void* allocate(memory_kind kind, std::size_t bytes) {
  if (kind == memory_kind::host) return host_allocate(bytes);
  void* p = nullptr;
  cudaError_t const status = cudaMalloc(&p, bytes);
  if (status != cudaSuccess) allocation_failed(status, bytes);
  return p;
}

void deallocate(memory_kind kind, void* p) noexcept {
  if (kind == memory_kind::host) {
    host_deallocate(p);
  } else {
    cudaFree(p);  // errors here are reported by the next checked call; a destructor must not throw
  }
}

bool stream_is_capturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (stream == nullptr) return false;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
    cudaGetLastError();  // not left for an unrelated call to report
    return false;
  }
  return status == cudaStreamCaptureStatusActive;
}

void* allocate_on_stream(memory_kind kind, std::size_t bytes, void* stream, stream_allocation& how) {
  how = {};
  if (kind == memory_kind::host || stream == nullptr || !pools_supported()) return allocate(kind, bytes);
  void* p = nullptr;
  cudaError_t const status = cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream));
  if (status != cudaSuccess) allocation_failed(status, bytes);
  how.ordered = true;
  how.in_capture = stream_is_capturing(stream);
  return p;
}

// coalesce's scratch pool of the current device, made on first use: its release threshold keeps
// every freed byte for the next allocation (the default pool's threshold, 0, hands memory back to
// the driver at each synchronization, and changing it would change the user's program).
static cudaMemPool_t scratch_pool() {
  constexpr int most_devices = 64;
  static std::mutex made;
  static cudaMemPool_t pools[most_devices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= most_devices) {
    cudaGetLastError();
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(made);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    std::uint64_t keep_everything = ~std::uint64_t{0};
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything);
    pools[device] = pool;
  }
  return pools[device];
}

void* allocate_scratch(memory_kind kind, std::size_t bytes, void* stream, stream_allocation& how) {
  how = {};
  if (kind == memory_kind::host || !pools_supported()) return allocate(kind, bytes);
  cudaMemPool_t const pool = scratch_pool();
  if (pool == nullptr) return allocate(kind, bytes);
  void* p = nullptr;
  cudaError_t const status = cudaMallocFromPoolAsync(&p, bytes, pool, static_cast<cudaStream_t>(stream));
  if (status != cudaSuccess) allocation_failed(status, bytes);
  how.ordered = true;
  how.scratch = true;
  how.in_capture = stream_is_capturing(stream);
  return p;
}

void deallocate_scratch(void* p, void* stream) noexcept {
  if (cudaFreeAsync(p, static_cast<cudaStream_t>(stream)) != cudaSuccess) cudaGetLastError();
}

void deallocate_on_stream(void* p, void* stream) noexcept {
  // No stream to order the free after: wait for all work, as cudaFree does. Errors (a free inside
  // a capture of memory allocated outside it) are cleared, not left for an unrelated call.
  if (stream == nullptr && cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
  if (cudaFreeAsync(p, static_cast<cudaStream_t>(stream)) != cudaSuccess) cudaGetLastError();
}

void copy_bytes(memory_kind dst_kind, void* dst, memory_kind src_kind, void const* src, std::size_t bytes,
                void* stream) {
  if (bytes == 0) return;
  if (dst_kind == memory_kind::host && src_kind == memory_kind::host) {
    std::memcpy(dst, src, bytes);
    return;
  }
  cudaMemcpyKind const direction = dst_kind == memory_kind::host   ? cudaMemcpyDeviceToHost
                                   : src_kind == memory_kind::host ? cudaMemcpyHostToDevice
                                                                   : cudaMemcpyDeviceToDevice;
  cudaStream_t const on = static_cast<cudaStream_t>(stream);
  if (on == nullptr && direction != cudaMemcpyDeviceToDevice) {
    // The default stream: a plain cudaMemcpy, which waits as the host needs. (The same
    // cudaMemcpyAsync + cudaStreamSynchronize is equivalent, but compute-sanitizer's initcheck
    // then reports the copy's source as unwritten when the kernel writing it is still queued.)
    COALESCE_CUDA_TRY(cudaMemcpy(dst, src, bytes, direction));
    return;
  }
  COALESCE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, direction, on));
  // The host reads what arrives in host memory, and may reuse host memory it handed over, as soon
  // as this returns; device-to-device copies stay queued.
  if (direction != cudaMemcpyDeviceToDevice) COALESCE_CUDA_TRY(cudaStreamSynchronize(on));
}
// Zero-fills and fills without a stream of the caller's (constructors, resize) finish before
// they return: a caller's next work may go to a non-blocking stream, which does not wait for the
// default stream, and would race with a fill still queued there (distributed_md found forces
// overwritten by a zero-fill of their array that ran after the force kernel).
void wait_if_default_stream(void* stream) {
  if (stream == nullptr) COALESCE_CUDA_TRY(cudaStreamSynchronize(nullptr));
}

void zero_bytes(memory_kind kind, void* p, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (kind == memory_kind::host) {
    std::memset(p, 0, bytes);
  } else {
    COALESCE_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream)));
    wait_if_default_stream(stream);
  }
}

void check_space(memory_kind kind, void const* p, char const* what) {
  if (p == nullptr) return;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // no usable GPU: the call that needs one reports it
    return;
  }
  bool const on_gpu = attributes.type == cudaMemoryTypeDevice;
  bool const on_host = attributes.type == cudaMemoryTypeHost || attributes.type == cudaMemoryTypeUnregistered;
  if (kind == memory_kind::device && on_host) {
    throw_error(std::string(what) +
                " points to host memory but is declared in device memory (coalesce::device); "
                "name coalesce::host as its space (e.g. host_neighbor_list, host_span), or copy it to the GPU");
  }
  if (kind == memory_kind::host && on_gpu) {
    throw_error(std::string(what) +
                " points to GPU memory but is declared in host memory (coalesce::host, the "
                "default); name coalesce::device as its space (e.g. device_neighbor_list, device_span)");
  }
}

void synchronize(memory_kind kind) {
  if (kind == memory_kind::device) COALESCE_CUDA_TRY(cudaDeviceSynchronize());
}

void synchronize_stream(void* stream) { COALESCE_CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }
}  // namespace coalesce::detail
