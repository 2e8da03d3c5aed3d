// Device memory is GPU memory: allocation, transfers and the fused column-copy kernels.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "column_chunks.hpp"
#include "column_moves.cuh"
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
static void wait_if_default_stream(void* stream) {
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

namespace {

// Columns travel as a __grid_constant__ kernel parameter, so a launch needs no extra transfer.
constexpr int columns_per_launch = 64;
constexpr int block_threads = 256;

template <class Column> struct column_batch {
  Column columns[columns_per_launch];
  int count;
  std::size_t first;
  std::size_t n;
};

template <std::size_t W> struct word_of;
template <> struct word_of<1> { using type = std::uint8_t; };
template <> struct word_of<2> { using type = std::uint16_t; };
template <> struct word_of<4> { using type = std::uint32_t; };
template <> struct word_of<8> { using type = std::uint64_t; };
template <> struct word_of<16> { using type = uint4; };

// One thread per element (grid-stride), all columns of the element (move_element), so the
// lanes of a warp together touch whole records of an aos side (the same pattern as a
// hand-written record-per-thread conversion). Columns arrive grouped by word width, so the
// width is a compile-time constant.

// Group > 1: each item is Group consecutive elements moved as one Word (columns contiguous in
// runs of at least Group elements on both sides, e.g. soa and aosoa<W>), item i starting at
// element first + i * Group.
template <class Word, std::size_t Group = 1, bool Unblocked = false>
__global__ void copy_columns_kernel(__grid_constant__ column_batch<column_copy> const batch) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < batch.n;
       item += threads) {
    std::size_t const i = batch.first + item * Group;
    move_element<Word, Unblocked>(batch.columns, batch.count, i, i);
  }
}

template <std::size_t W> __device__ void fill_one(column_fill const& c, std::size_t i, uint4 const& value) {
  using word = typename word_of<W>::type;
  word w;
  memcpy(&w, &value, W);
  *reinterpret_cast<word*>(c.dst.address(i)) = w;
}

struct fill_column_on_device {
  column_fill column;  // column.value unused on the device
  uint4 value;
};

__global__ void fill_columns_kernel(__grid_constant__ column_batch<fill_column_on_device> const batch) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < batch.n; i += threads) {
    for (int c = 0; c < batch.count; ++c) {
      auto const& col = batch.columns[c];
      with_chunk_width(col.column.width,
                       [&](auto w) { fill_one<decltype(w)::value>(col.column, batch.first + i, col.value); });
    }
  }
}

// One thread per work item, every block launched at once (the hardware schedules them as
// others finish): measured faster on the H200 than a grid sized to the resident blocks that
// loops over the items.
unsigned grid_for(std::size_t work_items) {
  std::size_t const wanted = (work_items + block_threads - 1) / block_threads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, 0x7fffffff)));
}

}  // namespace

