// detail/indexed_moves.hpp: host loops, and the dispatch to the GPU versions
// (src/indexed_moves_cuda.cu) for GPU memory. Without CUDA, device memory is host memory and
// takes the host loops.
#include <coalesce/reorder/indexed_moves.hpp>
#include <coalesce/core/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../memory/column_chunks.hpp"
#if COALESCE_WITH_CUDA
#include "indexed_moves_cuda.hpp"
#endif

namespace coalesce::detail {

void* host_allocate(std::size_t bytes);
void host_deallocate(void* p) noexcept;

namespace {

#if COALESCE_WITH_CUDA
bool on_gpu(memory_kind kind) { return kind == memory_kind::device && device_is_gpu; }
#endif

template <class E> void add_one(std::byte* dst, std::byte const* src) {
  E a, b;
  std::memcpy(&a, dst, sizeof(E));
  std::memcpy(&b, src, sizeof(E));
  a += b;
  std::memcpy(dst, &a, sizeof(E));
}
// The address of element i of a column, with the column's shape decided once, outside the loop:
// f receives a function object that is plain arithmetic (no branch, no descriptor reloaded after
// each store: the descriptor's fields are copied into the function object).
template <class F> void with_address(column_ref const& c, F&& f) {
  if (c.block_shift == 63) {
    f([base = c.base, stride = c.stride](std::size_t i) { return base + i * stride; });
  } else if (c.block_shift < 63) {  // aosoa<W>, W a power of two
    f([base = c.base, stride = c.stride, block_stride = c.block_stride, shift = c.block_shift,
       mask = (std::size_t{1} << c.block_shift) - 1](std::size_t i) {
      return base + (i >> shift) * block_stride + (i & mask) * stride;
    });
  } else {
    f([base = c.base, stride = c.stride, block_stride = c.block_stride, block = c.block](std::size_t i) {
      return base + (i / block) * block_stride + (i % block) * stride;
    });
  }
}

// Element k of a move's source or destination: an index list, or a range from `first`.
template <class F> void with_index(index_map m, F&& f) {
  if (m.index != nullptr) {
    f([index = m.index](std::size_t k) -> std::size_t { return index[k]; });
  } else {
    f([first = m.first](std::size_t k) { return first + k; });
  }
}

// One column's moves at a width known at compile time, each loop specialised to the columns'
// shapes and the index maps (a pack, an unpack, a compaction, blocked columns: all one loop each).
template <std::size_t W> void move_column(column_copy const& col, std::size_t n, index_map src, index_map dst) {
  with_index(src, [&](auto source_element) {
    with_index(dst, [&](auto destination_element) {
      with_address(col.src, [&](auto source_address) {
        with_address(col.dst, [&](auto destination_address) {
          // Local copies: a byte store may alias anything the lambdas reach by reference, so the
          // loop would reload them after every element.
          auto const to = destination_address;
          auto const from = source_address;
          auto const to_element = destination_element;
          auto const from_element = source_element;
          std::size_t const count = n;
          for (std::size_t k = 0; k < count; ++k) std::memcpy(to(to_element(k)), from(from_element(k)), W);
        });
      });
    });
  });
}

// One column's sums (a reverse: ghosts' values added into their owners), specialised as the moves.
template <class E> void add_column(column_sum const& col, std::size_t n, index_map src, index_map dst) {
  with_index(src, [&](auto source_element) {
    with_index(dst, [&](auto destination_element) {
      with_address(col.src, [&](auto source_address) {
        with_address(col.dst, [&](auto destination_address) {
          auto const to = destination_address;  // local copies, as in move_column
          auto const from = source_address;
          auto const to_element = destination_element;
          auto const from_element = source_element;
          std::size_t const count = n;
          for (std::size_t k = 0; k < count; ++k) add_one<E>(to(to_element(k)), from(from_element(k)));
        });
      });
    });
  });
}

// Element k of a move from its first element on: the same map, started `start` elements later.
index_map advanced(index_map m, std::size_t start) {
  return m.index != nullptr ? index_map{m.index + start, 0} : index_map{nullptr, m.first + start};
}

// The moves of every column, a chunk of elements at a time: a chunk's bytes of every column stay
// in cache from the first column to the last. For blocked columns (aosoa), whose elements
// interleave the columns, that is the difference between reading each line once and reading it
// once per column (migrate on aosoa<16> was 3-12x the hand-written SoA code column by column).
// Per column the elements still move in ascending order, so an in-place compaction (element k
// from element order[k] >= k) stays correct.
template <class F> void for_chunks(std::size_t n, index_map src, index_map dst, F&& f) {
  constexpr std::size_t chunk = 2048;
  for (std::size_t start = 0; start < n; start += chunk) {
    f(n - start < chunk ? n - start : chunk, advanced(src, start), advanced(dst, start));
  }
}

void move_one_column(column_copy const& col, std::size_t n, index_map src, index_map dst) {
  switch (col.width) {  // a constant width: the copy is one or two moves, not a memcpy call
    case 4:
      move_column<4>(col, n, src, dst);
      break;
    case 8:
      move_column<8>(col, n, src, dst);
      break;
    case 12:
      move_column<12>(col, n, src, dst);
      break;
    case 16:
      move_column<16>(col, n, src, dst);
      break;
    case 32:
      move_column<32>(col, n, src, dst);
      break;
    default:
      for (std::size_t k = 0; k < n; ++k)
        std::memcpy(col.dst.address(dst.at(k)), col.src.address(src.at(k)), col.width);
  }
}

void add_one_column(column_sum const& col, std::size_t n, index_map src, index_map dst) {
  switch (col.type) {  // the type chosen once per column, not per element
    case scalar_type::f32:
      add_column<float>(col, n, src, dst);
      break;
    case scalar_type::f64:
      add_column<double>(col, n, src, dst);
      break;
    case scalar_type::i32:
      add_column<std::int32_t>(col, n, src, dst);
      break;
    case scalar_type::i64:
      add_column<std::int64_t>(col, n, src, dst);
      break;
    case scalar_type::u32:
      add_column<std::uint32_t>(col, n, src, dst);
      break;
    case scalar_type::u64:
      add_column<std::uint64_t>(col, n, src, dst);
      break;
  }
}

// The byte offset of element i from a column's base, for every column of one shape (stride and
// blocking alike: the leaves of a soa record's columns, or of one aosoa): worked out once per
// element and added to each column's own base.
template <class F> void with_offset(column_ref const& shape, F&& f) {
  if (shape.block_shift == 63) {
    f([stride = shape.stride](std::size_t i) { return i * stride; });
  } else if (shape.block_shift < 63) {
    f([stride = shape.stride, block_stride = shape.block_stride, shift = shape.block_shift,
       mask = (std::size_t{1} << shape.block_shift) - 1](std::size_t i) {
      return (i >> shift) * block_stride + (i & mask) * stride;
    });
  } else {
    f([stride = shape.stride, block_stride = shape.block_stride, block = shape.block](std::size_t i) {
      return (i / block) * block_stride + (i % block) * stride;
    });
  }
}
bool same_shape(column_ref const& a, column_ref const& b) {
  return a.stride == b.stride && a.block_shift == b.block_shift && a.block_stride == b.block_stride &&
         a.block == b.block;
}

// A gather of every column at once (a halo's or a migration's pack: element index[k] of each
// column into element first + k of its message column), for columns of one width W whose sources
// share one shape (all unblocked, or all blocked alike: aosoa) and whose destinations are
// contiguous. Per element the source offset is worked out once and every column read at it, and
// the elements `ahead` are asked for early: the owners lie anywhere, so column by column each
// pass waited on its own misses (the pack of aosoa<16> records was 57% of a forward at 1.95x
// the hand-written SoA code).
// f(c) for c = 0 .. C-1 as C statements (GCC keeps a loop over C otherwise).
template <std::size_t C, class F> inline __attribute__((always_inline)) void for_each_column(F&& f) {
  [&]<std::size_t... c>(std::index_sequence<c...>) { (f(c), ...); }
  (std::make_index_sequence<C>{});
}

// The lines an element's leaves lie on, as offsets from its first column's address (a record of aos:
// its first and last byte, two prefetches, often of one line, not one per leaf; soa or aosoa
// leaves: one each).
struct element_lines {
  static constexpr std::size_t max = 33;
  std::ptrdiff_t at[max];
  std::size_t count = 0;
};
element_lines lines_of(column_copy const* columns, std::size_t count, std::size_t width) {
  constexpr std::ptrdiff_t line = 64;
  std::ptrdiff_t offsets[element_lines::max] = {};
  for (std::size_t c = 0; c < count; ++c) {  // (as integers: the columns may lie in different arrays)
    offsets[c] = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(columns[c].src.base) -
                                             reinterpret_cast<std::uintptr_t>(columns[0].src.base));
  }
  std::sort(offsets, offsets + count);
  // Leaves in runs at most a line long (first byte to last): a run touches one or two lines, its
  // first and last bytes one in each; a run of one leaf (aligned, at most 8 bytes) one line.
  element_lines out;
  auto const width_bytes = static_cast<std::ptrdiff_t>(width);
  std::ptrdiff_t run_start = offsets[0], run_end = offsets[0] + width_bytes - 1;
  auto const close_run = [&] {
    out.at[out.count++] = run_start;
    if (run_end - run_start + 1 > width_bytes) out.at[out.count++] = run_end;
  };
  for (std::size_t c = 1; c < count; ++c) {
    std::ptrdiff_t const end = offsets[c] + width_bytes - 1;
    if (end - run_start >= line) {
      close_run();
      run_start = offsets[c];
    }
    run_end = end;
  }
  close_run();
  return out;
}

// The loop of gather_columns_together with the column count C known at compile time (the element's
// copies unrolled: the loop is bound by how many owners' misses the core keeps in flight, so every
// instruction per element counts; add_columns_together says more), or C = 0: any count.
template <std::size_t W, std::size_t C, class Offset>
void gather_columns_of(std::byte const* const* source, std::byte* const* destination, std::size_t count, std::size_t n,
                       std::uint32_t const* index, Offset offset, element_lines const& lines) {
  constexpr std::size_t ahead = 16;
  for (std::size_t k = 0; k < n; ++k) {
    if (k + ahead < n) {
      std::byte const* const later = source[0] + offset(index[k + ahead]);
      auto const base = reinterpret_cast<std::uintptr_t>(later);
      for (std::size_t l = 0; l < lines.count; ++l) {
        __builtin_prefetch(reinterpret_cast<void const*>(base + static_cast<std::uintptr_t>(lines.at[l])), 0);
      }
    }
    std::size_t const at = offset(index[k]);
    if constexpr (C != 0) {
      for_each_column<C>([&](std::size_t c) { std::memcpy(destination[c] + k * W, source[c] + at, W); });
    } else {
      for (std::size_t c = 0; c < count; ++c) std::memcpy(destination[c] + k * W, source[c] + at, W);
    }
  }
}

template <std::size_t W> void gather_columns_together(column_copy const* columns, std::size_t count, std::size_t n,
                                                      std::uint32_t const* index, std::size_t first) {
  constexpr std::size_t max_columns = 32;
  std::byte const* source[max_columns];
  std::byte* destination[max_columns];
  for (std::size_t c = 0; c < count; ++c) {
    source[c] = columns[c].src.base;
    destination[c] = columns[c].dst.base + first * W;
  }
  element_lines const lines = lines_of(columns, count, W);
  with_offset(columns[0].src, [&](auto offset_of) {
    auto const offset = offset_of;  // a local copy, as in move_column
    auto const with = [&]<std::size_t C>() {
      gather_columns_of<W, C>(source, destination, count, n, index, offset, lines);
    };
    switch (count) {  // the counts of common records (a vec3 and a few scalars up to two vec3 and more)
      case 2:
        return with.template operator()<2>();
      case 3:
        return with.template operator()<3>();
      case 4:
        return with.template operator()<4>();
      case 5:
        return with.template operator()<5>();
      case 6:
        return with.template operator()<6>();
      case 7:
        return with.template operator()<7>();
      case 8:
        return with.template operator()<8>();
      case 9:
        return with.template operator()<9>();
      case 10:
        return with.template operator()<10>();
      case 11:
        return with.template operator()<11>();
      case 12:
        return with.template operator()<12>();
      default:
        return with.template operator()<0>();
    }
  });
}

// A block's leaf run copied with its size known at compile time where it is a common one (aosoa<16>
// of floats: 64 bytes), so that it is a few vector moves instead of a call to memcpy.
inline void copy_block_run(std::byte* dst, std::byte const* src, std::size_t bytes) {
  switch (bytes) {
    case 32:
      std::memcpy(dst, src, 32);
      break;
    case 64:
      std::memcpy(dst, src, 64);
      break;
    case 128:
      std::memcpy(dst, src, 128);
      break;
    case 256:
      std::memcpy(dst, src, 256);
      break;
    default:
      std::memcpy(dst, src, bytes);
  }
}

// move_range_in_runs where at most one side is blocked (a message column is packed): after a
// first partial block, whole blocks, the blocked side's pointer stepping by its block stride and
// the packed side's by a block's bytes; the block arithmetic (a division where the block is not a
// power of two) once per call, not per run (per run it was most of an aosoa<16> reverse's pack).
void move_range_one_side_blocked(column_copy const& c, std::size_t n, std::size_t from, std::size_t to) {
  bool const source_blocked = c.src.block_elements() != 0;
  column_ref const& blocked = source_blocked ? c.src : c.dst;
  std::size_t const block = blocked.block_elements();
  if (block == 0) {
    std::memcpy(c.dst.address(to), c.src.address(from), n * c.width);
    return;
  }
  std::size_t const start = source_blocked ? from : to;
  std::byte* packed = source_blocked ? c.dst.address(to) : c.src.address(from);
  std::size_t const first_run = std::min(n, block - start % block);
  std::byte* at = blocked.address(start);
  auto const copy = [&](std::byte* blocked_at, std::size_t bytes) {
    if (source_blocked) {
      copy_block_run(packed, blocked_at, bytes);
    } else {
      copy_block_run(blocked_at, packed, bytes);
    }
    packed += bytes;
  };
  copy(at, first_run * c.width);
  std::size_t k = first_run;
  if (k == n) return;
  at = blocked.address(start + k);  // a block's first element
  while (true) {                    // (the pointer steps to a block only when elements remain there)
    std::size_t const run = std::min(block, n - k);
    copy(at, run * c.width);
    k += run;
    if (k == n) break;
    at += blocked.block_stride;
  }
}

// A range of elements [from, from + n) into [to, to + n) of a column whose elements are packed
// (stride = width) on both sides: a memcpy per run, a run ending where either side's block ends
// (aosoa<W>: W elements of a leaf lie together, then the next leaf's). A pack of a halo's ghosts
// or an unpack of arrivals: element by element through the block arithmetic on aosoa<16>, the
// pack of a reverse into a member took 14% of the call.
void move_range_in_runs(column_copy const& c, std::size_t n, std::size_t from, std::size_t to) {
  std::size_t const src_block = c.src.block_elements(), dst_block = c.dst.block_elements();  // 0: unblocked
  if (src_block == 0 || dst_block == 0) return move_range_one_side_blocked(c, n, from, to);
  for (std::size_t k = 0; k < n;) {
    std::size_t run = n - k;
    run = std::min(run, src_block - (from + k) % src_block);
    run = std::min(run, dst_block - (to + k) % dst_block);
    std::memcpy(c.dst.address(to + k), c.src.address(from + k), run * c.width);
    k += run;
  }
}
bool packed_both_sides(column_copy const& c) { return c.src.stride == c.width && c.dst.stride == c.width; }

// gather_columns_together where it applies; false elsewhere (the caller moves column by column).
bool gather_together(column_copy const* columns, std::size_t count, std::size_t n, index_map src, index_map dst) {
  if (src.index == nullptr || dst.index != nullptr || count < 2 || count > 32) return false;
  std::size_t const width = columns[0].width;
  if (width != 4 && width != 8) return false;
  for (std::size_t c = 0; c < count; ++c) {
    column_ref const& d = columns[c].dst;
    if (columns[c].width != width || !same_shape(columns[c].src, columns[0].src) || !d.contiguous(width)) return false;
  }
  if (width == 4) {
    gather_columns_together<4>(columns, count, n, src.index, dst.first);
  } else {
    gather_columns_together<8>(columns, count, n, src.index, dst.first);
  }
  return true;
}

// The sums of C columns of one type E in one pass (a reverse: a message's contiguous columns
// added into owners whose columns share one shape): per element one index read, every column's
// add at once, and the owners `ahead` asked for early. The loop is bound by how many owners' misses
// the core keeps in flight, which is how many elements its window holds: every instruction per
// element counts (measured on AMD EPYC, 52,457 random owners of 1M: the form below with one
// prefetch 32 ahead 0.30-0.34 ms, a plain AoS loop 0.39-0.45, the former form (each column's own
// base plus a byte offset, a prefetch per column 16 ahead: three per aos record) 0.55-0.62).
// Addresses are a base plus a constant or a scaled index, never a separately computed pointer.
constexpr std::size_t sum_ahead = 32;

// *to += *from for typed pointers: add_one's memcpy moves (the message and the owners are bytes
// the library copied numbers into), with no aliasing rule to break.
template <class E> inline void add_at(E* to, E const* from) {
  add_one<E>(reinterpret_cast<std::byte*>(to), reinterpret_cast<std::byte const*>(from));
}

// The owners' leaves side by side in one record (a vec3 member of aos records, or any record with
// E-sized leaves in a row): one pointer per element, the leaves at constant displacements, one
// prefetch per record.
template <class E, std::size_t C> void add_leaves_of_records(std::byte* to, std::size_t stride,
                                                             E const* const (&from)[C], std::size_t n,
                                                             std::uint32_t const* index) {
  for (std::size_t k = 0; k < n; ++k) {
    if (k + sum_ahead < n) __builtin_prefetch(to + index[k + sum_ahead] * stride, 1);
    auto* const owner = reinterpret_cast<E*>(to + index[k] * stride);
    for_each_column<C>([&](std::size_t c) { add_at(owner + c, from[c] + k); });
  }
}

// Packed columns (soa): each column indexed by the owner, a prefetch per column.
template <class E, std::size_t C>
void add_packed_columns(E* const (&to)[C], E const* const (&from)[C], std::size_t n, std::uint32_t const* index) {
  for (std::size_t k = 0; k < n; ++k) {
    if (k + sum_ahead < n) {
      std::size_t const later = index[k + sum_ahead];
      for_each_column<C>([&](std::size_t c) { __builtin_prefetch(to[c] + later, 1); });
    }
    std::size_t const i = index[k];
    for_each_column<C>([&](std::size_t c) { add_at(to[c] + i, from[c] + k); });
  }
}

// Blocked columns (aosoa) whose leaves lie a constant distance apart inside each block (a vec3
// member: x, y and z one block-row apart): one offset per element, each leaf at a multiple of
// the distance from the first, a prefetch per leaf (each leaf is on a line of its own).
template <class E, std::size_t C> void add_blocked_leaves(std::byte* to, column_ref const& shape, std::size_t spacing,
                                                          E const* const (&from)[C], std::size_t n,
                                                          std::uint32_t const* index) {
  std::size_t const stride = shape.stride, block_stride = shape.block_stride;
  unsigned const shift = shape.block_shift;
  std::size_t const mask = (std::size_t{1} << shift) - 1;
  auto const offset = [=](std::size_t i) { return (i >> shift) * block_stride + (i & mask) * stride; };
  for (std::size_t k = 0; k < n; ++k) {
    if (k + sum_ahead < n) {
      std::byte* const later = to + offset(index[k + sum_ahead]);
      for_each_column<C>([&](std::size_t c) { __builtin_prefetch(later + c * spacing, 1); });
    }
    std::byte* const owner = to + offset(index[k]);
    for_each_column<C>([&](std::size_t c) { add_at(reinterpret_cast<E*>(owner + c * spacing), from[c] + k); });
  }
}

// Any other shape (leaves apart at no constant distance, blocks not a power of two): each column's base plus the element's offset.
template <class E, std::size_t C> void add_columns_of_shape(column_sum const* columns, E const* const (&from)[C],
                                                            std::size_t n, std::uint32_t const* index) {
  std::byte* to[C];
  for (std::size_t c = 0; c < C; ++c) to[c] = columns[c].dst.base;
  with_offset(columns[0].dst, [&](auto offset_of) {
    auto const offset = offset_of;  // a local copy, as in move_column
    for (std::size_t k = 0; k < n; ++k) {
      if (k + sum_ahead < n) {
        std::size_t const later = offset(index[k + sum_ahead]);
        for_each_column<C>([&](std::size_t c) { __builtin_prefetch(to[c] + later, 1); });
      }
      std::size_t const at = offset(index[k]);
      for_each_column<C>(
          [&](std::size_t c) { add_one<E>(to[c] + at, reinterpret_cast<std::byte const*>(from[c] + k)); });
    }
  });
}

template <class E, std::size_t C>
void add_columns_together(column_sum const* columns, std::size_t n, std::uint32_t const* index, std::size_t first) {
  E const* from[C];
  for (std::size_t c = 0; c < C; ++c) from[c] = reinterpret_cast<E const*>(columns[c].src.base) + first;
  column_ref const& shape = columns[0].dst;
  bool const unblocked = shape.block_shift == 63;
  bool aligned = reinterpret_cast<std::uintptr_t>(shape.base) % alignof(E) == 0 && shape.stride % alignof(E) == 0;
  for (std::size_t c = 0; c < C; ++c) aligned = aligned && reinterpret_cast<std::uintptr_t>(from[c]) % alignof(E) == 0;
  bool side_by_side = unblocked && aligned && shape.stride >= C * sizeof(E);
  for (std::size_t c = 0; c < C; ++c) side_by_side = side_by_side && columns[c].dst.base == shape.base + c * sizeof(E);
  if (side_by_side) return add_leaves_of_records<E, C>(shape.base, shape.stride, from, n, index);
  if (shape.block_shift < 63 && aligned && shape.block_stride % alignof(E) == 0 && columns[1].dst.base > shape.base) {
    std::size_t const spacing = static_cast<std::size_t>(columns[1].dst.base - shape.base);
    bool evenly = spacing % alignof(E) == 0;
    for (std::size_t c = 0; c < C; ++c) evenly = evenly && columns[c].dst.base == shape.base + c * spacing;
    if (evenly) return add_blocked_leaves<E, C>(shape.base, shape, spacing, from, n, index);
  }
  if (unblocked && aligned && shape.stride == sizeof(E)) {
    E* to[C];
    bool packed = true;
    for (std::size_t c = 0; c < C; ++c) {
      to[c] = reinterpret_cast<E*>(columns[c].dst.base);
      packed = packed && reinterpret_cast<std::uintptr_t>(to[c]) % alignof(E) == 0;
    }
    if (packed) return add_packed_columns<E, C>(to, from, n, index);
  }
  add_columns_of_shape<E, C>(columns, from, n, index);
}

// Two to four float or double columns of one type (a force, a vec3) from contiguous message
// columns into owners of one shape: summed together. False for anything else (the caller sums
// column by column).
bool add_together(column_sum const* columns, std::size_t count, std::size_t n, index_map src, index_map dst) {
  if (count < 2 || count > 4 || src.index != nullptr || dst.index == nullptr) return false;
  scalar_type const type = columns[0].type;
  if (type != scalar_type::f32 && type != scalar_type::f64) return false;
  std::size_t const width = type == scalar_type::f32 ? 4 : 8;
  for (std::size_t c = 0; c < count; ++c) {
    if (columns[c].type != type || !same_shape(columns[c].dst, columns[0].dst) || !columns[c].src.contiguous(width)) {
      return false;
    }
  }
  auto const with = [&]<class E>() {
    if (count == 2) add_columns_together<E, 2>(columns, n, dst.index, src.first);
    if (count == 3) add_columns_together<E, 3>(columns, n, dst.index, src.first);
    if (count == 4) add_columns_together<E, 4>(columns, n, dst.index, src.first);
  };
  if (type == scalar_type::f32) {
    with.template operator()<float>();
  } else {
    with.template operator()<double>();
  }
  return true;
}

// What the in-place moves of a migration (pack_and_close_up) know besides the column.
struct close_up_job {
  std::size_t n = 0;                       // elements before the migration
  std::uint32_t const* leavers = nullptr;  // ascending
  std::size_t m = 0;                       // leavers
  std::uint32_t const* fillers = nullptr;  // unordered: the stayers that fill the holes, ascending
  std::size_t holes = 0;                   // unordered: the leavers below n - m
};

// The in-place moves of one column for the leavers [k0, k1) of a migration, at a width known at
// compile time (Width: an integral_constant) or not (a std::size_t). (A branchless copy of every
// element from a stretch's first leaver to its last, the cursors advanced by whether it stays,
// was slower than this loop per run of stayers: 41 against 33 ms for 8 columns of 1M elements.)
template <bool Pack, bool KeepOrder, class Width>
void close_up_column(column_copy const& col, Width width, close_up_job const& job, std::size_t k0, std::size_t k1) {
  with_address(col.src, [&, width](auto address) {
    // Local copies of everything the loops read: a byte store may alias anything reached through
    // a reference, so the loops would reload it after every element (as move_column says).
    auto const at = address;
    std::size_t const w = width;
    std::byte* const message = col.dst.base;
    bool const contiguous = col.src.contiguous(w);
    std::uint32_t const* const leavers = job.leavers;
    std::uint32_t const* const fillers = job.fillers;
    std::size_t const n = job.n, m = job.m, holes = job.holes, first = k0, last = k1;
    for (std::size_t k = first; k < last; ++k) {
      std::size_t const i = leavers[k];
      if constexpr (Pack) std::memcpy(message + k * w, at(i), w);
      if constexpr (KeepOrder) {
        // The stayers between this leaver and the next move down by k + 1 (to slots already read).
        std::size_t const end = k + 1 < m ? leavers[k + 1] : n;
        std::size_t to = i - k;
        std::size_t const length = end - i - 1;
        if constexpr (!std::is_same_v<Width, std::size_t>) {
          // Contiguous columns past the 16th leaver: the run in whole pieces of 16 elements, the
          // last one past the run's end. Its extra elements land below the next leaver, in slots
          // already read (the destination trails the source by k + 1 >= 17), which the next run
          // or the arrivals overwrite; no piece overlaps what it reads. The loop's trip count is
          // then 1 for most runs, where a loop per element mispredicts its exit once per run and
          // column (31 against 23 ms for 8 columns of 1M elements, 10 % leaving).
          constexpr std::size_t piece = 16 * Width::value;
          if (contiguous && k >= 16 && length <= 256 && i + 1 + (length + 15) / 16 * 16 <= n) {
            std::byte* const into = at(to);
            std::byte const* const from = at(i + 1);
            for (std::size_t done = 0; done < length * Width::value; done += piece) {
              std::memcpy(into + done, from + done, piece);
            }
            continue;
          }
        }
        if (contiguous && length > 32) {
          std::memmove(at(to), at(i + 1), length * w);
        } else {
          for (std::size_t j = i + 1; j < end; ++j, ++to) std::memcpy(at(to), at(j), w);
        }
      } else {
        if (k < holes) std::memcpy(at(i), at(fillers[k]), w);
      }
    }
  });
}

// Blocked columns (aosoa<W>, W a power of two) all of one width inside the same blocks: the
// moves element by element, every column of an element together (offsets from the first column),
// so that the loop over a run of stayers runs (and mispredicts its exit) once per run, not once
// per run and column, and each element's address is computed once. For the usual column counts
// the count is a compile-time constant: the element's moves unrolled, the offsets in registers
// (aosoa<16> order kept: 1.28-1.29x the SoA hand-written step with a run-time count, 1.18-1.19x).
template <std::size_t W> struct same_blocks {
  std::byte* base = nullptr;
  std::size_t block_stride = 0;
  unsigned shift = 0;
  std::size_t mask = 0;
  std::byte* address(std::size_t i) const { return base + (i >> shift) * block_stride + (i & mask) * W; }
};
// C: the number of columns when known at compile time (the element's moves unrolled, its offsets
// in registers), 0 when not.
template <std::size_t W, bool Pack, bool KeepOrder, std::size_t C>
void close_up_blocked(same_blocks<W> const blocks, std::ptrdiff_t const* column_offsets, std::byte* const* messages,
                      std::size_t count, close_up_job const job) {
  std::size_t const columns = C == 0 ? count : C;
  std::array<std::ptrdiff_t, C == 0 ? 64 : C> offsets{};
  for (std::size_t c = 0; c < columns; ++c) offsets[c] = column_offsets[c];
  std::uint32_t const* const leavers = job.leavers;
  std::uint32_t const* const fillers = job.fillers;
  auto const move = [&](std::byte* to, std::byte const* from) {
    for (std::size_t c = 0; c < columns; ++c) std::memcpy(to + offsets[c], from + offsets[c], W);
  };
  for (std::size_t k = 0; k < job.m; ++k) {
    std::size_t const i = leavers[k];
    std::byte* const leaver = blocks.address(i);
    if constexpr (Pack) {
      for (std::size_t c = 0; c < columns; ++c) std::memcpy(messages[c] + k * W, leaver + offsets[c], W);
    }
    if constexpr (KeepOrder) {
      std::size_t const end = k + 1 < job.m ? leavers[k + 1] : job.n;
      for (std::size_t j = i + 1, to = i - k; j < end; ++j, ++to) move(blocks.address(to), blocks.address(j));
    } else {
      if (k < job.holes) move(leaver, blocks.address(fillers[k]));
    }
  }
}
template <std::size_t W, bool Pack, bool KeepOrder>
void close_up_blocked_columns(same_blocks<W> const blocks, std::ptrdiff_t const* offsets, std::byte* const* messages,
                              std::size_t count, close_up_job const& job) {
  auto const fixed = [&]<std::size_t C>() {
    close_up_blocked<W, Pack, KeepOrder, C>(blocks, offsets, messages, count, job);
  };
  switch (count) {  // the element sizes of common records (leaves of 4 or 8 bytes)
    case 2:
      return fixed.template operator()<2>();
    case 3:
      return fixed.template operator()<3>();
    case 4:
      return fixed.template operator()<4>();
    case 5:
      return fixed.template operator()<5>();
    case 6:
      return fixed.template operator()<6>();
    case 7:
      return fixed.template operator()<7>();
    case 8:
      return fixed.template operator()<8>();
    case 10:
      return fixed.template operator()<10>();
    case 12:
      return fixed.template operator()<12>();
    case 16:
      return fixed.template operator()<16>();
    default:
      return fixed.template operator()<0>();
  }
}
// The columns as same_blocks when they are (each .src blocked as the first, its element stride its
// width, W; the messages contiguous or none); false otherwise.
template <std::size_t W> bool close_up_in_blocks(column_copy const* columns, std::size_t count, close_up_job const& job,
                                                 bool pack, bool keep_order) {
  column_ref const& first = columns[0].src;
  if (first.block_shift >= 63 || count > 64) return false;
  std::ptrdiff_t offsets[64];
  std::byte* messages[64];
  for (std::size_t c = 0; c < count; ++c) {
    column_ref const& s = columns[c].src;
    if (columns[c].width != W || s.block_shift != first.block_shift || s.block_stride != first.block_stride ||
        s.stride != W || (pack && columns[c].dst.stride != W)) {
      return false;
    }
    offsets[c] = s.base - first.base;
    messages[c] = columns[c].dst.base;
  }
  same_blocks<W> const blocks{first.base, first.block_stride, first.block_shift,
                              (std::size_t{1} << first.block_shift) - 1};
  if (pack && keep_order) close_up_blocked_columns<W, true, true>(blocks, offsets, messages, count, job);
  if (pack && !keep_order) close_up_blocked_columns<W, true, false>(blocks, offsets, messages, count, job);
  if (!pack && keep_order) close_up_blocked_columns<W, false, true>(blocks, offsets, messages, count, job);
  if (!pack && !keep_order) close_up_blocked_columns<W, false, false>(blocks, offsets, messages, count, job);
  return true;
}

// Leaves of one record (aos, a split's packed part: unblocked columns of width W with one stride,
// their bases within a record of each other) as the element moves of close_up_blocked, a record
// a block of one element: every leaf of a record moved together, as aosoa's elements are. Marks the
// columns it moved in `done`; the others go column by column. (A split's records moved leaf by
// leaf, one pass over the same lines per leaf: 1.38-1.43x the SoA hand-written step.)
template <std::size_t W> void close_up_records(column_copy const* columns, std::size_t count, close_up_job const& job,
                                               bool pack, bool keep_order, std::vector<bool>& done) {
  auto const at = [](column_ref const& c) { return reinterpret_cast<std::uintptr_t>(c.base); };
  for (std::size_t c = 0; c < count; ++c) {
    column_ref const& first = columns[c].src;
    if (done[c] || columns[c].width != W || first.block_shift != 63 || first.stride <= W) continue;
    std::vector<std::size_t> group;
    std::uintptr_t lowest = at(first);
    for (std::size_t d = c; d < count; ++d) {
      column_ref const& s = columns[d].src;
      std::uintptr_t const a = at(s), b = at(first);
      bool const same_record = (a > b ? a - b : b - a) < first.stride;
      if (!done[d] && columns[d].width == W && s.block_shift == 63 && s.stride == first.stride && same_record &&
          (!pack || columns[d].dst.stride == W) && group.size() < 64) {
        group.push_back(d);
        lowest = std::min(lowest, a);
      }
    }
    if (group.size() < 2) continue;
    std::ptrdiff_t offsets[64];
    std::byte* messages[64];
    for (std::size_t g = 0; g < group.size(); ++g) {
      offsets[g] = static_cast<std::ptrdiff_t>(at(columns[group[g]].src) - lowest);
      messages[g] = columns[group[g]].dst.base;
      done[group[g]] = true;
    }
    std::byte* const base = columns[group[0]].src.base - offsets[0];
    same_blocks<W> const records{base, first.stride, 0, 0};
    if (pack && keep_order) close_up_blocked_columns<W, true, true>(records, offsets, messages, group.size(), job);
    if (pack && !keep_order) close_up_blocked_columns<W, true, false>(records, offsets, messages, group.size(), job);
    if (!pack && keep_order) close_up_blocked_columns<W, false, true>(records, offsets, messages, group.size(), job);
    if (!pack && !keep_order) close_up_blocked_columns<W, false, false>(records, offsets, messages, group.size(), job);
  }
}

template <bool Pack, bool KeepOrder>
void close_up_one_column(column_copy const& col, close_up_job const& job, std::size_t k0, std::size_t k1) {
  auto const with = [&](auto width) { close_up_column<Pack, KeepOrder>(col, width, job, k0, k1); };
  switch (col.width) {  // a constant width: each copy is one or two moves, not a memcpy call
    case 1:
      return with(std::integral_constant<std::size_t, 1>{});
    case 2:
      return with(std::integral_constant<std::size_t, 2>{});
    case 4:
      return with(std::integral_constant<std::size_t, 4>{});
    case 8:
      return with(std::integral_constant<std::size_t, 8>{});
    case 12:
      return with(std::integral_constant<std::size_t, 12>{});
    case 16:
      return with(std::integral_constant<std::size_t, 16>{});
    case 32:
      return with(std::integral_constant<std::size_t, 32>{});
    default:
      return with(col.width);
  }
}

// The indices i in [first, n) near either face (read(i) below faces[0]'s threshold, at least
// faces[1]'s), ascending, in one pass. No branch per element: every index is written to both
// lists and the next overwrites it unless it was chosen (each list has room for n - first), so a
// face's few percent cost no mispredicted branches; a face not wanted keeps its count at zero.
template <class Read> void select_indices(std::size_t first, std::size_t n, face_selection (&faces)[2], Read read) {
  std::uint32_t dummy[2];
  bool const below_wanted = faces[0].wanted, above_wanted = faces[1].wanted;
  std::uint32_t* const below = below_wanted ? faces[0].out : dummy;
  std::uint32_t* const above = above_wanted ? faces[1].out : dummy + 1;
  double const low = faces[0].threshold, high = faces[1].threshold;
  std::size_t b = 0, a = 0;
  for (std::size_t i = first; i < n; ++i) {
    double const x = read(i);
    below[b] = static_cast<std::uint32_t>(i);
    above[a] = static_cast<std::uint32_t>(i);
    b += below_wanted & (x < low);
    a += above_wanted & (x >= high);
  }
  faces[0].count = b;
  faces[1].count = a;
}

}  // namespace

