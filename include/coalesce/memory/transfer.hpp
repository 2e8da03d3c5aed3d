// Moving n elements of T between two storages of any layouts and memory kinds. Storages whose
// mappings place every leaf alike: one byte copy per blob (the used part). Otherwise one fused
// column-copy launch (src/), run where the data is fastest to touch: on the GPU when either
// side is GPU memory, after staging the host side there in its own layout.
#pragma once
#include <array>
#include <concepts>
#include <cstddef>
#include <string>
#include <utility>
#include <type_traits>
#include <vector>

#include "../core/layout.hpp"
#include "../core/reflect.hpp"
#include "buffer.hpp"
#include "../core/layout_storage.hpp"

namespace coalesce::detail {

// True when blob b holds its elements record after record or block after block (aos, aosoa<W>,
// such groups of a split): every byte of elements [0, k) then lies before the end of the record
// or block of element k - 1, and nothing of a later element does. A vector zeroes the gaps of
// such a blob as elements come into use (zero_gaps_of) instead of its whole capacity at
// allocation: growing to twice the elements then touches no page that no element uses.
template <class T, class L> bool gaps_in_element_order(layout_storage<T, L> const& s, std::size_t b) {
  using M = typename layout_storage<T, L>::mapping_type;
  bool first = true, in_order = true;
  column_place unit{};
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    if (M::blob_of(l) != b) return;
    column_place const p = s.map.place(l, j);
    std::size_t const bytes = layout_storage<T, L>::leaf_bytes(l);
    // Inside one record (unblocked, offset + size within the stride) or one block row.
    bool const fits =
        p.block == 0 ? p.offset + bytes <= p.stride : p.offset + (p.block - 1) * p.stride + bytes <= p.block_stride;
    bool const same_unit = first || (p.block == unit.block &&
                                     (p.block == 0 ? p.stride == unit.stride : p.block_stride == unit.block_stride));
    in_order = in_order && fits && same_unit;
    unit = p;
    first = false;
  });
  return !first && in_order;
}

// The end of the records or blocks of such a blob that hold elements [0, k).
template <class T, class L> std::size_t element_units_end(layout_storage<T, L> const& s, std::size_t b, std::size_t k) {
  if (k == 0) return 0;
  std::size_t const leaf = layout_storage<T, L>::first_leaf_of_blob(b);
  column_place const p = s.map.place(leaf, 0);
  std::size_t const end = p.block == 0 ? k * p.stride : (k + p.block - 1) / p.block * p.block_stride;
  return std::min(end, s.map.blob_bytes(b));
}

// Zeroes the padding inside records and blocks of new storage (layout_storage::blob_has_gaps):
// copies move whole records, and must never read bytes that nothing wrote. `in_use_order`: leave
// the blobs that a vector zeroes as elements come into use (gaps_in_element_order) to it.
template <class T, class L>
void zero_gaps(layout_storage<T, L> const& s, memory_kind kind, void* stream = nullptr, bool in_use_order = false) {
  for (std::size_t b = 0; b < layout_storage<T, L>::blob_count; ++b) {
    if (s.blobs[b] == nullptr || !layout_storage<T, L>::blob_has_gaps(s.map, b)) continue;
    if (in_use_order && gaps_in_element_order(s, b)) continue;
    zero_bytes(kind, s.blobs[b], s.map.blob_bytes(b), stream);
  }
}

// The gaps of elements [from, to) in the blobs zero_gaps(..., true) left: from the end of the
// bytes of elements [0, from) to the end of the record or block of element to - 1 (no byte of an
// element below `from` is written). With to == from: the rest of the last record or block.
template <class T, class L> void zero_gaps_of(layout_storage<T, L> const& s, memory_kind kind, std::size_t from,
                                              std::size_t to, void* stream = nullptr);