namespace {

// An aos side (all columns unblocked, one record stride, inside one record window) is moved
// through shared memory: a block copies a tile of whole records as contiguous 16-byte words,
// and the column side is read or written coalesced from the tile. Writing an aos destination
// column by column from registers scatters 4-byte stores at the record stride (measured at a
// quarter of the copy ceiling); the tile keeps both sides of global memory traffic contiguous.
constexpr std::size_t max_tiled_record_bytes = 128;
// Bytes of records per tile: 32 KiB by default, under the 48 KiB a block gets without opting in
// (set_record_tile_bytes).
std::atomic<std::size_t> record_tile_bytes{32 * 1024};

struct record_window {
  std::byte* base = nullptr;  // the lowest column address of record 0
  std::size_t stride = 0;     // record size
  std::size_t span = 0;       // bytes of a record that columns cover, from base
};

// From aos into a split layout: the columns of one packed destination record of 8 or 16 bytes
// (a split's packed position slot), written from the tile as one vector store per element with
// its padding words zeroed, instead of one 4-byte store per word at the slot's stride.
struct record_group {
  std::byte* base = nullptr;         // word 0 of element 0
  unsigned words = 0;                // 2 or 4: the slot's size in words
  int column[4] = {-1, -1, -1, -1};  // the batch column of each word; -1: padding, written as 0
};
constexpr int max_record_groups = 4;

struct tiled_batch {
  column_ref other[columns_per_launch];  // the non-aos side of each column
  unsigned offset[columns_per_launch];   // byte offset of the column inside the record window
  int count;
  int plain_count;  // FromAos: columns [0, plain_count) are stored one by one, the rest by groups
  record_group groups[max_record_groups];
  int group_count;
  bool same_shape;  // every column's element i at base + one offset (soa, aosoa): computed once per element
  record_window records;
  std::size_t n;
  std::size_t tile_records;  // records per tile: a multiple of the block size
  bool preload;              // to aos: the columns leave bytes of the records that must be kept: read them first
  bool fill_gaps;            // to aos: the columns leave padding: zero it in the tile
  bool skew;                 // the tile has one spare word after every 32 (tile_word)
};

// Where word w of the records lies in the tile. The columns' side reads or writes word
// e * stride + offset for the lanes' records e: a stride of 4, 8 or 16 words puts 8, 4 or 2 lanes
// (16 for 16 words) in one shared-memory bank. With one spare word after every 32 the lanes
// spread over the banks (at most two per bank for any stride; launch_tiled skews only where that
// is fewer than without).
__device__ inline std::size_t tile_word(std::size_t w, bool skew) { return skew ? w + (w >> 5) : w; }

// Copies `bytes` (a multiple of 4) between global memory and the tile, 16 bytes at a time where
// global memory is 16-byte aligned (a skewed tile takes them as four words: a 16-byte unit never
// straddles a spare word, and the lanes' four stores fall in distinct banks), the rest a word at a
// time.
template <bool ToTile, int Unroll = 4>
__device__ void move_tile_bytes(std::byte* global, std::uint32_t* tile, std::size_t bytes, bool skew) {
  std::size_t vectors = 0;
  if ((reinterpret_cast<std::uintptr_t>(global) & 15) == 0) {
    vectors = bytes / 16;
    // Unrolled so that several 16-byte loads per thread are in flight before the first
    // shared-memory store waits for its data.
#pragma unroll Unroll
    for (std::size_t v = threadIdx.x; v < vectors; v += blockDim.x) {
      auto* const g = reinterpret_cast<uint4*>(global) + v;
      if (skew) {
        std::uint32_t* const t = tile + 4 * v + (v >> 3);
        if constexpr (ToTile) {
          uint4 const x = *g;
          t[0] = x.x, t[1] = x.y, t[2] = x.z, t[3] = x.w;
        } else {
          *g = make_uint4(t[0], t[1], t[2], t[3]);
        }
      } else if constexpr (ToTile) {
        reinterpret_cast<uint4*>(tile)[v] = *g;
      } else {
        *g = reinterpret_cast<uint4 const*>(tile)[v];
      }
    }
  }
  for (std::size_t w = vectors * 4 + threadIdx.x; w < bytes / 4; w += blockDim.x) {
    if constexpr (ToTile) {
      tile[tile_word(w, skew)] = reinterpret_cast<std::uint32_t const*>(global)[w];
    } else {
      reinterpret_cast<std::uint32_t*>(global)[w] = tile[tile_word(w, skew)];
    }
  }
}

// Column c's element i; `offset` is element i's offset from its column's base where every column
// has the same shape (aosoa: a shift, a mask and two multiplications per element, not per column).
__device__ inline std::byte* column_element(tiled_batch const& batch, int c, std::size_t i, std::size_t offset) {
  return batch.same_shape ? batch.other[c].base + offset : batch.other[c].address(i);
}
__device__ inline std::size_t shared_offset(tiled_batch const& batch, std::size_t i) {
  return batch.same_shape ? static_cast<std::size_t>(batch.other[0].address(i) - batch.other[0].base) : 0;
}

// FromAos: records -> tile -> columns. Otherwise: columns -> tile -> records.
// From aos, all of a thread's 16-byte loads of the tile (8 for 32 KiB) are issued before its first
// shared-memory store: 64-byte aos -> soa 0.867 -> 0.874-0.877 of the copy ceiling, aos -> split
// 0.848-0.850 -> 0.850-0.860 (unrolled by 2: 0.870 / 0.850; H200, 2026-12-03, two runs each).
template <bool FromAos> __global__ void tiled_copy_kernel(__grid_constant__ tiled_batch const batch) {
  constexpr int load_unroll = FromAos ? 8 : 4;
  extern __shared__ uint4 tile_storage[];
  auto* tile = reinterpret_cast<std::uint32_t*>(tile_storage);
  record_window const& rec = batch.records;
  std::size_t const tile_records = batch.tile_records;
  for (std::size_t start = static_cast<std::size_t>(blockIdx.x) * tile_records; start < batch.n;
       start += static_cast<std::size_t>(gridDim.x) * tile_records) {
    std::size_t const count = min(tile_records, batch.n - start);
    std::size_t const bytes = (count - 1) * rec.stride + rec.span;
    std::byte* const global = rec.base + start * rec.stride;
    bool const skew = batch.skew;
    if constexpr (FromAos) {
      move_tile_bytes<true, load_unroll>(global, tile, bytes, skew);
      __syncthreads();
      for (std::size_t e = threadIdx.x; e < count; e += blockDim.x) {
        std::size_t const offset = shared_offset(batch, start + e);
        for (int c = 0; c < batch.plain_count; ++c) {
          *reinterpret_cast<std::uint32_t*>(column_element(batch, c, start + e, offset)) =
              tile[tile_word((e * rec.stride + batch.offset[c]) / 4, skew)];
        }
        for (int g = 0; g < batch.group_count; ++g) {
          record_group const& group = batch.groups[g];
          std::uint32_t w[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            int const c = group.column[k];
            w[k] = c < 0 ? 0u : tile[tile_word((e * rec.stride + batch.offset[c]) / 4, skew)];
          }
          if (group.words == 4) {
            reinterpret_cast<uint4*>(group.base)[start + e] = make_uint4(w[0], w[1], w[2], w[3]);
          } else {
            reinterpret_cast<uint2*>(group.base)[start + e] = make_uint2(w[0], w[1]);
          }
        }
      }
    } else {
      if (batch.preload) {
        move_tile_bytes<true>(global, tile, bytes, skew);  // keep the bytes no column writes
        __syncthreads();
      } else if (batch.fill_gaps) {
        for (std::size_t w = threadIdx.x; w < bytes / 4; w += blockDim.x) tile[tile_word(w, skew)] = 0;
        __syncthreads();
      }
      for (std::size_t e = threadIdx.x; e < count; e += blockDim.x) {
        std::size_t const offset = shared_offset(batch, start + e);
        for (int c0 = 0; c0 < batch.count; c0 += columns_in_flight) {
          std::uint32_t v[columns_in_flight];
#pragma unroll
          for (int k = 0; k < columns_in_flight; ++k) {
            if (c0 + k < batch.count)
              v[k] = *reinterpret_cast<std::uint32_t const*>(column_element(batch, c0 + k, start + e, offset));
          }
#pragma unroll
          for (int k = 0; k < columns_in_flight; ++k) {
            if (c0 + k < batch.count) tile[tile_word((e * rec.stride + batch.offset[c0 + k]) / 4, skew)] = v[k];
          }
        }
      }
      __syncthreads();
      move_tile_bytes<false>(global, tile, bytes, skew);
    }
    __syncthreads();
  }
}

// The record window of one side of the columns, if that side is an aos layout that fits a tile.
bool aos_window(std::vector<column_copy> const& parts, bool source, record_window& out) {
  if (parts.empty() || parts.size() > static_cast<std::size_t>(columns_per_launch)) return false;
  auto side = [&](column_copy const& c) -> column_ref const& { return source ? c.src : c.dst; };
  std::size_t const stride = side(parts[0]).stride;
  if (stride == 0 || stride % 4 != 0 || stride > max_tiled_record_bytes) return false;
  std::byte* low = side(parts[0]).base;
  std::byte* high = low;
  for (auto const& part : parts) {
    column_ref const& c = side(part);
    if (part.width != 4 || c.block_shift != 63 || c.stride != stride) return false;
    low = std::min(low, c.base);
    high = std::max(high, c.base + 4);
  }
  if (static_cast<std::size_t>(high - low) > stride || reinterpret_cast<std::uintptr_t>(low) % 4 != 0) return false;
  for (auto const& part : parts) {
    if ((side(part).base - low) % 4 != 0) return false;
  }
  out = {low, stride, static_cast<std::size_t>(high - low)};
  return true;
}

// The most lanes of a warp that the column side's accesses (word e * stride_words + c of lane e)
// put in one bank, with and without the tile's skew; skewed where that is fewer.
inline unsigned lanes_per_bank(std::size_t stride_words, bool skew) {
  unsigned worst = 1;
  for (std::size_t c = 0; c < stride_words; ++c) {
    unsigned in_bank[32] = {};
    for (std::size_t e = 0; e < 32; ++e) {
      std::size_t const w = e * stride_words + c;
      worst = std::max(worst, ++in_bank[(skew ? w + w / 32 : w) % 32]);
    }
  }
  return worst;
}
inline bool skew_spreads_banks(std::size_t stride_words) {
  return lanes_per_bank(stride_words, true) < lanes_per_bank(stride_words, false);
}

// groups (FromAos only): the last columns of parts are the destination's packed records, written
// whole (launch_tiled_into_split).
template <bool FromAos> void launch_tiled(cudaStream_t stream, std::vector<column_copy> const& parts,
                                          record_window const& records, std::size_t n, record_gaps gaps,
                                          std::vector<record_group> const& groups = {}) {
  tiled_batch batch{};
  batch.count = static_cast<int>(parts.size());
  for (std::size_t c = 0; c < parts.size(); ++c) {
    column_ref const& aos_side = FromAos ? parts[c].src : parts[c].dst;
    batch.other[c] = FromAos ? parts[c].dst : parts[c].src;
    batch.offset[c] = static_cast<unsigned>(aos_side.base - records.base);
  }
  int grouped = 0;
  for (auto const& g : groups) {
    batch.groups[batch.group_count++] = g;
    for (int c : g.column) grouped += c >= 0 ? 1 : 0;
  }
  batch.plain_count = batch.count - grouped;
  batch.same_shape = std::all_of(batch.other, batch.other + batch.plain_count, [&](column_ref const& c) {
    return c.stride == batch.other[0].stride && c.block_shift == batch.other[0].block_shift &&
           c.block_stride == batch.other[0].block_stride && c.block == batch.other[0].block;
  });
  batch.records = records;
  batch.n = n;
  // Whole records are written back: unless the columns cover them exactly, the bytes they leave
  // are read from the destination first (record_gaps::keep: other members) or zeroed in the
  // tile (record_gaps::zero: every leaf is copied, so they are padding; 1- and 2-byte leaves in
  // the records follow in later launches on the same stream).
  std::size_t covered = 0;
  for (auto const& part : parts) covered += part.width;
  bool const gaps_left = !FromAos && !(covered == records.stride && records.span == records.stride);
  batch.preload = gaps_left && gaps == record_gaps::keep;
  batch.fill_gaps = gaps_left && gaps == record_gaps::zero;
  batch.skew = skew_spreads_banks(records.stride / 4);
  // As many records per tile as fit 32 KB, in whole blocks of threads: more bytes in flight per
  // barrier than one record per thread.
  batch.tile_records =
      std::max<std::size_t>(1, record_tile_bytes.load() / records.stride / block_threads) * block_threads;
  std::size_t const tile_words = batch.tile_records * records.stride / 4;
  std::size_t const shared = 4 * (batch.skew ? tile_words + tile_words / 32 + 1 : tile_words);
  std::size_t const tiles = (n + batch.tile_records - 1) / batch.tile_records;
  unsigned const grid = static_cast<unsigned>(std::min<std::size_t>(tiles, 0x7fffffff));
  tiled_copy_kernel<FromAos><<<grid, block_threads, shared, stream>>>(batch);
  COALESCE_CUDA_TRY(cudaGetLastError());
}

// Small aos records to or from columns: one record per thread, held in registers, moved between
// global memory and registers in 16-, 8- or 4-byte units (whole records, so every sector a warp
// touches is whole), the column side coalesced, no shared memory and no barrier. Into records this
// replaced the tile for records of up to 32 bytes; measured on the H200 (2026-12-03, 33.5M
// 24-byte records, x copy ceiling, per thread / tile): soa -> aos 0.97 / 0.88, aosoa<32> -> aos
// 0.98 / 0.77, soa -> split<pos> 0.87 / 0.76 (docs/dev/performance-history.md, "Records one per thread").
// set_per_thread_record_bytes picks the largest record that takes this path.
constexpr int max_record_words = 8;
std::atomic<std::size_t> per_thread_record_bytes{32};

struct record_batch {
  column_ref other[max_record_words];            // the column side, by the record word it fills
  signed char column_of_word[max_record_words];  // -1: no column (into records: a gap, kept or zeroed)
  std::byte* base;                               // word 0 of record 0 (the window's base)
  std::size_t n;
  unsigned last_words;  // words of the last record inside the window (the span)
  bool preload;         // into records: gaps keep the destination's bytes
};

template <int Words, int Unit> __device__ void store_record(std::byte* dst, std::uint32_t const (&w)[Words]) {
  if constexpr (Unit == 16) {
#pragma unroll
    for (int k = 0; k < Words; k += 4)
      reinterpret_cast<uint4*>(dst)[k / 4] = make_uint4(w[k], w[k + 1], w[k + 2], w[k + 3]);
  } else if constexpr (Unit == 8) {
#pragma unroll
    for (int k = 0; k < Words; k += 2) reinterpret_cast<uint2*>(dst)[k / 2] = make_uint2(w[k], w[k + 1]);
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) reinterpret_cast<std::uint32_t*>(dst)[k] = w[k];
  }
}