void move_columns_indexed(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n, index_map src,
                          index_map dst, void* stream) {
  if (n == 0 || count == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::move_columns_indexed(columns, count, n, src, dst, stream);
#endif
  (void)kind, (void)stream;
  if (gather_together(columns, count, n, src, dst)) return;
  if (src.index == nullptr && dst.index == nullptr) {  // ranges: packed columns in runs, the rest as before
    bool all_packed = true;
    for (std::size_t c = 0; c < count; ++c) all_packed = all_packed && packed_both_sides(columns[c]);
    if (all_packed) {
      for (std::size_t c = 0; c < count; ++c) move_range_in_runs(columns[c], n, src.first, dst.first);
      return;
    }
  }
  for_chunks(n, src, dst, [&](std::size_t n, index_map src, index_map dst) {
    for (std::size_t c = 0; c < count; ++c) move_one_column(columns[c], n, src, dst);
  });
}

std::size_t find_leavers(int const* dest, std::size_t n, int self, int ranks, std::uint32_t* leavers,
                         std::size_t* counts, std::size_t& first_bad, int& bad_value) {
  if (n > 0xffffffffull) {  // (as check_element_count: the indices are 32-bit)
    throw_error("migrate: " + std::to_string(n) + " elements; a migration handles at most 2^32 - 1 per rank");
  }
  first_bad = no_element;
  auto const limit = static_cast<unsigned>(ranks);
  // Blocks of 32 destinations are first tested together (a vectorised compare): a block where
  // nobody leaves ends there (every block of the common step where nobody leaves); a block with
  // a leaver is walked with no branch per element: every index is written, and the next one
  // overwrites it unless it leaves (a random 10 % leaving mispredicts a branch; the store stays in
  // L1). 32, not 16 or 8: at 10 % leaving a smaller block is skipped often enough to make its test
  // a mispredicted branch (migrate_bench, 2 ranks, AMD: 16 cost 3 %, 8 cost 8 % of that step;
  // with nobody leaving the per-element walk took 2x a hand-written count per rank, 32 0.5x).
  if (self < 0 || self >= ranks) {  // the block test below relies on self being a valid rank
    throw_error("migrate: rank " + std::to_string(self) + " of " + std::to_string(ranks) + " ranks");
  }
  std::size_t m = 0;
  bool bad = false;
  auto const walk = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      int const r = dest[i];
      leavers[m] = static_cast<std::uint32_t>(i);
      m += r != self;
      bad |= static_cast<unsigned>(r) >= limit;
    }
  };
  constexpr std::size_t block = 32;
  std::size_t i = 0;
  for (; i + block <= n; i += block) {
    unsigned other = 0;
    for (std::size_t j = 0; j < block; ++j) other |= static_cast<unsigned>(dest[i + j] != self);
    if (other != 0) walk(i, i + block);
  }
  walk(i, n);
  if (bad) {
    std::size_t i = 0;
    while (static_cast<unsigned>(dest[i]) < limit) ++i;
    first_bad = i;
    bad_value = dest[i];
    return 0;
  }
  for (int r = 0; r < ranks; ++r) counts[r] = 0;
  if (ranks == 2) {
    counts[1 - self] = m;  // (self is 0 or 1)
  } else {
    for (std::size_t k = 0; k < m; ++k) ++counts[dest[leavers[k]]];
  }
  counts[self] = n - m;
  return m;
}

