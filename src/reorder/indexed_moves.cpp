// detail/indexed_moves.hpp: host loops, and the dispatch to the GPU versions
// (src/indexed_moves_cuda.cu) for GPU memory. Without CUDA, device memory is host memory and
// takes the host loops.
#include <coalesce/reorder/indexed_moves.hpp>

#include <cstring>

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
template <class E> void add_column(column_sum const& col, std::size_t n, index_map src, index_map dst) {
  if (col.src.block_shift == 63 && col.dst.block_shift == 63 && src.index == nullptr && dst.index != nullptr) {
    std::byte const* s = col.src.base + src.first * col.src.stride;  // a reverse: sums from a message
    for (std::size_t k = 0; k < n; ++k)
      add_one<E>(col.dst.base + dst.index[k] * col.dst.stride, s + k * col.src.stride);
    return;
  }
  for (std::size_t k = 0; k < n; ++k) add_one<E>(col.dst.address(dst.at(k)), col.src.address(src.at(k)));
}

// One column's moves at a width known at compile time; unblocked columns (soa, aos, messages)
// and plain index ranges take the loop without per-element address arithmetic branches.
template <std::size_t W> void move_column(column_copy const& col, std::size_t n, index_map src, index_map dst) {
  bool const plain = col.src.block_shift == 63 && col.dst.block_shift == 63;
  if (plain && src.index == nullptr && dst.index == nullptr) {
    std::byte* d = col.dst.base + dst.first * col.dst.stride;
    std::byte const* s = col.src.base + src.first * col.src.stride;
    for (std::size_t k = 0; k < n; ++k) std::memcpy(d + k * col.dst.stride, s + k * col.src.stride, W);
  } else if (plain && dst.index == nullptr) {  // a pack: gather into a message
    std::byte* d = col.dst.base + dst.first * col.dst.stride;
    for (std::size_t k = 0; k < n; ++k)
      std::memcpy(d + k * col.dst.stride, col.src.base + src.index[k] * col.src.stride, W);
  } else if (plain && src.index == nullptr) {  // an unpack: scatter from a message
    std::byte const* s = col.src.base + src.first * col.src.stride;
    for (std::size_t k = 0; k < n; ++k)
      std::memcpy(col.dst.base + dst.index[k] * col.dst.stride, s + k * col.src.stride, W);
  } else {
    for (std::size_t k = 0; k < n; ++k) std::memcpy(col.dst.address(dst.at(k)), col.src.address(src.at(k)), W);
  }
}

// Stores a coordinate in the column's precision; returns what was stored (a float rounds).
double write_coordinate(column_ref const& c, unsigned width, std::size_t i, double x) {
  if (width == 4) {
    float const v = static_cast<float>(x);
    std::memcpy(c.address(i), &v, 4);
    return v;
  }
  std::memcpy(c.address(i), &x, 8);
  return x;
}

}  // namespace

void move_columns_indexed(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n, index_map src,
                          index_map dst, void* stream) {
  if (n == 0 || count == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::move_columns_indexed(columns, count, n, src, dst, stream);
#endif
  (void)kind, (void)stream;
  for (std::size_t c = 0; c < count; ++c) {
    column_copy const& col = columns[c];
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
}

void add_columns_indexed(memory_kind kind, column_sum const* columns, std::size_t count, std::size_t n, index_map src,
                         index_map dst, void* stream) {
  if (n == 0 || count == 0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::add_columns_indexed(columns, count, n, src, dst, stream);
#endif
  (void)kind, (void)stream;
  for (std::size_t c = 0; c < count; ++c) {
    column_sum const& col = columns[c];
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
}

void shift_column(memory_kind kind, column_ref column, unsigned width, std::size_t first, std::size_t n, double shift,
                  void* stream) {
  if (n == 0 || shift == 0.0) return;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::shift_column(column, width, first, n, shift, stream);
#endif
  (void)kind, (void)stream;
  for (std::size_t i = first; i < first + n; ++i) {
    if (width == 4) {
      float v;
      std::memcpy(&v, column.address(i), 4);
      v = static_cast<float>(static_cast<double>(v) + shift);
      std::memcpy(column.address(i), &v, 4);
    } else {
      double v;
      std::memcpy(&v, column.address(i), 8);
      v += shift;
      std::memcpy(column.address(i), &v, 8);
    }
  }
}

std::size_t select_near_face(memory_kind kind, column_ref column, unsigned width, std::size_t n, bool below,
                             double threshold, std::uint32_t* out, void* stream) {
  if (n == 0) return 0;
#if COALESCE_WITH_CUDA
  if (on_gpu(kind)) return cuda_moves::select_near_face(column, width, n, below, threshold, out, stream);
#endif
  (void)kind, (void)stream;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double const x = coordinate_at(column, width, i);
    if (below ? x < threshold : x >= threshold) out[count++] = static_cast<std::uint32_t>(i);
  }
  return count;
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
    for (unsigned a = 0; a < position.dims; ++a) {
      p[a] = coordinate_at(position.axis[a], position.width, i);
      double const inside = wrapped_coordinate(grid, a, p[a], position.width);
      if (inside != p[a]) p[a] = write_coordinate(position.axis[a], position.width, i, inside);
    }
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
  for (std::size_t i = 0; i < n; ++i) {
    int const r = dest[i];
    keys[i] = r == self             ? 0u
              : r >= 0 && r < ranks ? static_cast<std::uint32_t>(r) + 1u
                                    : static_cast<std::uint32_t>(ranks) + 1u;
  }
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
