// Type-erased memory operations, compiled once into libcoalesce.a (src/memory_*.cpp|cu).
// Everything that moves bulk data goes through here, so a user translation unit never
// instantiates a copy kernel and can be plain C++ even when device memory is GPU memory.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "space.hpp"

namespace coalesce::detail {

enum class memory_kind : unsigned char { host, device };

// A fresh value on every call, unique across the program (an inline function's one counter):
// the stamps vector::order_stamp() hands out.
inline std::uint64_t next_order_stamp() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

template <class S> inline constexpr memory_kind kind_of_space =
    std::is_same_v<S, device> ? memory_kind::device : memory_kind::host;

// True when memory of this kind can be read by host code (always, unless it is GPU memory).
constexpr bool host_accessible(memory_kind k) { return k == memory_kind::host || !device_is_gpu; }

// True when pointers of kind a and of kind b can be used together by one loop or kernel: the
// same kind, or both readable by host code (without CUDA, device memory is host memory).
constexpr bool same_memory(memory_kind a, memory_kind b) {
  return a == b || (host_accessible(a) && host_accessible(b));
}

// Throws coalesce::error when p (not null) is not memory of `kind`: GPU memory handed over as
// host memory or the reverse (a list or span that names the wrong space). Managed memory passes
// as both. Without CUDA both kinds are host memory and nothing is checked.
void check_space(memory_kind kind, void const* p, char const* what);

// 256-byte aligned; throws coalesce::error saying how much could not be had and why.
void* allocate(memory_kind kind, std::size_t bytes);
void deallocate(memory_kind kind, void* p) noexcept;
// GPU memory allocated in a stream's order (cudaMallocAsync from the device's pool: no
// device-wide wait, allowed inside a CUDA graph capture on that stream). Host memory, a null
// stream or a device without memory pools get allocate(); `how` says which it was.
struct stream_allocation {
  bool ordered = false;     // cudaMallocAsync: free with deallocate_on_stream
  bool in_capture = false;  // allocated while a graph capture on the stream was under way
  bool scratch = false;     // allocate_scratch's pool: free with deallocate_scratch
};
void* allocate_on_stream(memory_kind kind, std::size_t bytes, void* stream, stream_allocation& how);
// Frees stream-ordered memory after the work queued on `stream` (cudaFreeAsync); a null stream
// waits for the whole device first, as cudaFree does.
void deallocate_on_stream(void* p, void* stream) noexcept;
// Temporary GPU memory for one call's work queued on `stream` (null: the default stream), from a
// memory pool of coalesce's own that keeps what is freed (release threshold: everything), so a call
// made every time step gets its scratch without the driver (no cudaMalloc, no device-wide wait at
// cudaFree). Freed after the work on `stream`. Host memory, or a device without memory pools, gets
// allocate() (`how` says which it was). The user's own pools are not touched.
void* allocate_scratch(memory_kind kind, std::size_t bytes, void* stream, stream_allocation& how);
// After the work on `stream` only (no device-wide wait, also on the default stream: the scratch
// was used there).
void deallocate_scratch(void* p, void* stream) noexcept;
// True while a CUDA graph capture is under way on `stream` (never without CUDA).
bool stream_is_capturing(void* stream);
// `stream` is a coalesce::stream's handle (null: the default stream). Copies queue on it and
// wait for it only when host memory is on either side (the host may then read or reuse it).
void copy_bytes(memory_kind dst_kind, void* dst, memory_kind src_kind, void const* src, std::size_t bytes,
                void* stream = nullptr);
void zero_bytes(memory_kind kind, void* p, std::size_t bytes, void* stream = nullptr);

// One column of elements copied within one kind of memory: element i of dst from element i of src.
struct column_copy {
  column_ref dst;
  column_ref src;
  std::size_t width;  // bytes per element
};
// The bytes of destination records that no column covers: kept as they are (the copy reads them
// first), or written as zeros, which the caller may ask for when the columns are every leaf of
// the elements (those bytes are then padding): a padded 12-byte slot saves a 16-byte read.
enum class record_gaps : unsigned char { keep, zero };
void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n,
                  void* stream = nullptr, record_gaps gaps = record_gaps::keep);
// The largest record (bytes) that a copy of columns into aos records in GPU memory writes one record
// per thread (assembled in registers, stored whole); larger ones go through a shared-memory tile.
// Benchmarks compare the two paths with it. Returns the previous setting.
std::size_t set_per_thread_record_bytes(std::size_t bytes);
// The shared-memory tile of those copies: bytes of records per block, 32 KiB by default, clamped
// to 1-46 KiB (the skewed tile stays under 48 KiB). Benchmarks compare tile sizes with it.
// Returns the previous setting.
std::size_t set_record_tile_bytes(std::size_t bytes);
// Evenly spaced 4-byte columns copied alike: column j at dst.base + j * dst_step and src.base +
// j * src_step, the rest of each column_ref as given (the sub-columns of a std::array member,
// which a mapping places evenly). One entry stands for `columns` column_copy entries, so a
// member of thousands of sub-columns costs the host one entry, not thousands.
struct column_run_copy {
  column_ref dst;
  column_ref src;
  std::ptrdiff_t dst_step = 0;
  std::ptrdiff_t src_step = 0;
  std::size_t columns = 0;
};
// The runs (first) and the columns, as copy_columns would move the runs' columns one by one.
void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, column_run_copy const* runs,
                  std::size_t run_count, std::size_t n, void* stream = nullptr, record_gaps gaps = record_gaps::keep);

