// coalesce/core/layout.hpp - a layout is a mapping: where leaf f of element i lives.
//
//   // coalesce::aos: records one after another (what `Particle p[n]` is)
//   // coalesce::soa: one column per leaf, each starting on a 256-byte boundary
//   // coalesce::aosoa<6>: blocks of 6 records, inside a block one short column per leaf (any W)
//   // coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa> (split.hpp):
//   //   positions packed (padded to 16 bytes: one vector load each), every other leaf a column
//   // The storage of T under a layout (its mapping plus blob pointers): core/layout_storage.hpp
//
// A layout L is a tag with a nested policy `L::mapping<Shape>`, as std::mdspan's layouts have a
// `mapping` (and CuTe separates Layout from Engine): a pointer-free object that says, for leaf
// l (sub-column j, for std::array leaves) of element i, which blob holds it and at which byte
// offset. layout_storage holds the mapping and one pointer per blob; views, proxies, columns,
// copies, permutations, keys and the analysis ask it and never branch on a layout's name.
//
// The mapping concept (docs/layouts.md shows a user-defined mapping; coalesce::detail::check_mapping
// checks it with coalesce: messages):
//
//   template <class Shape> struct mapping {           // Shape: detail::shape (leaves to place)
//     static constexpr std::size_t blob_count;         // separate memory ranges, >= 1
//     static constexpr std::size_t blob_of(std::size_t leaf);        // which blob holds a leaf
//     explicit mapping(std::size_t capacity);          // state: whatever depends on the capacity
//     std::size_t capacity() const;
//     std::size_t blob_bytes(std::size_t blob) const;  // bytes blob b needs for capacity()
//     COALESCE_HOST_DEVICE constexpr column_place place(std::size_t leaf, std::size_t sub) const;
//     // (a leaf's stride and block must not depend on the capacity: they are read at compile
//     //  time from a default-constructed mapping to pick the column type)
//     // optional: static constexpr node_slot packed(std::size_t first_leaf, std::size_t leaves);
//   };
//
// column_place says where sub-column j of a leaf lies in its blob: an offset, a stride between
// elements, and optionally blocks (element i at offset + (i / B) * block_stride + (i % B) * stride).
// Every placement of an element's leaf is such a blocked-affine column, which is what lets the
// precompiled copy and permutation kernels move any mapping. `packed` says whether the leaves
// [first, first + leaves) sit together exactly as in the shape's record (a nested struct stored
// whole), and how aligned and how large that slot is: the proxies then load such a struct with
// one vector load.
#pragma once
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "config.hpp"
#include "reflect.hpp"
#include "stored_types.hpp"

namespace coalesce {

// Every column (every blob) starts on this boundary (what cudaMalloc returns), so a warp's
// first access to a column never straddles an extra 32-byte sector.
inline constexpr std::size_t column_alignment = 256;

// One 1-D column as the copy kernels see it: element i of the column is at
//   base + (i / block) * block_stride + (i % block) * stride
// Unblocked columns use block_shift 63 (only the stride term remains); blocks of a power of two
// use block_shift = log2(block) (a shift and a mask); other block sizes block_shift 64 and
// `block` (a division).
struct column_ref {
  std::byte* base = nullptr;     // element 0's address (its blob plus the column's offset); null over no memory
  std::size_t stride = 0;        // bytes from one element to the next (inside a block)
  std::size_t block_stride = 0;  // bytes from one block to the next (blocked columns)
  unsigned block_shift = 63;     // 63: unblocked; below 63: log2(block); 64: divide by `block`
  std::size_t block = 0;         // elements per block (blocked columns; 0: unblocked)

  // Element i's address (host or device code).
  COALESCE_HOST_DEVICE std::byte* address(std::size_t i) const {
    if (block_shift == 63) return base + i * stride;
    if (block_shift < 63) {
      std::size_t const mask = (std::size_t{1} << block_shift) - 1;
      return base + (i >> block_shift) * block_stride + (i & mask) * stride;
    }
    return base + (i / block) * block_stride + (i % block) * stride;
  }
  // True when the elements are back to back (`width` bytes apart, no blocks): one plain range of bytes.
  COALESCE_HOST_DEVICE bool contiguous(std::size_t width) const { return block_shift == 63 && stride == width; }
  // Elements per block (0: unblocked).
  COALESCE_HOST_DEVICE std::size_t block_elements() const {
    return block_shift == 63 ? 0 : block_shift < 63 ? std::size_t{1} << block_shift : block;
  }
};

// Where sub-column j of a leaf lies inside its blob (column_ref without the pointer).
struct column_place {
  std::size_t offset = 0;        // bytes from the blob's start to element 0
  std::size_t stride = 0;        // bytes from one element to the next (inside a block)
  std::size_t block = 0;         // elements per block; 0: unblocked
  std::size_t block_stride = 0;  // bytes from one block to the next (blocked only)

