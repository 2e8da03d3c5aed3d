// coalesce/core/layout_storage.hpp - a layout's mapping for T plus one pointer per blob: the
// trivially copyable thing a view carries into kernels, and what a user mapping is tested through.
//
//   using storage = coalesce::layout_storage<Particle, coalesce::soa>;
//   std::size_t bytes = storage::bytes(n);                    // one allocation for capacity n
//   storage s = storage::over(base, n);                       // blob pointers carved from it
//   float* mass_of_7 = s.leaf_address<6, float>(7, 0);       // compile-time leaf, run-time i
//   coalesce::column_ref c = s.column(6, 0);                  // run-time description, for copies
//
// Everything here is generic: the address arithmetic comes from the mapping (core/layout.hpp),
// and folds to compile-time constants wherever the leaf is known at compile time.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "box.hpp"
#include "config.hpp"
#include "layout.hpp"
#include "reflect.hpp"

namespace coalesce {

namespace detail {

// A layout's mapping for a shape, with coalesce: messages for what a user-written one lacks.
template <class L, class Shape> constexpr bool check_mapping() {
  static_assert(
      requires { typename L::template mapping<Shape>; },
      "coalesce: a layout must be coalesce::aos, soa, aosoa<W>, split<...> or a type with a nested "
      "`template <class Shape> struct mapping` (see docs/layouts.md)");
  using M = typename L::template mapping<Shape>;
  static_assert(
      requires {
        { M::blob_count } -> std::convertible_to<std::size_t>;
      } && M::blob_count >= 1,
      "coalesce: a layout's mapping needs `static constexpr std::size_t blob_count` (>= 1)");
  static_assert(
      requires {
        { M::blob_of(std::size_t{}) } -> std::convertible_to<std::size_t>;
      },
      "coalesce: a layout's mapping needs `static constexpr std::size_t blob_of(std::size_t leaf)`");
  static_assert(std::is_constructible_v<M, std::size_t>,
                "coalesce: a layout's mapping needs a constructor from the capacity: `explicit mapping(std::size_t)`");
  static_assert(
      requires(M const m) {
        { m.blob_bytes(std::size_t{}) } -> std::convertible_to<std::size_t>;
      },
      "coalesce: a layout's mapping needs `std::size_t blob_bytes(std::size_t blob) const`");
  static_assert(
      requires(M const m) {
        { m.place(std::size_t{}, std::size_t{}) } -> std::same_as<column_place>;
      },
      "coalesce: a layout's mapping needs `COALESCE_HOST_DEVICE column_place place(std::size_t leaf, "
      "std::size_t sub) const`");
  return true;
}

template <class Shape> constexpr bool boxed_shape() {
  if constexpr (requires { Shape::boxed; }) {
    return Shape::boxed;
  } else {
    return false;
  }
}
// Format f with its box filled in from `frame` (a box_fraction format), else f.
template <class Frame>
COALESCE_HOST_DEVICE COALESCE_INLINE constexpr stored_format in_frame(stored_format f, Frame const& frame) {
  if constexpr (std::is_same_v<Frame, box_frame>) {
    if (f.kind == number_kind::box_fraction) {
      f.origin = frame.origin[f.axis];
      f.step = frame.length[f.axis] * 0x1p-32;
    }
  }
  return f;
}

template <class M> constexpr std::size_t max_capacity_of() {
  if constexpr (requires { M::max_capacity(); }) {
    return M::max_capacity();
  } else {
    return static_cast<std::size_t>(PTRDIFF_MAX) / 1024;  // a user mapping that does not say: stay far from overflow
  }
}
}  // namespace detail

// The frame (the box of box_fixed leaves) is the base class: no bytes for other layouts.
template <class T, class Layout> struct layout_storage
    : detail::frame_base<detail::boxed_shape<detail::shape_for_t<T, Layout>>()> {
  using shape = detail::shape_for_t<T, Layout>;  // T's leaves as Layout stores them (stored sizes under stored_as)
  static_assert(detail::check_mapping<Layout, shape>());
  using mapping_type = typename Layout::template mapping<shape>;       // Layout's placement of those leaves
  static constexpr std::size_t leaves = shape::count;                  // T's leaves
  static constexpr std::size_t blob_count = mapping_type::blob_count;  // memory ranges, one pointer each

  // True when some leaf is stored in another format than its type (core/stored_as.hpp).
  static constexpr bool converts = shape::converts;
  // Leaf l's stored format (a box_fixed leaf's without its box: format_at(l) has that).
  COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr stored_format format(std::size_t l) {
    return detail::element_of<shape::formats>(l);
  }
  // Leaf l's stored bytes per element (what copies move).
  static constexpr std::size_t leaf_bytes(std::size_t l) { return shape::leaves[l].size; }
  // True when some leaf is stored relative to a box (box_fixed): its format depends on the
  // storage's frame, so movers and proxies ask format_at(l) of the storage, not format(l).
  static constexpr bool boxed = detail::boxed_shape<shape>();
  // The frame a boxed storage holds (box_frame), else no_box_frame (no bytes).
  using frame_type = std::conditional_t<boxed, detail::box_frame, detail::no_box_frame>;
  // The leaf whose slot holds leaf l's bytes: l itself, but a bit-packed leaf (bits<N>) lies in the
  // 32-bit word of its carrier, the first leaf of that word (core/stored_as.hpp). Every address of
  // a leaf goes through it; copies move leaf_bytes (the carrier the word, the others nothing).
  static constexpr std::size_t slot_leaf(std::size_t l) {
    if constexpr (requires { shape::carriers; }) {
      return shape::carriers[l];
    } else {
      return l;
    }
  }
  // True when leaf l shares a 32-bit word with other bit-packed leaves.
  static constexpr bool packed(std::size_t l) { return detail::is_packed(format(l)); }
  // True when leaf l is stored as its own type (the proxy hands out a plain reference).
  static constexpr bool natural(std::size_t l) {
    return !converts || detail::root_shape<T>::formats[l] == shape::formats[l];
  }

  mapping_type map{};                          // the placement, for this storage's capacity
  std::array<std::byte*, blob_count> blobs{};  // each blob's first byte (host or device memory; null: none)

  // Leaf l's format with this storage's box (format(l) for every leaf but a box_fixed one).
  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr stored_format format_at(std::size_t l) const {
    if constexpr (boxed) {
      return detail::in_frame(format(l), this->frame);
    } else {
      return format(l);
    }
  }

  // The most elements whose byte count cannot overflow.
  static constexpr std::size_t max_capacity() { return detail::max_capacity_of<mapping_type>(); }

  // Bytes of one allocation that holds every blob for `capacity` elements, each blob starting
  // on a column_alignment boundary.
  static std::size_t bytes(std::size_t capacity) { return bytes(mapping_type(capacity)); }
  // The same for a mapping made by the caller (a soa mapping with its own sub-column alignment).
  static std::size_t bytes(mapping_type const& m) {
    std::size_t total = 0;
    for (std::size_t b = 0; b < blob_count; ++b) total += detail::round_up(m.blob_bytes(b), column_alignment);
    return total;
  }
  // The blobs carved from one allocation of bytes(capacity) bytes (all null when base is null).
  static layout_storage over(std::byte* base, std::size_t capacity) { return over(base, mapping_type(capacity)); }
  // The same for a mapping made by the caller; `base` must hold bytes(m) bytes.
  static layout_storage over(std::byte* base, mapping_type const& m) {
    layout_storage s;
    s.map = m;
    std::size_t offset = 0;
    for (std::size_t b = 0; b < blob_count; ++b) {
      s.blobs[b] = base == nullptr ? nullptr : base + offset;
      offset += detail::round_up(m.blob_bytes(b), column_alignment);
    }
    return s;
  }
  // Blob 0's address: the start of the allocation that over() carved every blob from.
  COALESCE_HOST_DEVICE std::byte* base() const { return blobs[0]; }

  // Where sub-column j of leaf `Leaf` lies for element i, as a U*: host or device code, and with
  // the leaf a constant, the placement folds to constants.
  template <std::size_t Leaf, class U>
  COALESCE_HOST_DEVICE COALESCE_INLINE U* leaf_address(std::size_t i, std::size_t j) const {
    constexpr std::size_t slot = slot_leaf(Leaf);
    constexpr std::size_t blob = mapping_type::blob_of(slot);
    return reinterpret_cast<U*>(blobs[blob] + map.place(slot, j).at(i));
  }
  // Leaf chosen at run time (host code; kernels use the compile-time form). Forced inline like
  // every step from v[i][&T::m] to the load: the leaf is a constant only once inlined, and g++
  // stops inlining plain functions when a translation unit grows (inline-unit-growth), which
  // turned every member access of a large user file into a call.
  template <class U> COALESCE_INLINE U* leaf_address_at(std::size_t leaf, std::size_t i, std::size_t j) const {
    std::size_t const slot = slot_leaf(leaf);
    return reinterpret_cast<U*>(blobs[mapping_type::blob_of(slot)] + map.place(slot, j).at(i));
  }

  // W when every sub-column of every leaf lies in blocks of W elements (aosoa<W>, a split of
  // aosoa groups of one width, stored_as over those) and the leaves of one blob share their block
  // stride; else 0. Element first + lane of such a storage, first a multiple of W, is element
  // lane of advanced_by_blocks(first / W): a loop over the lanes of a block then has unit strides
  // (core/element_index.hpp). Read from the default-constructed mapping, as column types are.
  static constexpr std::size_t blocked_width = [] {
    if constexpr (!std::is_default_constructible_v<mapping_type>) {
      return std::size_t{0};
    } else {
      constexpr mapping_type m{};
      std::size_t width = 0;
      bool uniform = true;
      std::array<std::size_t, blob_count> stride_of_blob{};
      for (std::size_t l = 0; l < leaves; ++l) {
        for (std::size_t j = 0; j < shape::leaves[l].extent; ++j) {
          column_place const p = m.place(l, j);
          std::size_t& stride = stride_of_blob[mapping_type::blob_of(l)];
          if (p.block < 2 || (width != 0 && p.block != width) || (stride != 0 && p.block_stride != stride)) {
            uniform = false;
          }
          width = p.block;
          stride = p.block_stride;
        }
      }
      return uniform ? width : std::size_t{0};
    }
  }();

  // The same elements from block `blocks` on: each blob pointer moved by that many blocks.
  COALESCE_HOST_DEVICE COALESCE_INLINE layout_storage advanced_by_blocks(std::size_t blocks) const
      requires(blocked_width != 0) {
    layout_storage out = *this;
    [&]<std::size_t... L>(std::index_sequence<L...>) COALESCE_INLINE_LAMBDA {
      // Each blob once, by the first leaf that lives in it (a blob with no leaf has nothing to move).
      (
          [&]() COALESCE_INLINE_LAMBDA {
            if constexpr (first_leaf_of_blob(mapping_type::blob_of(L)) == L) {
              out.blobs[mapping_type::blob_of(L)] += blocks * map.place(L, 0).block_stride;
            }
          }(),
          ...);
    }
    (std::make_index_sequence<leaves>{});
    return out;
  }

  // Sub-column `sub` of a leaf as the copy kernels see it.
  column_ref column(std::size_t leaf, std::size_t sub) const {
    leaf = slot_leaf(leaf);
    column_place const p = map.place(leaf, sub);
    std::byte* const blob = blobs[mapping_type::blob_of(leaf)];
    column_ref c{blob == nullptr ? nullptr : blob + p.offset, p.stride, p.block_stride, 63, 0};
    if (p.block != 0) {
      bool const power_of_two = (p.block & (p.block - 1)) == 0;
      c.block_shift = power_of_two ? static_cast<unsigned>(std::countr_zero(p.block)) : 64u;
      c.block = p.block;
    }
    return c;
  }

  // True when a copy of blob b's used bytes can read bytes that no element wrote: padding of T
  // in aos, a split group's padding to 16 bytes, alignment gaps in aosoa blocks, any blocked
  // blob (the slots past size() in a partly filled last block lie between used bytes) and any
  // blob of several whole columns (the sub-columns of a std::array leaf in soa). Copies
  // move whole ranges, so a new allocation zeroes such blobs once: no copy ever reads bytes that
  // nothing wrote (what compute-sanitizer's initcheck reports).
  static bool blob_has_gaps(mapping_type const& m, std::size_t b) {
    std::size_t covered = 0, span = 0, block = 0;
    bool single_column = true;
    std::size_t columns = 0;
    for (std::size_t l = 0; l < leaves; ++l) {
      if (mapping_type::blob_of(l) != b) continue;
      // A packed word: each field's write reads the word, so it must never hold unwritten bytes.
      if (packed(l) && slot_leaf(l) == l) return true;
      auto const& info = shape::leaves[l];
      column_place const p = m.place(l, 0);
      covered += info.size * info.extent;
      columns += info.extent;
      single_column = single_column && info.extent == 1 && p.stride == info.size && p.block == 0;
      span = p.block == 0 ? p.stride : p.block_stride;
      block = p.block;
    }
    if (columns == 0 || (columns == 1 && single_column)) return false;  // a plain column: no gaps
    // Several columns one after another (the sub-columns of a std::array leaf in soa): the slots
    // past size() of each lie between used bytes too, as do the padding bytes of records.
    return block != 0 || span != covered;
  }

  // The first leaf that lives in blob `blob`, or `leaves` where none does.
  static constexpr std::size_t first_leaf_of_blob(std::size_t blob) {
    for (std::size_t l = 0; l < leaves; ++l) {
      if (mapping_type::blob_of(l) == blob) return l;
    }
    return leaves;
  }

  // Leaves [First, First + Count) stored together as in T (a nested struct kept whole): the
  // slot's alignment and bytes, or alignment 0 (a mapping without `packed` never stores them so).
  template <std::size_t First, std::size_t Count> static constexpr node_slot node() {
    if constexpr (requires { mapping_type::packed(First, Count); }) {
      return mapping_type::packed(First, Count);
    } else {
      return {};
    }
  }
};

}  // namespace coalesce