// One column whose elements change format on the way (core/stored_types.hpp): element i of dst,
// in format `to`, from element i of src, in format `from`. A list of them that writes a bit-packed
// word holds every field of that word (column_copies marks whole words): a word written only by
// conversions from unpacked columns is composed without reading it first.
struct column_conversion {
  column_ref dst;
  column_ref src;
  stored_format to;
  stored_format from;
  std::size_t width;  // bytes per destination element (a plain copy when to == from)
};
// The first element (and its column) that a destination format could not hold and does not
// saturate; element == n when every value fitted. Waits for the conversion to read that.
struct conversion_result {
  std::size_t element = 0;
  std::size_t column = 0;
};
conversion_result convert_columns(memory_kind kind, column_conversion const* columns, std::size_t count, std::size_t n,
                                  void* stream = nullptr);
// A conversion between layouts: the copies and runs (every leaf that keeps its format, record gaps
// zeroed as padding), then the conversions; the result indexes `conversions`. In GPU memory the
// contiguous kept columns go in the conversions' launch.
conversion_result copy_and_convert_columns(memory_kind kind, column_copy const* copies, std::size_t copy_count,
                                           column_run_copy const* runs, std::size_t run_count,
                                           column_conversion const* conversions, std::size_t conversion_count,
                                           std::size_t n, void* stream);

// One column filled with a value (elements [first, first + n)).
struct column_fill {
  column_ref dst;
  std::size_t width;
  void const* value;  // host pointer to `width` bytes
};
void fill_columns(memory_kind kind, column_fill const* columns, std::size_t count, std::size_t first, std::size_t n,
                  void* stream = nullptr);

// Waits for queued device work; rethrows any asynchronous CUDA error as coalesce::error.
void synchronize(memory_kind kind);

// Owning, movable bytes of one kind of memory. Made on a stream, GPU memory is allocated in its
// order and freed in the order of the stream named last (free_on): the stream must outlive it.
class buffer {
 public:
  buffer() = default;
  buffer(memory_kind kind, std::size_t bytes)
      : kind_(kind), data_(bytes == 0 ? nullptr : static_cast<std::byte*>(allocate(kind, bytes))), bytes_(bytes) {}
  buffer(memory_kind kind, std::size_t bytes, void* stream) : kind_(kind), bytes_(bytes), free_stream_(stream) {
    if (bytes > 0) data_ = static_cast<std::byte*>(allocate_on_stream(kind, bytes, stream, how_));
  }
  // Scratch memory for work on `stream` (allocate_scratch): freed after that work.
  struct scratch_tag {};
  buffer(memory_kind kind, std::size_t bytes, void* stream, scratch_tag)
      : kind_(kind), bytes_(bytes), free_stream_(stream) {
    if (bytes > 0) data_ = static_cast<std::byte*>(allocate_scratch(kind, bytes, stream, how_));
  }
  buffer(buffer&& other) noexcept { swap(other); }
  buffer& operator=(buffer&& other) noexcept {
    buffer(std::move(other)).swap(*this);
    return *this;
  }
  buffer(buffer const&) = delete;
  buffer& operator=(buffer const&) = delete;
  ~buffer() {
    if (data_ == nullptr) return;
    if (how_.scratch) {
      deallocate_scratch(data_, free_stream_);
    } else if (how_.ordered) {
      deallocate_on_stream(data_, free_stream_);
    } else {
      deallocate(kind_, data_);
    }
  }
  void swap(buffer& other) noexcept {
    std::swap(kind_, other.kind_);
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    std::swap(how_, other.how_);
    std::swap(free_stream_, other.free_stream_);
  }
  // Stream-ordered memory is freed after the work on `stream` (the last user's stream) instead;
  // null: after all work. Nothing changes for memory that is not stream ordered.
  void free_on(void* stream) { free_stream_ = stream; }
  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  memory_kind kind() const { return kind_; }
  bool allocated_in_capture() const { return how_.in_capture; }

 private:
  memory_kind kind_ = memory_kind::host;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  stream_allocation how_{};
  void* free_stream_ = nullptr;
};

// The one stream rule for memory that keeps an allocation stream (coalesce::vector and
// coalesce::array; coalesce/memory/stream.hpp). A call on the default stream first waits for the
// work queued on the allocation stream (the allocation itself, the caller's kernels there). While
// that stream is capturing a graph its storage may be the graph's (no memory behind it until a
// launch) and waiting is not allowed: only calls on that stream may touch it. `owner` names the
// container, `calls` its calls that take the stream, for the message.
inline void wait_for_allocation_stream(stream allocation, stream on, char const* owner, char const* calls) {
  if (allocation == default_stream || on == allocation) return;
  if (stream_is_capturing(allocation.handle())) {
    throw_error(std::string("a call on ") + owner +
                " whose allocation stream is capturing a CUDA graph, made on another stream: pass that stream as "
                "the call's last argument (" +
                calls + ")");
  }
  if (on == default_stream) coalesce::synchronize(allocation);
}

// Memory allocated before a graph capture cannot be freed inside it (on its allocation stream, or
// on `on`, where a growth frees it): `fix` says what to do instead.
inline void check_not_freeing_inside_capture(buffer const& memory, stream allocation, stream on, char const* owner,
                                             char const* fix) {
  if (memory.size() > 0 && !memory.allocated_in_capture() &&
      (stream_is_capturing(allocation.handle()) || stream_is_capturing(on.handle()))) {
    throw_error(std::string(owner) +
                " made before the CUDA graph capture on its stream began cannot grow inside it (the capture "
                "cannot free its old memory); " +
                fix);
  }
}

}  // namespace coalesce::detail