// True when leaf l's sub-columns differ only by a constant step of their base (`step`), as a
// run of column_run_copy takes them.
template <class T, class L>
bool evenly_spaced(layout_storage<T, L> const& s, std::size_t l, std::size_t extent, std::ptrdiff_t& step) {
  column_place const first = s.map.place(l, 0), second = s.map.place(l, 1);
  step = static_cast<std::ptrdiff_t>(second.offset) - static_cast<std::ptrdiff_t>(first.offset);
  for (std::size_t j = 1; j < extent; ++j) {
    column_place const p = s.map.place(l, j);
    if (static_cast<std::ptrdiff_t>(p.offset) - static_cast<std::ptrdiff_t>(first.offset) !=
            static_cast<std::ptrdiff_t>(j) * step ||
        p.stride != first.stride || p.block != first.block || p.block_stride != first.block_stride)
      return false;
  }
  return true;
}

// A storage with box_fixed leaves and no box would read and write every coordinate as 0: refused
// before anything moves.
template <class T, class L> void check_box_given(layout_storage<T, L> const& s) {
  if (!s.frame.given()) {
    throw_error(
        "a vector whose layout stores members as box_fixed has no box; give it one first "
        "(vector<T, L> v(box); v.set_box(box)), or copy from a vector of that layout that has one");
  }
}

// The columns of a copy between two storages: byte copies where both store a leaf in the same
// format, conversions where a stored_as mapping on one side stores it in another.
struct column_moves {
  std::vector<column_copy> copies;
  std::vector<column_run_copy> runs;  // std::array leaves of 32 or more 4-byte elements, spaced evenly
  std::vector<column_conversion> conversions;
  std::vector<std::size_t> conversion_leaf;  // the leaf of each conversion, for error messages
};
template <class T, class LD, class LS>
column_moves column_copies(layout_storage<T, LD> const& dst, layout_storage<T, LS> const& src) {
  using D = layout_storage<T, LD>;
  using S = layout_storage<T, LS>;
  column_moves out;
  out.copies.reserve(reflect::leaf_count_v<T>);
  // A destination blob that receives any conversion takes all its columns from the converting
  // copy (same formats copied as they are): the fused copies of record blobs read whole records
  // first, which would read the bytes that a conversion writes only afterwards.
  constexpr std::size_t leaves = reflect::leaf_count_v<T>;
  auto const blob_of = [](std::size_t l) { return D::mapping_type::blob_of(D::slot_leaf(l)); };
  std::array<bool, D::blob_count> converted_blob{};
  std::array<bool, leaves> converted_leaf{};
  check_box_given(dst);
  check_box_given(src);
  for (std::size_t l = 0; l < leaves; ++l) {
    converted_leaf[l] = !(dst.format_at(l) == src.format_at(l));
    if (converted_leaf[l]) converted_blob[blob_of(l)] = true;
  }
  // Bit-packed leaves share words: where one field of a word (on either side) is converted, or
  // its word lies in a converted blob, every field of that word is written field by field, never
  // copied as a whole word over the others. Repeated until nothing more is marked.
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t l = 0; l < leaves; ++l) {
      if (!(D::packed(l) || S::packed(l)) || !(converted_leaf[l] || converted_blob[blob_of(l)])) continue;
      for (std::size_t k = 0; k < leaves; ++k) {
        bool const shares = (D::packed(l) && D::packed(k) && D::slot_leaf(k) == D::slot_leaf(l)) ||
                            (S::packed(l) && S::packed(k) && S::slot_leaf(k) == S::slot_leaf(l));
        if (shares && !(converted_leaf[k] && converted_blob[blob_of(k)])) {
          converted_leaf[k] = converted_blob[blob_of(k)] = true;
          changed = true;
        }
      }
      if (!converted_leaf[l]) converted_leaf[l] = changed = true;
    }
  }
  for (std::size_t l = 0; l < leaves; ++l) {
    std::size_t const extent = reflect::leaf_table_v<T>[l].extent;
    bool const converted = converted_blob[blob_of(l)] || converted_leaf[l];
    if (!converted && extent >= 32 && D::leaf_bytes(l) == 4) {
      std::ptrdiff_t dst_step = 0, src_step = 0;
      if (evenly_spaced(dst, l, extent, dst_step) && evenly_spaced(src, l, extent, src_step)) {
        out.runs.push_back({dst.column(l, 0), src.column(l, 0), dst_step, src_step, extent});
        continue;
      }
    }
    for (std::size_t j = 0; j < extent; ++j) {
      if (!converted) {
        // A packed field that is not its word's carrier moves with the carrier's word.
        if (D::leaf_bytes(l) != 0) out.copies.push_back({dst.column(l, j), src.column(l, j), D::leaf_bytes(l)});
      } else {
        out.conversions.push_back(
            {dst.column(l, j), src.column(l, j), dst.format_at(l), src.format_at(l), D::leaf_bytes(l)});
        out.conversion_leaf.push_back(l);
      }
    }
  }
  return out;
}