  // Element i's byte offset in the blob (host or device code, constant-folded for a constant i).
  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr std::size_t at(std::size_t i) const {
    return block == 0 ? offset + i * stride : offset + (i / block) * block_stride + (i % block) * stride;
  }
  // Field by field (how a view tells a mapping that stores plain records, at compile time).
  friend constexpr bool operator==(column_place const&, column_place const&) = default;
};

// What a mapping promises about a run of leaves stored together as in the record: the slot's
// alignment (0: not stored together) and its bytes (>= the struct's size; the rest is padding).
struct node_slot {
  std::size_t alignment = 0;  // the slot's alignment; 0: the leaves are not stored together
  std::size_t bytes = 0;      // the slot's size (>= the struct's; the rest is padding)
};

namespace detail {
// A mask where `to` is a power of two (every alignment): a 64-bit division costs tens of cycles,
// and host loops over thousands of columns (a std::array member's) place each one through this.
COALESCE_HOST_DEVICE constexpr std::size_t round_up(std::size_t x, std::size_t to) {
  return (to & (to - 1)) == 0 ? (x + to - 1) & ~(to - 1) : (x + to - 1) / to * to;
}

// Element l of a static constexpr array, usable in device code (nvcc does not let kernels name a
// host-side static array; a constant copy folds away once l is a constant).
// On the host the array itself is read: a local constant copy indexed at run time was built on the
// stack at every call (a proxy's leaf found at run time, v[i][&P::pos][d], read 20-35x slower
// through a stored_as layout than through its plain twin).
template <auto const& Array> COALESCE_HOST_DEVICE COALESCE_INLINE constexpr auto element_of(std::size_t l) {
#if COALESCE_IN_DEVICE_CODE
  constexpr auto copy = Array;
  return copy[l];
#else
  return Array[l];
#endif
}

// A set of leaves to place: the root type's leaves (root_shape) or a subset of them (a split's
// group, shape_of_leaves). `offset` is the leaf's byte offset inside this shape's packed record,
// record_bytes and record_align that record's size and alignment; leaf(l) reads leaves[l] in
// host or device code (mappings use it in place()).
struct shape_leaf {
  std::size_t root_leaf;
  std::size_t size;
  std::size_t align;
  std::size_t extent;
  std::size_t offset;
};

// For each of T's leaves: the direct member it belongs to (byte offset, size, alignment), so
// that a split's group keeps each member's inner layout as it is in T.
struct member_slot {
  std::size_t offset, size, align;
};
template <class T> struct leaf_members {
  static constexpr std::array<member_slot, reflect::leaf_count_v<T>> of_leaf = [] {
    std::array<member_slot, reflect::leaf_count_v<T>> out{};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using M = typename reflect::members<T>::template type<K>;
            constexpr std::size_t first = reflect::first_leaf_of_member<T, K>();
            for (std::size_t l = first; l < first + reflect::leaves_in<M>(); ++l) {
              out[l] = {reflect::members<T>::offsets[K], sizeof(M), alignof(M)};
            }
          }(),
          ...);
    }
    (std::make_index_sequence<reflect::members<T>::count>{});
    return out;
  }();
};

// T's leaves as T stores them. Every root shape (this one, or core/stored_as.hpp's, whose
// leaves have the sizes of their stored formats) also says, per leaf, its stored format and
// its direct member's slot in the shape's record (`member_of_leaf`), and names itself `origin`
// (a split's sub-shapes name the root shape they came from).
template <class T> struct root_shape {
  using root = T;
  using origin = root_shape;
  static constexpr bool converts = false;  // every leaf stored as its own type
  static constexpr std::size_t count = reflect::leaf_count_v<T>;
  static constexpr auto const& member_of_leaf = leaf_members<T>::of_leaf;
  static constexpr std::array<stored_format, count> formats = [] {
    std::array<stored_format, count> out{};
    [&]<std::size_t... L>(std::index_sequence<L...>) {
      ((out[L] = natural_format<typename reflect::leaf_t<T, L>::type>()), ...);
    }
    (std::make_index_sequence<count>{});
    return out;
  }();
  static constexpr std::array<shape_leaf, count> leaves = [] {
    std::array<shape_leaf, count> out{};
    for (std::size_t l = 0; l < count; ++l) {
      auto const& info = reflect::leaf_table_v<T>[l];
      out[l] = {l, info.size, info.align, info.extent, info.offset};
    }
    return out;
  }();
  static constexpr std::size_t record_bytes = sizeof(T);
  static constexpr std::size_t record_align = alignof(T);
  COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr shape_leaf leaf(std::size_t l) { return element_of<leaves>(l); }
};