void group_leavers(int const* dest, std::uint32_t const* leavers, std::size_t m, int self, int ranks,
                   std::size_t const* counts, std::uint32_t* grouped) {
  std::vector<std::size_t> next(static_cast<std::size_t>(ranks), 0);
  std::size_t start = 0;
  for (int r = 0; r < ranks; ++r) {
    next[static_cast<std::size_t>(r)] = start;
    if (r != self) start += counts[r];
  }
  for (std::size_t k = 0; k < m; ++k) grouped[next[static_cast<std::size_t>(dest[leavers[k]])]++] = leavers[k];
}

void pack_and_close_up(column_copy const* columns, std::size_t count, std::size_t n, std::uint32_t const* leavers,
                       std::size_t m, bool keep_order, std::uint32_t* fillers) {
  if (m == 0 || count == 0) return;
  close_up_job job{n, leavers, m, fillers, 0};
  // Unordered: the leavers' slots below `kept` (the first `holes` leavers) take the stayers at or
  // past it, ascending: as many stayers lie there as leavers lie below.
  std::size_t const kept = n - m;
  if (!keep_order) {
    job.holes = static_cast<std::size_t>(std::lower_bound(leavers, leavers + m, kept) - leavers);
    std::size_t p = job.holes, f = 0;
    for (std::size_t j = kept; f < job.holes; ++j) {
      if (p < m && leavers[p] == j) {
        ++p;
      } else {
        fillers[f++] = static_cast<std::uint32_t>(j);
      }
    }
  }
  bool const pack = columns[0].dst.base != nullptr;
  if (close_up_in_blocks<4>(columns, count, job, pack, keep_order) ||
      close_up_in_blocks<8>(columns, count, job, pack, keep_order)) {
    return;
  }
  // Stretches of about `span` elements, every column's moves of a stretch before the next: on
  // blocked columns (aosoa) a column's elements lie one line per block, so a column after column
  // pass over all elements touches each line in a stride the prefetchers do not follow (the
  // close-up on aosoa<16> took 45-48 ms against 13-15 ms on soa column by column in stretches of
  // 2048; whole columns: twice that). Blocked stretches of 256 elements (16 KiB of 32-byte
  // elements) measured 63 against 69 ms order kept and 18 against 24 ms unordered for 1024.
  std::vector<bool> done(count, false);
  close_up_records<4>(columns, count, job, pack, keep_order, done);
  close_up_records<8>(columns, count, job, pack, keep_order, done);
  bool blocked = false;
  for (std::size_t c = 0; c < count; ++c) blocked = blocked || columns[c].src.block_shift != 63;
  std::size_t const span = blocked ? 256 : 1024;
  for (std::size_t k0 = 0; k0 < m;) {
    std::size_t const stop = std::size_t{leavers[k0]} + span;
    std::size_t k1 = k0 + 1;
    while (k1 < m && leavers[k1] < stop) ++k1;
    for (std::size_t c = 0; c < count; ++c) {
      if (done[c]) continue;
      if (pack && keep_order) close_up_one_column<true, true>(columns[c], job, k0, k1);
      if (pack && !keep_order) close_up_one_column<true, false>(columns[c], job, k0, k1);
      if (!pack && keep_order) close_up_one_column<false, true>(columns[c], job, k0, k1);
      if (!pack && !keep_order) close_up_one_column<false, false>(columns[c], job, k0, k1);
    }
    k0 = k1;
  }
}

