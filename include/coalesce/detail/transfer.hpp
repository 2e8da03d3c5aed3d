// Moving n elements of T between two storages of any layouts and memory kinds. Same layout:
// plain byte copies (one per column for soa). Different layouts: one fused column-copy launch
// (src/), run where the data is fastest to touch: on the GPU when either side is GPU memory,
// after staging the host side there in its own layout.
#pragma once
#include <cstddef>
#include <type_traits>
#include <vector>

#include "../layout.hpp"
#include "../reflect.hpp"
#include "memory.hpp"

namespace coalesce::detail {

template <class T, class LD, class LS>
std::vector<column_copy> column_copies(layout_storage<T, LD> const& dst, layout_storage<T, LS> const& src) {
  std::vector<column_copy> out;
  out.reserve(reflect::column_count_v<T>);
  for (std::size_t l = 0; l < reflect::leaf_count_v<T>; ++l) {
    auto const& info = reflect::leaf_table_v<T>[l];
    for (std::size_t j = 0; j < info.extent; ++j) out.push_back({dst.column(l, j), src.column(l, j), info.size});
  }
  return out;
}

// Same layout: contiguous byte ranges.
template <class T, class L>
void copy_same_layout(layout_storage<T, L> const& dst, memory_kind dk, layout_storage<T, L> const& src, memory_kind sk,
                      std::size_t n) {
  if constexpr (std::is_same_v<L, soa>) {
    for (std::size_t l = 0; l < reflect::leaf_count_v<T>; ++l) {
      auto const& info = reflect::leaf_table_v<T>[l];
      for (std::size_t j = 0; j < info.extent; ++j) {
        copy_bytes(dk, dst.column(l, j).base, sk, src.column(l, j).base, n * info.size);
      }
    }
  } else if constexpr (std::is_same_v<L, aos>) {
    copy_bytes(dk, dst.base(), sk, src.base(), n * sizeof(T));
  } else {
    copy_bytes(dk, dst.base(), sk, src.base(), layout_storage<T, L>::bytes(n));
  }
}

template <class T, class LD, class LS>
void copy_elements(layout_storage<T, LD> const& dst, memory_kind dk, layout_storage<T, LS> const& src, memory_kind sk,
                   std::size_t n) {
  if (n == 0) return;
  if constexpr (std::is_same_v<LD, LS>) {
    copy_same_layout(dst, dk, src, sk, n);
  } else if (same_memory(dk, sk)) {
    auto const columns = column_copies(dst, src);
    copy_columns(dk == memory_kind::device || sk == memory_kind::device ? memory_kind::device : memory_kind::host,
                 columns.data(), columns.size(), n);
  } else if (dk == memory_kind::device) {
    // host -> GPU with a layout change: upload as is, convert on the GPU.
    buffer staged(memory_kind::device, layout_storage<T, LS>::bytes(n));
    auto const staged_storage = layout_storage<T, LS>::over(staged.data(), n);
    copy_same_layout(staged_storage, memory_kind::device, src, sk, n);
    auto const columns = column_copies(dst, staged_storage);
    copy_columns(memory_kind::device, columns.data(), columns.size(), n);
  } else {
    // GPU -> host with a layout change: convert on the GPU, then download.
    buffer staged(memory_kind::device, layout_storage<T, LD>::bytes(n));
    auto const staged_storage = layout_storage<T, LD>::over(staged.data(), n);
    auto const columns = column_copies(staged_storage, src);
    copy_columns(memory_kind::device, columns.data(), columns.size(), n);
    copy_same_layout(dst, dk, staged_storage, memory_kind::device, n);
  }
}

// Fills elements [first, first + n) with `value`, leaf by leaf.
template <class T, class L>
void fill_elements(layout_storage<T, L> const& dst, memory_kind dk, T const& value, std::size_t first, std::size_t n) {
  if (n == 0) return;
  std::vector<column_fill> fills;
  fills.reserve(reflect::column_count_v<T>);
  auto const* bytes = reinterpret_cast<std::byte const*>(&value);
  for (std::size_t l = 0; l < reflect::leaf_count_v<T>; ++l) {
    auto const& info = reflect::leaf_table_v<T>[l];
    for (std::size_t j = 0; j < info.extent; ++j) fills.push_back({dst.column(l, j), info.size, bytes + info.offset + j * info.size});
  }
  fill_columns(dk, fills.data(), fills.size(), first, n);
}

}  // namespace coalesce::detail
