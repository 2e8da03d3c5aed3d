// Moving n elements of T between two storages of any layouts and memory kinds. Storages whose
// mappings place every leaf alike: one byte copy per blob (the used part). Otherwise one fused
// column-copy launch (src/), run where the data is fastest to touch: on the GPU when either
// side is GPU memory, after staging the host side there in its own layout.
#pragma once
#include <cstddef>
#include <type_traits>
#include <vector>

#include "../core/layout.hpp"
#include "../core/reflect.hpp"
#include "buffer.hpp"
#include "../core/layout_storage.hpp"

namespace coalesce::detail {

// Zeroes the padding inside records and blocks of new storage (layout_storage::blob_has_gaps):
// copies move whole records, and must never read bytes that nothing wrote.
template <class T, class L> void zero_gaps(layout_storage<T, L> const& s, memory_kind kind, void* stream = nullptr) {
  for (std::size_t b = 0; b < layout_storage<T, L>::blob_count; ++b) {
    if (s.blobs[b] != nullptr && layout_storage<T, L>::blob_has_gaps(s.map, b))
      zero_bytes(kind, s.blobs[b], s.map.blob_bytes(b), stream);
  }
}

template <class T, class LD, class LS>
std::vector<column_copy> column_copies(layout_storage<T, LD> const& dst, layout_storage<T, LS> const& src) {
  std::vector<column_copy> out;
  out.reserve(reflect::column_count_v<T>);
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    out.push_back({dst.column(l, j), src.column(l, j), reflect::leaf_table_v<T>[l].size});
  });
  return out;
}

// Bytes of blob b that hold elements [0, n) (up to the end of the last one).
template <class T, class L> std::size_t used_bytes(layout_storage<T, L> const& s, std::size_t blob, std::size_t n) {
  using M = typename layout_storage<T, L>::mapping_type;
  std::size_t end = 0;
  if (n == 0) return 0;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    if (M::blob_of(l) != blob) return;
    column_place const p = s.map.place(l, j);
    end = std::max(end, p.at(n - 1) + reflect::leaf_table_v<T>[l].size);
  });
  return std::min(end, s.map.blob_bytes(blob));
}

// True when both storages place every column alike (same layout, and the same capacity where
// the placement depends on it): then each blob's used bytes copy as one range.
template <class T, class L> bool same_placement(layout_storage<T, L> const& a, layout_storage<T, L> const& b) {
  bool same = true;
  reflect::for_each_column<T>(
      [&](std::size_t l, std::size_t j) { same = same && a.map.place(l, j) == b.map.place(l, j); });
  return same;
}

template <class T, class L> void copy_blobs(layout_storage<T, L> const& dst, memory_kind dk,
                                            layout_storage<T, L> const& src, memory_kind sk, std::size_t n,
                                            void* stream) {
  for (std::size_t b = 0; b < layout_storage<T, L>::blob_count; ++b) {
    copy_bytes(dk, dst.blobs[b], sk, src.blobs[b], used_bytes(src, b, n), stream);
  }
}

template <class T, class LD, class LS> void copy_elements_queued(layout_storage<T, LD> const& dst, memory_kind dk,
                                                                 layout_storage<T, LS> const& src, memory_kind sk,
                                                                 std::size_t n, void* stream) {
  if constexpr (std::is_same_v<LD, LS>) {
    if (same_placement(dst, src)) return copy_blobs(dst, dk, src, sk, n, stream);
  }
  if (same_memory(dk, sk)) {
    auto const columns = column_copies(dst, src);
    copy_columns(dk == memory_kind::device || sk == memory_kind::device ? memory_kind::device : memory_kind::host,
                 columns.data(), columns.size(), n, stream);
  } else if (dk == memory_kind::device) {
    // host -> GPU with another placement: upload as it is, rearrange on the GPU.
    buffer staged(memory_kind::device, layout_storage<T, LS>::bytes(src.map), stream);
    auto const staged_storage = layout_storage<T, LS>::over(staged.data(), src.map);
    copy_blobs(staged_storage, memory_kind::device, src, sk, n, stream);
    auto const columns = column_copies(dst, staged_storage);
    copy_columns(memory_kind::device, columns.data(), columns.size(), n, stream);
  } else {
    // GPU -> host with another placement: rearrange on the GPU, then download.
    buffer staged(memory_kind::device, layout_storage<T, LD>::bytes(dst.map), stream);
    auto const staged_storage = layout_storage<T, LD>::over(staged.data(), dst.map);
    zero_gaps(staged_storage, memory_kind::device, stream);
    auto const columns = column_copies(staged_storage, src);
    copy_columns(memory_kind::device, columns.data(), columns.size(), n, stream);
    copy_blobs(dst, dk, staged_storage, memory_kind::device, n, stream);
  }
}

template <class T, class LD, class LS> void copy_elements(layout_storage<T, LD> const& dst, memory_kind dk,
                                                          layout_storage<T, LS> const& src, memory_kind sk,
                                                          std::size_t n, void* stream = nullptr) {
  if (n == 0) return;
  copy_elements_queued(dst, dk, src, sk, n, stream);
  // Without a stream of the caller's (copy construction, assignment, conversion), a copy within
  // GPU memory is done when this returns: the caller's next work may go to a non-blocking stream,
  // which would not wait for the default stream. (Copies to or from host memory always wait.)
  if (stream == nullptr && device_is_gpu && dk == memory_kind::device && sk == memory_kind::device)
    synchronize_stream(nullptr);
}

// Fills elements [first, first + n) with `value`, leaf by leaf.
template <class T, class L> void fill_elements(layout_storage<T, L> const& dst, memory_kind dk, T const& value,
                                               std::size_t first, std::size_t n, void* stream = nullptr) {
  if (n == 0) return;
  std::vector<column_fill> fills;
  fills.reserve(reflect::column_count_v<T>);
  auto const* bytes = reinterpret_cast<std::byte const*>(&value);
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    auto const& info = reflect::leaf_table_v<T>[l];
    fills.push_back({dst.column(l, j), info.size, bytes + info.offset + j * info.size});
  });
  fill_columns(dk, fills.data(), fills.size(), first, n, stream);
}

}  // namespace coalesce::detail