template <int Words, int Unit> __device__ void load_record(std::byte const* src, std::uint32_t (&w)[Words]) {
  if constexpr (Unit == 16) {
#pragma unroll
    for (int k = 0; k < Words; k += 4) {
      uint4 const v = reinterpret_cast<uint4 const*>(src)[k / 4];
      w[k] = v.x, w[k + 1] = v.y, w[k + 2] = v.z, w[k + 3] = v.w;
    }
  } else if constexpr (Unit == 8) {
#pragma unroll
    for (int k = 0; k < Words; k += 2) {
      uint2 const v = reinterpret_cast<uint2 const*>(src)[k / 2];
      w[k] = v.x, w[k + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) w[k] = reinterpret_cast<std::uint32_t const*>(src)[k];
  }
}

// FromAos: records -> columns. Otherwise: columns -> records. The last record is moved word by
// word inside the window only: its bytes past the window may belong to another allocation.
template <int Words, int Unit, bool FromAos>
__global__ void record_per_thread_kernel(__grid_constant__ record_batch const batch) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch.n) return;
  std::byte* const record = batch.base + i * (Words * 4);
  auto* const record_words = reinterpret_cast<std::uint32_t*>(record);
  bool const last = i + 1 == batch.n;
  int const inside = last ? static_cast<int>(batch.last_words) : Words;
  std::uint32_t w[Words];
  if constexpr (FromAos) {
    if (!last) {
      load_record<Words, Unit>(record, w);
    } else {
#pragma unroll
      for (int k = 0; k < Words; ++k) w[k] = k < inside ? record_words[k] : 0u;
    }
#pragma unroll
    for (int k = 0; k < Words; ++k) {
      int const c = batch.column_of_word[k];
      if (c >= 0) *reinterpret_cast<std::uint32_t*>(batch.other[c].address(i)) = w[k];
    }
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) {
      int const c = batch.column_of_word[k];
      if (c >= 0) {
        w[k] = *reinterpret_cast<std::uint32_t const*>(batch.other[c].address(i));
      } else {
        w[k] = batch.preload && k < inside ? record_words[k] : 0u;
      }
    }
    if (!last) return store_record<Words, Unit>(record, w);