[[noreturn]] void throw_conversion_error(std::size_t element, stored_format to, std::string const& leaf_name);

// Runs the moves in one kind of memory; a value that a destination format cannot hold is an error
// naming the element and the leaf.
template <class T> void run_moves(memory_kind kind, column_moves const& moves, std::size_t n, void* stream) {
  conversion_result const r =
      copy_and_convert_columns(kind, moves.copies.data(), moves.copies.size(), moves.runs.data(), moves.runs.size(),
                               moves.conversions.data(), moves.conversions.size(), n, stream);
  if (r.element < n) {
    std::size_t const leaf = moves.conversion_leaf[r.column];
    throw_conversion_error(r.element, moves.conversions[r.column].to, reflect::leaf_name<T>(leaf));
  }
}

// Bytes of blob b that hold elements [0, n) (up to the end of the last one).
template <class T, class L> std::size_t used_bytes(layout_storage<T, L> const& s, std::size_t blob, std::size_t n) {
  using M = typename layout_storage<T, L>::mapping_type;
  std::size_t end = 0;
  if (n == 0) return 0;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    if (M::blob_of(l) != blob) return;
    column_place const p = s.map.place(l, j);
    end = std::max(end, p.at(n - 1) + layout_storage<T, L>::leaf_bytes(l));
  });
  return std::min(end, s.map.blob_bytes(blob));
}

template <class T, class L>
void zero_gaps_of(layout_storage<T, L> const& s, memory_kind kind, std::size_t from, std::size_t to, void* stream) {
  if (to < from || to == 0) return;
  for (std::size_t b = 0; b < layout_storage<T, L>::blob_count; ++b) {
    if (s.blobs[b] == nullptr || !layout_storage<T, L>::blob_has_gaps(s.map, b) || !gaps_in_element_order(s, b)) {
      continue;
    }
    std::size_t const begin = used_bytes(s, b, from), end = element_units_end(s, b, to);
    if (end > begin) zero_bytes(kind, s.blobs[b] + begin, end - begin, stream);
  }
}