// The root shape a layout places T's leaves from: T as it is, or, for a layout that stores some
// members in other formats (core/stored_as.hpp), T with those leaves' stored sizes.
template <class T, class L> struct shape_for { using type = root_shape<T>; };
template <class T, class L>
requires requires { typename L::template root_shape<T>; }
struct shape_for<T, L> {
  using type = typename L::template root_shape<T>;
};
template <class T, class L> using shape_for_t = typename shape_for<T, L>::type;

// A layout's name() where it has one (every coalesce layout does), else "custom".
template <class L> std::string layout_name_of() {
  if constexpr (requires { L::name(); }) {
    return L::name();
  } else {
    return "custom";
  }
}

// Largest power of two dividing x (capped): the alignment an offset keeps.
constexpr std::size_t alignment_of_offset(std::size_t x, std::size_t cap = column_alignment) {
  return x == 0 ? cap : std::min<std::size_t>(cap, x & (~x + 1));
}
}  // namespace detail

// --------------------------------------------------------------------------------------- aos
// Records one after another; the record is the shape's (sizeof(T) for a whole struct).
struct aos {
  // "aos": the layout's name in the analysis and advisor tables (a spelling that compiles).
  static std::string name() { return "aos"; }
  // aos's placement of a shape's leaves (the mapping concept above): one blob of records.
  template <class Shape> struct mapping {
    static constexpr std::size_t blob_count = 1;  // the records
    // Every leaf lies in blob 0.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t blob_of(std::size_t) { return 0; }
    static constexpr std::size_t stride = Shape::record_bytes;  // bytes per record (sizeof(T) for a whole struct)

    constexpr mapping() = default;
    // Room for `capacity` records.
    COALESCE_HOST_DEVICE constexpr explicit mapping(std::size_t capacity) : capacity_(capacity) {}
    COALESCE_HOST_DEVICE std::size_t capacity() const { return capacity_; }   // elements the blob is sized for
    std::size_t blob_bytes(std::size_t) const { return capacity_ * stride; }  // capacity() records
    // The most records whose bytes fit in a std::ptrdiff_t (what vector::max_size() reports).
    static constexpr std::size_t max_capacity() { return static_cast<std::size_t>(PTRDIFF_MAX) / stride; }
    // Sub-column `sub` of a leaf: at the leaf's offset in the record, records `stride` bytes apart.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr column_place place(std::size_t leaf, std::size_t sub) {
      detail::shape_leaf const l = Shape::leaf(leaf);
      return {l.offset + sub * l.size, stride, 0, 0};
    }
    // Any run of leaves is stored as in the record; its slot reaches to the record's end.
    static constexpr node_slot packed(std::size_t first, std::size_t) {
      std::size_t const at = Shape::leaves[first].offset;
      return {std::min(detail::alignment_of_offset(stride), detail::alignment_of_offset(at)), stride - at};
    }

   private:
    std::size_t capacity_ = 0;
  };
};

// --------------------------------------------------------------------------------------- soa
// One blob per leaf; a std::array<U, N> leaf's N sub-columns follow one another in its blob,
// each padded to `sub_column_alignment` bytes (256 in coalesce's own allocations; 1 over a
// user's columns, which are n elements back to back).
struct soa {
  // "soa": the layout's name in the analysis and advisor tables (a spelling that compiles).
  static std::string name() { return "soa"; }
  // soa's placement of a shape's leaves (the mapping concept above): one blob per leaf.
  template <class Shape> struct mapping {
    static constexpr std::size_t blob_count = Shape::count;  // one per leaf
    // Leaf l lies in blob l.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t blob_of(std::size_t leaf) { return leaf; }

    constexpr mapping() = default;
    // Columns of `capacity` elements; a std::array leaf's sub-columns each padded to
    // `sub_column_alignment` bytes (1: back to back, as a view over a user's columns has them).
    COALESCE_HOST_DEVICE constexpr explicit mapping(std::size_t capacity,
                                                    std::size_t sub_column_alignment = column_alignment)
        : capacity_(capacity), sub_alignment_(sub_column_alignment) {}
    COALESCE_HOST_DEVICE std::size_t capacity() const { return capacity_; }  // elements each column is sized for
    // The leaf's extent sub-columns, each padded to the sub-column alignment.
    std::size_t blob_bytes(std::size_t leaf) const { return Shape::leaves[leaf].extent * pitch(leaf); }
    // The most elements whose columns (with every column's alignment padding) fit in a
    // std::ptrdiff_t (what vector::max_size() reports).
    static constexpr std::size_t max_capacity() {
      std::size_t per_element = 0;
      for (auto const& leaf : Shape::leaves) per_element += leaf.extent * leaf.size;
      std::size_t const padding = (Shape::count + 1) * column_alignment;
      auto const limit = static_cast<std::size_t>(PTRDIFF_MAX);
      return per_element == 0 || padding >= limit ? 0 : (limit - padding) / per_element;
    }
    // Sub-column `sub` of a leaf: `sub` padded sub-columns into the leaf's blob, elements back to back.
    COALESCE_HOST_DEVICE COALESCE_INLINE constexpr column_place place(std::size_t leaf, std::size_t sub) const {
      detail::shape_leaf const l = Shape::leaf(leaf);
      return {l.extent == 1 ? 0 : sub * pitch(leaf), l.size, 0, 0};
    }
    static constexpr node_slot packed(std::size_t first, std::size_t leaves) {  // a lone leaf only
      std::size_t const size = Shape::leaves[first].size;
      return leaves == 1 ? node_slot{detail::alignment_of_offset(size), size} : node_slot{};
    }
    // Equal capacity and sub-column alignment: the same placement.
    friend bool operator==(mapping const&, mapping const&) = default;

   private:
    COALESCE_HOST_DEVICE COALESCE_INLINE constexpr std::size_t pitch(std::size_t leaf) const {
      return detail::round_up(capacity_ * Shape::leaf(leaf).size, sub_alignment_);
    }
    std::size_t capacity_ = 0;
    std::size_t sub_alignment_ = column_alignment;
  };
};