#pragma unroll
    for (int k = 0; k < Words; ++k) {
      if (k < inside) record_words[k] = w[k];
    }
  }
}

template <int Words, bool FromAos>
void launch_record_per_thread(cudaStream_t stream, record_batch const& batch, int unit) {
  unsigned const grid = grid_for(batch.n);
  if constexpr (Words % 4 == 0) {
    if (unit == 16) return record_per_thread_kernel<Words, 16, FromAos><<<grid, block_threads, 0, stream>>>(batch);
  }
  if constexpr (Words % 2 == 0) {
    if (unit == 8) return record_per_thread_kernel<Words, 8, FromAos><<<grid, block_threads, 0, stream>>>(batch);
  }
  record_per_thread_kernel<Words, 4, FromAos><<<grid, block_threads, 0, stream>>>(batch);
}

// True when the records go one per thread (and were launched): records of 8 to 32 bytes (up to
// per_thread_record_bytes), one column per word at most. 64-byte records were measured slower this
// way than through the tile (aos -> soa 0.41 against 0.86 of the copy ceiling, soa -> aos 0.73
// against 0.89; H200, 2026-12-03), so the path stops at 32.
template <bool FromAos> bool launch_records_per_thread(cudaStream_t stream, std::vector<column_copy> const& parts,
                                                       record_window const& records, std::size_t n, record_gaps gaps) {
  std::size_t const words = records.stride / 4;
  if (words < 2 || words > max_record_words || records.stride > per_thread_record_bytes.load() || parts.size() > words)
    return false;
  record_batch batch{};
  std::fill(std::begin(batch.column_of_word), std::end(batch.column_of_word), static_cast<signed char>(-1));
  for (std::size_t c = 0; c < parts.size(); ++c) {
    column_ref const& record_side = FromAos ? parts[c].src : parts[c].dst;
    std::size_t const word = static_cast<std::size_t>(record_side.base - records.base) / 4;
    if (word >= words || batch.column_of_word[word] >= 0) return false;
    batch.column_of_word[word] = static_cast<signed char>(c);
    batch.other[c] = FromAos ? parts[c].dst : parts[c].src;
  }
  batch.base = records.base;
  batch.n = n;
  batch.last_words = static_cast<unsigned>(records.span / 4);
  batch.preload = gaps == record_gaps::keep;  // fully covered records have no gap word to read
  auto const address = reinterpret_cast<std::uintptr_t>(records.base);
  int const unit = records.stride % 16 == 0 && address % 16 == 0 ? 16
                   : records.stride % 8 == 0 && address % 8 == 0 ? 8
                                                                 : 4;
  // words is 2..max_record_words here: one instantiation per record size.
  [&]<int... W>(std::integer_sequence<int, W...>) {
    (void)((words == W + 2 && (launch_record_per_thread<W + 2, FromAos>(stream, batch, unit), true)) || ...);
  }
  (std::make_integer_sequence<int, max_record_words - 1>{});
  COALESCE_CUDA_TRY(cudaGetLastError());
  return true;
}