// True when both storages place every column alike (same layout, and the same capacity where
// the placement depends on it): then each blob's used bytes copy as one range.
template <class T, class L> bool same_placement(layout_storage<T, L> const& a, layout_storage<T, L> const& b) {
  // Equal mapping states place every column alike: no walk over the columns (a 16 KiB record has
  // 4097 of them, tens of microseconds of host time per copy).
  if constexpr (std::equality_comparable<typename layout_storage<T, L>::mapping_type>) {
    if (a.map == b.map) return true;
  }
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
    // (Box_fixed leaves: the bytes mean the same coordinates only in the same box.)
    if (same_placement(dst, src) && dst.frame == src.frame) return copy_blobs(dst, dk, src, sk, n, stream);
  }
  if (same_memory(dk, sk)) {
    run_moves<T>(dk == memory_kind::device || sk == memory_kind::device ? memory_kind::device : memory_kind::host,
                 column_copies(dst, src), n, stream);
  } else if (dk == memory_kind::device) {
    // host -> GPU with another placement: upload as it is, rearrange on the GPU.
    buffer staged(memory_kind::device, layout_storage<T, LS>::bytes(src.map), stream);
    auto staged_storage = layout_storage<T, LS>::over(staged.data(), src.map);
    set_frame(staged_storage, src.frame);
    copy_blobs(staged_storage, memory_kind::device, src, sk, n, stream);
    run_moves<T>(memory_kind::device, column_copies(dst, staged_storage), n, stream);
  } else {
    // GPU -> host with another placement: rearrange on the GPU, then download.
    buffer staged(memory_kind::device, layout_storage<T, LD>::bytes(dst.map), stream);
    auto staged_storage = layout_storage<T, LD>::over(staged.data(), dst.map);
    set_frame(staged_storage, dst.frame);
    zero_gaps(staged_storage, memory_kind::device, stream);
    run_moves<T>(memory_kind::device, column_copies(staged_storage, src), n, stream);
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
  check_box_given(dst);
  std::vector<column_fill> fills;
  fills.reserve(reflect::column_count_v<T>);
  auto const* bytes = reinterpret_cast<std::byte const*>(&value);
  // Leaves stored in another format: the value in that format, checked, before anything is written
  // (one per column: each element of a std::array leaf has its own value).
  struct alignas(8) encoded_column {
    std::byte bytes[8];
  };
  std::vector<encoded_column> encoded;
  if constexpr (layout_storage<T, L>::converts) {
    encoded.resize(reflect::column_count_v<T>);
    std::size_t column = 0;
    [&]<std::size_t... Leaf>(std::index_sequence<Leaf...>) {
      (
          [&] {
            using leaf = reflect::leaf_t<T, Leaf>;
            using E = typename leaf::type;
            for (std::size_t j = 0; j < leaf::extent; ++j, ++column) {
              if constexpr (!layout_storage<T, L>::natural(Leaf)) {
                E const leaf_value = *reinterpret_cast<E const*>(bytes + leaf::offset + j * sizeof(E));
                stored_format const f = dst.format_at(Leaf);
                if (encode(encoded[column].bytes, leaf_value, f) != encode_status::ok && !f.saturates)
                  throw_conversion_error(first, f, reflect::leaf_name<T>(Leaf));
              }
            }
          }(),
          ...);
    }
    (std::make_index_sequence<reflect::leaf_count_v<T>>{});
    // Bit-packed fields were each encoded into a zeroed word at their bits: the carrier's column
    // writes the word with all of them (the others write no bytes of their own).
    std::array<std::size_t, reflect::leaf_count_v<T>> first_column{};
    for (std::size_t l = 0, c = 0; l < reflect::leaf_count_v<T>; c += reflect::leaf_table_v<T>[l].extent, ++l)
      first_column[l] = c;
    for (std::size_t l = 0; l < reflect::leaf_count_v<T>; ++l) {
      std::size_t const carrier = layout_storage<T, L>::slot_leaf(l);
      if (!layout_storage<T, L>::packed(l) || carrier == l) continue;
      std::uint32_t word = load_bytes<std::uint32_t>(encoded[first_column[carrier]].bytes);
      word |= load_bytes<std::uint32_t>(encoded[first_column[l]].bytes);
      store_bytes(encoded[first_column[carrier]].bytes, word);
    }
  }
  std::size_t column = 0;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    auto const& info = reflect::leaf_table_v<T>[l];
    std::size_t const stored = layout_storage<T, L>::leaf_bytes(l);
    if (stored == 0) {  // a packed field that is not its word's carrier: written with the carrier
      ++column;
      return;
    }
    void const* source = layout_storage<T, L>::natural(l)
                             ? static_cast<void const*>(bytes + info.offset + j * info.size)
                             : static_cast<void const*>(encoded[column].bytes);
    fills.push_back({dst.column(l, j), stored, source});
    ++column;
  });
  fill_columns(dk, fills.data(), fills.size(), first, n, stream);
}

}  // namespace coalesce::detail