// ---------------------------------------------------------------------------------- aosoa<W>
// Blocks of W records; inside a block, leaf l's W * extent elements are a short column
// (aligned for its type), and a block is padded to the record's alignment. Any W >= 1.
template <std::size_t W> struct aosoa {
  static_assert(W > 0, "coalesce: aosoa<W> needs W >= 1 records per block (8, 16, 32 ... or any other count)");
  static constexpr std::size_t width = W;  // records per block
  // "aosoa<W>" with W written out: the layout's name in the analysis and advisor tables.
  static std::string name() { return "aosoa<" + std::to_string(W) + ">"; }

  // aosoa<W>'s placement of a shape's leaves (the mapping concept above): one blob of blocks.
  template <class Shape> struct mapping {
    static constexpr std::size_t blob_count = 1;  // the blocks
    // Every leaf lies in blob 0.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t blob_of(std::size_t) { return 0; }
    // Where leaf l's short column starts inside a block (its W * extent elements; aligned for its type).
    static constexpr std::array<std::size_t, Shape::count> block_offsets = [] {
      std::array<std::size_t, Shape::count> out{};
      std::size_t end = 0;
      for (std::size_t l = 0; l < Shape::count; ++l) {
        end = detail::round_up(end, Shape::leaves[l].align);
        out[l] = end;
        end += W * Shape::leaves[l].extent * Shape::leaves[l].size;
      }
      return out;
    }();
    // Bytes per block: every leaf's short column, padded to the record's alignment.
    static constexpr std::size_t block_bytes = [] {
      std::size_t end = 0;
      for (std::size_t l = 0; l < Shape::count; ++l) {
        end = detail::round_up(end, Shape::leaves[l].align) + W * Shape::leaves[l].extent * Shape::leaves[l].size;
      }
      return detail::round_up(end == 0 ? 1 : end, Shape::record_align);
    }();

    constexpr mapping() = default;
    // Room for `capacity` elements (a partly filled last block included).
    COALESCE_HOST_DEVICE constexpr explicit mapping(std::size_t capacity) : capacity_(capacity) {}
    COALESCE_HOST_DEVICE std::size_t capacity() const { return capacity_; }  // elements the blob is sized for
    // Whole blocks: capacity() rounded up to a multiple of W.
    std::size_t blob_bytes(std::size_t) const { return (capacity_ + W - 1) / W * block_bytes; }
    // The most elements whose blocks fit in a std::ptrdiff_t (what vector::max_size() reports).
    static constexpr std::size_t max_capacity() {
      return (static_cast<std::size_t>(PTRDIFF_MAX) / block_bytes - 1) * W;
    }
    // Sub-column `sub` of a leaf: W elements at block_offsets[leaf] + sub * W * size in each block,
    // blocks `block_bytes` apart.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr column_place place(std::size_t leaf, std::size_t sub) {
      std::size_t const size = Shape::leaf(leaf).size;
      return {detail::element_of<block_offsets>(leaf) + sub * W * size, size, W, block_bytes};
    }
    static constexpr node_slot packed(std::size_t first, std::size_t leaves) {  // a lone leaf only
      std::size_t const size = Shape::leaves[first].size;
      return leaves == 1 ? node_slot{std::min(Shape::leaves[first].align, detail::alignment_of_offset(size)), size}
                         : node_slot{};
    }

   private:
    std::size_t capacity_ = 0;
  };
};

}  // namespace coalesce