// Columns into aos records: one record per thread where that path takes them, else the tile.
void launch_into_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                         std::size_t n, record_gaps gaps) {
  if (!launch_records_per_thread<false>(stream, parts, records, n, gaps))
    launch_tiled<false>(stream, parts, records, n, gaps);
}

// Elements [first, first + items * Group) of every column, Group elements per Word.
template <class Word, std::size_t Group = 1, bool Unblocked = false>
void launch_copies(cudaStream_t stream, std::vector<column_copy> const& parts, std::size_t first, std::size_t items) {
  if (items == 0) return;
  unsigned const grid = grid_for(items);
  for (std::size_t begin = 0; begin < parts.size(); begin += columns_per_launch) {
    column_batch<column_copy> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - begin));
    std::copy_n(parts.data() + begin, batch.count, batch.columns);
    batch.first = first;
    batch.n = items;
    copy_columns_kernel<Word, Group, Unblocked><<<grid, block_threads, 0, stream>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
}

// True when 4 consecutive elements (from a multiple of 4) of a 4-byte column are one aligned
// 16-byte word: contiguous columns, or blocks of at least 4 elements.
bool runs_of_four(column_ref const& c) {
  bool const contiguous =
      c.stride == 4 && (c.block_shift == 63 || (c.block_shift >= 2 && c.block_shift < 63 && c.block_stride % 16 == 0));
  return contiguous && reinterpret_cast<std::uintptr_t>(c.base) % 16 == 0;
}
}  // namespace