void add_columns_indexed(memory_kind kind, column_sum const* columns, std::size_t count, std::size_t n, index_map src,
                         index_map dst, void* stream) {
  if (n == 0 || count == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::add_columns_indexed(columns, count, n, src, dst, stream);
#endif
  (void)kind, (void)stream;
  if (add_together(columns, count, n, src, dst)) return;
  for_chunks(n, src, dst, [&](std::size_t n, index_map src, index_map dst) {
    for (std::size_t c = 0; c < count; ++c) add_one_column(columns[c], n, src, dst);
  });
}

void shift_column(memory_kind kind, position_columns const& position, unsigned axis, std::size_t first, std::size_t n,
                  double shift, void* stream) {
  if (n == 0 || shift == 0.0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::shift_column(position, axis, first, n, shift, stream);
#endif
  (void)kind, (void)stream;
  for (std::size_t i = first; i < first + n; ++i) {
    shift_coordinate(position, axis, i, shift);
  }
}

void select_near_faces(memory_kind kind, position_columns const& position, unsigned axis, std::size_t first,
                       std::size_t n, face_selection (&faces)[2], void* stream) {
  faces[0].count = faces[1].count = 0;
  if (n <= first || !(faces[0].wanted || faces[1].wanted)) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) {
    for (int k = 0; k < 2; ++k) {
      if (faces[k].wanted) {
        faces[k].count =
            cuda_moves::select_near_face(position, axis, first, n, k == 0, faces[k].threshold, faces[k].out, stream);
      }
    }
    return;
  }
#endif
  (void)kind, (void)stream;
  column_ref const& c = position.axis[axis];
  // Plain float or double coordinates in an unblocked column (soa, aos, a split's column): read by
  // stride, the common case. Anything else (blocked, fixed point, box_fixed) through coordinate_of.
  if (!stored_position(position) && c.block_shift == 63) {
    std::byte const* const base = c.base;
    std::size_t const stride = c.stride;
    if (position.width == 4) {
      return select_indices(first, n, faces, [=](std::size_t i) {
        return static_cast<double>(*reinterpret_cast<float const*>(base + i * stride));
      });
    }
    return select_indices(first, n, faces,
                          [=](std::size_t i) { return *reinterpret_cast<double const*>(base + i * stride); });
  }
  select_indices(first, n, faces, [&](std::size_t i) { return coordinate_of(position, axis, i); });
}

void owners_of(memory_kind kind, position_columns const& position, std::size_t n, owner_grid const& grid, int* out,
               void* stream) {
  if (n == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::owners_of(position, n, grid, out, stream);
#endif
  (void)kind, (void)stream;
  for (std::size_t i = 0; i < n; ++i) {
    double p[3] = {0, 0, 0};
    for (unsigned a = 0; a < position.dims; ++a) p[a] = wrap_in_place(grid, position, a, i);
    out[i] = owner_rank(grid, p);
  }
}

void destination_keys(memory_kind kind, int const* dest, std::size_t n, int self, int ranks, std::uint32_t* keys,
                      void* stream) {
  if (n == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::destination_keys(dest, n, self, ranks, keys, stream);
#endif
  (void)kind, (void)stream;
  for (std::size_t i = 0; i < n; ++i) keys[i] = destination_key(dest[i], self, ranks);
}

void* allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
#if COALESCE_WITH_CUDA
  return cuda_moves::allocate_pinned(bytes);
#else
  return host_allocate(bytes);
#endif
}

void deallocate_pinned(void* p) noexcept {
  if (p == nullptr) return;
#if COALESCE_WITH_CUDA
  cuda_moves::deallocate_pinned(p);
#else
  host_deallocate(p);
#endif
}

double read_position_coordinate(memory_kind kind, position_columns const& p, unsigned a, std::size_t i) {
  if (!stored_position(p)) return read_coordinate(kind, p.axis[a], p.width, i);
  std::uint32_t q = 0;
  copy_bytes(memory_kind::host, &q, kind, p.axis[a].address(i), sizeof q);
  if (p.boxed) return static_cast<double>(box_read<float>(q, p.box_format[a]));  // as coordinate_of
  return static_cast<double>(static_cast<float>(static_cast<std::int32_t>(q)) * float_power_of_two(-p.fixed_bits));
}

// Declared in reorder_ops.hpp: a coordinate for a message, in any memory.
double read_coordinate(memory_kind kind, column_ref const& c, unsigned width, std::size_t i) {
  std::byte bytes[8] = {};
  copy_bytes(memory_kind::host, bytes, kind, c.address(i), width);
  if (width == 4) {
    float v;
    std::memcpy(&v, bytes, 4);
    return v;
  }
  double v;
  std::memcpy(&v, bytes, 8);
  return v;
}

}  // namespace coalesce::detail
