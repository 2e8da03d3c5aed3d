// GPU column copies to or from aos records through a shared-memory tile of whole records, and from
// aos records into a split layout (columns and packed records) in the same pass.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "column_chunks.hpp"
#include "column_moves.cuh"  // columns_in_flight
#include "copy_launch.cuh"
#include "../core/cuda_check.hpp"

namespace coalesce::detail {

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

}  // namespace

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

void launch_tiled_from_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                               std::size_t n, record_gaps gaps) {
  launch_tiled<true>(stream, parts, records, n, gaps);
}

void launch_tiled_into_records(cudaStream_t stream, std::vector<column_copy> const& parts, record_window const& records,
                               std::size_t n, record_gaps gaps) {
  launch_tiled<false>(stream, parts, records, n, gaps);
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

std::size_t set_record_tile_bytes(std::size_t bytes) {
  return record_tile_bytes.exchange(std::clamp<std::size_t>(bytes, 1, 46 * 1024));
}

}  // namespace coalesce::detail