namespace {
void copy_parts(cudaStream_t stream, std::vector<column_copy> const& parts, std::size_t n, record_gaps gaps) {
  // An aos side of records of up to 32 bytes: one record per thread, moved whole through registers.
  // Larger records into aos go through a shared-memory tile (column-wise 4-byte stores at the
  // record stride measured at a quarter of the copy ceiling), and so do records of 64 bytes and more
  // out of aos (each of a warp's loads spans 2 KiB and more; 64-byte aos -> soa 0.83 -> 0.87 of the
  // copy ceiling with the tile, H200, 2026-12-02) or into aosoa; 36-60-byte records out of aos into
  // unblocked columns go element by element.
  bool const unblocked = std::all_of(parts.begin(), parts.end(), [](column_copy const& c) {
    return c.src.block_shift == 63 && c.dst.block_shift == 63;
  });
  record_window records;
  if (aos_window(parts, false, records)) return launch_into_records(stream, parts, records, n, gaps);
  if (aos_window(parts, true, records)) {
    if (launch_records_per_thread<true>(stream, parts, records, n, gaps)) return;
    if (!unblocked || records.stride >= 64) return launch_tiled<true>(stream, parts, records, n, gaps);
  }
  std::vector<column_copy> by_width[3];
  for (auto const& part : parts) by_width[part.width == 4 ? 0 : part.width == 2 ? 1 : 2].push_back(part);
  auto const& words = by_width[0];
  if (std::all_of(words.begin(), words.end(),
                  [](column_copy const& c) { return runs_of_four(c.src) && runs_of_four(c.dst); })) {
    launch_copies<uint4, 4>(stream, words, 0, n / 4);  // 16-byte accesses, 4 elements each
    launch_copies<std::uint32_t>(stream, words, n / 4 * 4, n % 4);
  } else if (unblocked) {
    launch_copies<std::uint32_t, 1, true>(stream, words, 0, n);
  } else {
    launch_copies<std::uint32_t>(stream, words, 0, n);
  }
  launch_copies<std::uint16_t>(stream, by_width[1], 0, n);
  launch_copies<std::uint8_t>(stream, by_width[2], 0, n);
}

// The columns whose destination lies in one record blob (an aos-like group of a split layout):
// the 4-byte parts with the first such part's stride, inside one record of it.
std::vector<column_copy> take_destination_records(std::vector<column_copy>& parts) {
  auto const record_like = [](column_copy const& c) {
    return c.width == 4 && c.dst.block_shift == 63 && c.dst.stride > 4 && c.dst.stride % 4 == 0;
  };
  auto const first = std::find_if(parts.begin(), parts.end(), record_like);
  if (first == parts.end()) return {};
  column_ref const anchor = first->dst;
  auto const same_record = [&](column_copy const& c) {
    return record_like(c) && c.dst.stride == anchor.stride &&
           (c.dst.base > anchor.base ? c.dst.base - anchor.base : anchor.base - c.dst.base) <
               static_cast<std::ptrdiff_t>(anchor.stride);
  };
  std::vector<column_copy> group;
  std::copy_if(parts.begin(), parts.end(), std::back_inserter(group), same_record);
  parts.erase(std::remove_if(parts.begin(), parts.end(), same_record), parts.end());
  return group;
}

// From aos records into a split layout (columns and packed records of 8 or 16 bytes) in one pass
// through the tile: each record read once, its packed members stored as one vector per element.
// Before, the packed records took their own launch reading the aos records at their stride, and
// the columns a second one reading them again (64-byte records aos -> split<pos>: 0.44 of the
// copy ceiling, H200, 2026-12-03). False (nothing launched) where the destination has no packed
// record, or one this path does not take (wider than 16 bytes, misaligned, or with bytes to keep).
bool launch_tiled_into_split(cudaStream_t stream, std::vector<column_copy> parts, record_window const& source,
                             std::size_t n, record_gaps gaps) {
  std::vector<std::vector<column_copy>> packed;
  for (auto g = take_destination_records(parts); !g.empty(); g = take_destination_records(parts)) {
    packed.push_back(std::move(g));
  }
  if (packed.empty() || packed.size() > static_cast<std::size_t>(max_record_groups)) return false;
  std::vector<column_copy> ordered = parts;  // the plain columns first, then each group's
  std::vector<record_group> groups;
  for (auto const& g : packed) {
    std::size_t const stride = g[0].dst.stride;
    if (stride != 8 && stride != 16) return false;
    std::byte* low = g[0].dst.base;
    for (auto const& part : g) low = std::min(low, part.dst.base);
    // The slot's first word must be one of the columns: rounding a later word down to the stride
    // finds the slot only where the blob is aligned to it (user memory need not be).
    auto const slot = reinterpret_cast<std::uintptr_t>(low);
    if (slot % stride != 0) return false;
    record_group group;
    group.base = reinterpret_cast<std::byte*>(slot);
    group.words = static_cast<unsigned>(stride / 4);
    for (auto const& part : g) {
      auto const at = reinterpret_cast<std::uintptr_t>(part.dst.base) - slot;
      if (at % 4 != 0 || at / 4 >= group.words || group.column[at / 4] >= 0) return false;
      group.column[at / 4] = static_cast<int>(ordered.size());
      ordered.push_back(part);
    }
    if (gaps == record_gaps::keep && g.size() < group.words) return false;  // its other words are not padding
    groups.push_back(group);
  }
  launch_tiled<true>(stream, ordered, source, n, gaps, groups);
  return true;
}
}  // namespace

namespace {
// A long run of 4-byte columns that is one 2-D block on both sides: sub-column j of element i at
// src.address(i) + j * src_j and dst.address(i) + j * dst_j (a std::array member: its sub-columns
// are evenly spaced in every layout). Copied column by column, a 16 KiB record's 4096 sub-columns
// were 65 launches of 64 narrow columns each (a few thousand threads per launch), and on an aos
// side each warp-wide load touched 32 records (32 sectors for 128 bytes): 0.02-0.04 of the copy
// ceiling. A run moves in one launch: through a 32 x 32 shared-memory tile where one side is
// unit-stride along j (aos records) and the other along i (soa, aosoa), so both sides are read
// and written along their unit stride; as a 2-D grid of elements where both sides are unit-stride
// along i (soa <-> aosoa, soa <-> soa of another capacity).
struct column_run {
  column_ref src, dst;
  std::ptrdiff_t src_j, dst_j;
  std::size_t n, m;  // elements, sub-columns
};
constexpr unsigned transpose_tile = 32, transpose_rows = 8;
constexpr std::size_t max_grid_y = 65535;

__device__ __forceinline__ std::uint32_t* run_word(column_ref const& c, std::ptrdiff_t step, std::size_t i,
                                                   std::size_t j) {
  return reinterpret_cast<std::uint32_t*>(c.address(i) + static_cast<std::ptrdiff_t>(j) * step);
}

// Tile (i0.., j0..): loaded along whichever index the source is unit-stride in, stored along the
// destination's. j0 comes from the launch (grids of more than 65535 tiles along j are split).
__global__ void transpose_run_kernel(column_run const r, std::size_t j_first) {
  __shared__ std::uint32_t tile[transpose_tile][transpose_tile + 1];  // +1: no bank conflicts
  std::size_t const i0 = static_cast<std::size_t>(blockIdx.x) * transpose_tile;
  std::size_t const j0 = j_first + static_cast<std::size_t>(blockIdx.y) * transpose_tile;
  unsigned const tx = threadIdx.x, ty = threadIdx.y;
  bool const src_along_j = r.src_j == 4;  // else the source is unit-stride along i
  for (unsigned row = ty; row < transpose_tile; row += transpose_rows) {
    std::size_t const i = i0 + (src_along_j ? row : tx), j = j0 + (src_along_j ? tx : row);
    if (i < r.n && j < r.m) tile[i - i0][j - j0] = *run_word(r.src, r.src_j, i, j);
  }
  __syncthreads();
  bool const dst_along_j = r.dst_j == 4;
  for (unsigned row = ty; row < transpose_tile; row += transpose_rows) {
    std::size_t const i = i0 + (dst_along_j ? row : tx), j = j0 + (dst_along_j ? tx : row);
    if (i < r.n && j < r.m) *run_word(r.dst, r.dst_j, i, j) = tile[i - i0][j - j0];
  }
}

// Elements [first, first + items * Group) of sub-columns [j_first, j_first + gridDim.y), Group
// consecutive elements per Word: consecutive threads take consecutive elements of one sub-column.
template <class Word, std::size_t Group>
__global__ void copy_run_kernel(column_run const r, std::size_t first, std::size_t items, std::size_t j_first) {
  std::size_t const item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= items) return;
  std::size_t const i = first + item * Group, j = j_first + blockIdx.y;
  *reinterpret_cast<Word*>(run_word(r.dst, r.dst_j, i, j)) =
      *reinterpret_cast<Word const*>(run_word(r.src, r.src_j, i, j));
}

bool same_shape(column_ref const& a, column_ref const& b) {
  return a.stride == b.stride && a.block_shift == b.block_shift && a.block_stride == b.block_stride &&
         a.block == b.block;
}
// Unit-stride along the elements: soa, or the short columns of aosoa blocks.
bool along_elements(column_ref const& c) { return c.stride == 4; }
// Unit-stride along the sub-columns: aos records (or any unblocked side whose sub-columns are
// consecutive words).
bool along_columns(column_ref const& c, std::ptrdiff_t step) { return step == 4 && c.block_shift == 63; }
bool transposes(column_run const& r) {
  return (along_columns(r.src, r.src_j) && along_elements(r.dst)) ||
         (along_columns(r.dst, r.dst_j) && along_elements(r.src));
}
bool streams(column_run const& r) { return along_elements(r.src) && along_elements(r.dst); }
// True when one of the run kernels moves the run whole: 32 sub-columns or more, one side or both
// unit-stride along the elements, every address a whole 4-byte word (an element type of 4 bytes
// aligned to less, in a record of alignment 1, is left to the columns, which chunk it as it allows).
bool run_kernel_takes(column_run const& r) {
  auto const steps = static_cast<std::size_t>(r.src_j < 0 ? -r.src_j : r.src_j) |
                     static_cast<std::size_t>(r.dst_j < 0 ? -r.dst_j : r.dst_j);
  bool const aligned = ((address_bits(r.src) | address_bits(r.dst) | steps) & 3) == 0;
  return aligned && r.m >= transpose_tile && (transposes(r) || streams(r));
}

// Takes the runs of at least 32 sub-columns that one of the two kernels moves out of `parts`.
std::vector<column_run> take_column_runs(std::vector<column_copy>& parts, std::size_t n) {
  std::vector<column_run> runs;
  std::vector<column_copy> rest;
  std::size_t c = 0;
  while (c < parts.size()) {
    std::size_t e = c + 1;
    if (parts[c].width == 4 && e < parts.size() && parts[e].width == 4) {
      std::ptrdiff_t const src_j = parts[e].src.base - parts[c].src.base, dst_j = parts[e].dst.base - parts[c].dst.base;
      while (e < parts.size() && parts[e].width == 4 && same_shape(parts[e].src, parts[c].src) &&
             same_shape(parts[e].dst, parts[c].dst) && parts[e].src.base - parts[e - 1].src.base == src_j &&
             parts[e].dst.base - parts[e - 1].dst.base == dst_j) {
        ++e;
      }
      column_run const run{parts[c].src, parts[c].dst, src_j, dst_j, n, e - c};
      if (run_kernel_takes(run)) {
        runs.push_back(run);
        c = e;
        continue;
      }
      if (e - c >= transpose_tile) {  // a long run neither kernel suits (aos -> aos): as columns
        rest.insert(rest.end(), parts.begin() + static_cast<std::ptrdiff_t>(c),
                    parts.begin() + static_cast<std::ptrdiff_t>(e));
        c = e;
        continue;
      }
      // A short run may be a lone column followed by a block (id, then counts[0..]): retry from c + 1.
    }
    rest.push_back(parts[c]);
    c = c + 1;
  }
  parts = std::move(rest);
  return runs;
}

// True when elements 4k..4k+3 of the column are one aligned 16-byte word (for every k): soa
// columns and aosoa blocks of at least 4 elements, 16-byte aligned; runs_of_four for one
// sub-column, and the same for every other one (the steps keep the alignment).
bool run_in_quads(column_ref const& c, std::ptrdiff_t step) { return runs_of_four(c) && step % 16 == 0; }

void launch_runs(cudaStream_t stream, std::vector<column_run> const& runs) {
  for (auto const& r : runs) {
    if (transposes(r)) {
      auto const tiles_j = (r.m + transpose_tile - 1) / transpose_tile;
      for (std::size_t t = 0; t < tiles_j; t += max_grid_y) {
        dim3 const grid(
            static_cast<unsigned>(std::min<std::size_t>((r.n + transpose_tile - 1) / transpose_tile, 0x7fffffff)),
            static_cast<unsigned>(std::min(max_grid_y, tiles_j - t)));
        transpose_run_kernel<<<grid, dim3(transpose_tile, transpose_rows), 0, stream>>>(r, t * transpose_tile);
        COALESCE_CUDA_TRY(cudaGetLastError());
      }
      continue;
    }
    bool const quads = run_in_quads(r.src, r.src_j) && run_in_quads(r.dst, r.dst_j);
    std::size_t const vector_items = quads ? r.n / 4 : 0, vector_end = vector_items * 4;
    for (std::size_t j = 0; j < r.m; j += max_grid_y) {
      auto const columns = static_cast<unsigned>(std::min(max_grid_y, r.m - j));
      if (vector_items > 0) {
        copy_run_kernel<uint4, 4>
            <<<dim3(grid_for(vector_items), columns), block_threads, 0, stream>>>(r, 0, vector_items, j);
        COALESCE_CUDA_TRY(cudaGetLastError());
      }
      if (r.n > vector_end) {
        copy_run_kernel<std::uint32_t, 1><<<dim3(grid_for(r.n - vector_end), columns), block_threads, 0, stream>>>(
            r, vector_end, r.n - vector_end, j);
        COALESCE_CUDA_TRY(cudaGetLastError());
      }
    }
  }
}
}  // namespace

void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n, void* native_stream,
                  record_gaps gaps) {
  if (kind == memory_kind::host) return host_copy_columns(columns, count, n, false);
  if (n == 0 || count == 0) return;
  cudaStream_t const stream = static_cast<cudaStream_t>(native_stream);
  // 4-byte words at most: every float, int or double column becomes 4-byte sub-columns, so one
  // launch handles all of them; only 1- and 2-byte leaves need launches of their own.
  auto parts = chunked(columns, count, 4);
  launch_runs(stream, take_column_runs(parts, n));
  if (parts.empty()) return;
  record_window records;
  if (!aos_window(parts, false, records)) {
    record_window source;
    if (aos_window(parts, true, source) && launch_tiled_into_split(stream, parts, source, n, gaps)) return;
    // A split destination: each record blob (packed positions) through its own tile, so its
    // stores stay whole records; the columns as before.
    for (auto group = take_destination_records(parts); !group.empty(); group = take_destination_records(parts)) {
      if (aos_window(group, false, records)) {
        launch_into_records(stream, group, records, n, gaps);
      } else {
        copy_parts(stream, group, n, gaps);
      }
    }
  }
  if (!parts.empty()) copy_parts(stream, parts, n, gaps);
}

void copy_columns(memory_kind kind, column_copy const* columns, std::size_t count, column_run_copy const* runs,
                  std::size_t run_count, std::size_t n, void* native_stream, record_gaps gaps) {
  if (n == 0) return;
  if (kind == memory_kind::host) {
    auto const all = expand_runs(columns, count, runs, run_count);
    return copy_columns(kind, all.data(), all.size(), n, native_stream, gaps);
  }
  // Runs one of the run kernels moves whole: launched as they are. Others (aos -> aos: neither
  // side unit-stride along the elements) join the columns. The runs go first, as in copy_columns:
  // a record tile of the columns never spans a run (a run is at least 32 words, a tiled record at
  // most 128 bytes, so a record with a run holds nothing else).
  std::vector<column_run> whole;
  std::vector<column_run_copy> rest;
  for (std::size_t r = 0; r < run_count; ++r) {
    column_run const run{runs[r].src, runs[r].dst, runs[r].src_step, runs[r].dst_step, n, runs[r].columns};
    if (run_kernel_takes(run)) {
      whole.push_back(run);
    } else {
      rest.push_back(runs[r]);
    }
  }
  launch_runs(static_cast<cudaStream_t>(native_stream), whole);
  if (rest.empty()) return copy_columns(kind, columns, count, n, native_stream, gaps);
  auto const all = expand_runs(columns, count, rest.data(), rest.size());
  copy_columns(kind, all.data(), all.size(), n, native_stream, gaps);
}

std::size_t set_per_thread_record_bytes(std::size_t bytes) { return per_thread_record_bytes.exchange(bytes); }
std::size_t set_record_tile_bytes(std::size_t bytes) {
  return record_tile_bytes.exchange(std::clamp<std::size_t>(bytes, 1, 46 * 1024));
}

void fill_columns(memory_kind kind, column_fill const* columns, std::size_t count, std::size_t first, std::size_t n,
                  void* stream) {
  if (kind == memory_kind::host) return host_fill_columns(columns, count, first, n, false);
  if (n == 0 || count == 0) return;
  auto const parts = chunked(columns, count);
  unsigned const grid = grid_for(n);
  for (std::size_t begin = 0; begin < parts.size(); begin += columns_per_launch) {
    column_batch<fill_column_on_device> batch{};
    batch.count = static_cast<int>(std::min<std::size_t>(columns_per_launch, parts.size() - begin));
    for (int c = 0; c < batch.count; ++c) {
      batch.columns[c].column = parts[begin + c];
      std::memcpy(&batch.columns[c].value, parts[begin + c].value, parts[begin + c].width);
    }
    batch.first = first;
    batch.n = n;
    fill_columns_kernel<<<grid, block_threads, 0, static_cast<cudaStream_t>(stream)>>>(batch);
    COALESCE_CUDA_TRY(cudaGetLastError());
  }
  wait_if_default_stream(stream);
}

}  // namespace coalesce::detail
