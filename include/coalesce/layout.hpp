// coalesce/layout.hpp - where leaf f of element i lives, for each layout.
//
//   // coalesce::aos: records one after another (what `Particle p[n]` is)
//   // coalesce::soa: one column per leaf, each starting on a 256-byte boundary
//   // coalesce::aosoa<32>: blocks of 32 records, inside a block one short column per leaf
//
//   using map = coalesce::layout_storage<Particle, coalesce::soa>;
//   std::size_t bytes = map::bytes(n);                       // allocation size for capacity n
//   map s = map::over(base, n);                               // pointers into one allocation
//   float* mass_of_7 = s.leaf_address<6, float>(7, 0);       // compile-time leaf, run-time i
//   coalesce::column_ref c = s.column(6, 0);                  // run-time description, for copies
//
// A layout is a tag; layout_storage<T, Layout> is the trivially copyable set of pointers that
// a view carries into kernels, with the address arithmetic as compile-time constants wherever
// reflection makes them so. The same arithmetic, as run-time column_ref values, drives the
// type-erased copy kernels in src/.
#pragma once
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "config.hpp"
#include "reflect.hpp"

namespace coalesce {

struct aos {};
struct soa {};
template <std::size_t W> struct aosoa {
  static_assert(W > 0 && (W & (W - 1)) == 0,
                "coalesce: aosoa<W> needs W to be a power of two (8, 16, 32, 64 ...)");
  static constexpr std::size_t width = W;
};

// Every SoA column starts on this boundary (what cudaMalloc returns), so a warp's first
// access to a column never straddles an extra 32-byte sector.
inline constexpr std::size_t column_alignment = 256;

template <class L> struct is_layout : std::false_type {};
template <> struct is_layout<aos> : std::true_type {};
template <> struct is_layout<soa> : std::true_type {};
template <std::size_t W> struct is_layout<aosoa<W>> : std::true_type {};
template <class L> concept layout = is_layout<L>::value;

// One 1-D column as the copy kernels see it: element i of the column is at
//   base + (i >> block_shift) * block_stride + (i & block_mask) * stride
// Unblocked columns (aos, soa) use block_shift 63, so that only the stride term remains.
struct column_ref {
  std::byte* base = nullptr;
  std::size_t stride = 0;
  std::size_t block_stride = 0;
  unsigned block_shift = 63;

  COALESCE_HOST_DEVICE std::byte* address(std::size_t i) const {
    std::size_t const mask = (std::size_t{1} << block_shift) - 1;
    return base + (i >> block_shift) * block_stride + (i & mask) * stride;
  }
  COALESCE_HOST_DEVICE bool contiguous(std::size_t width) const { return block_shift == 63 && stride == width; }
};

namespace detail {
constexpr std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

}  // namespace detail

template <class T, class Layout> struct layout_storage;

// ---------------------------------------------------------------------------------------- aos
template <class T> struct layout_storage<T, aos> {
  std::byte* data = nullptr;

  // The largest capacity whose byte count fits in a ptrdiff_t.
  static constexpr std::size_t max_capacity() { return static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T); }

  static constexpr std::size_t bytes(std::size_t capacity) { return capacity * sizeof(T); }
  static layout_storage over(std::byte* base, std::size_t /*capacity*/) { return {base}; }
  COALESCE_HOST_DEVICE std::byte* base() const { return data; }

  template <std::size_t Leaf, class U>
  COALESCE_HOST_DEVICE COALESCE_INLINE U* leaf_address(std::size_t i, std::size_t j) const {
    return reinterpret_cast<U*>(data + i * sizeof(T) + reflect::leaf_t<T, Leaf>::offset) + j;
  }
  // Leaf `leaf` chosen at run time (host code; kernels use the compile-time form).
  template <class U> U* leaf_address_at(std::size_t leaf, std::size_t i, std::size_t j) const {
    return reinterpret_cast<U*>(data + i * sizeof(T) + reflect::leaf_table_v<T>[leaf].offset) + j;
  }
  // The whole record, for loads and stores of a record or of a nested struct.
  COALESCE_HOST_DEVICE COALESCE_INLINE std::byte* record_address(std::size_t i) const { return data + i * sizeof(T); }

  column_ref column(std::size_t leaf, std::size_t sub) const {
    auto const& info = reflect::leaf_table_v<T>[leaf];
    if (data == nullptr) return {nullptr, sizeof(T), 0, 63};  // empty: no offset on a null pointer
    return {data + info.offset + sub * info.size, sizeof(T), 0, 63};
  }
};

// ---------------------------------------------------------------------------------------- soa
template <class T> struct layout_storage<T, soa> {
  static constexpr std::size_t leaves = reflect::leaf_count_v<T>;

  // Only std::array leaves need a pitch (bytes between their sub-columns); slot l of `pitch`
  // belongs to the l-th such leaf, which keeps the view small for kernel parameters.
  static constexpr std::size_t array_leaves = [] {
    std::size_t count = 0;
    for (std::size_t l = 0; l < leaves; ++l) count += reflect::leaf_table_v<T>[l].extent > 1;
    return count;
  }();
  static constexpr std::array<std::size_t, leaves> pitch_slot = [] {
    std::array<std::size_t, leaves> out{};
    std::size_t next = 0;
    for (std::size_t l = 0; l < leaves; ++l) out[l] = reflect::leaf_table_v<T>[l].extent > 1 ? next++ : 0;
    return out;
  }();

  std::array<std::byte*, leaves> columns{};
  std::array<std::size_t, array_leaves> pitch{};

  // The largest capacity whose byte count (with each column's padding) fits in a ptrdiff_t.
  static constexpr std::size_t max_capacity() {
    std::size_t per_element = 0, columns = 0;
    for (std::size_t l = 0; l < leaves; ++l) {
      per_element += reflect::leaf_table_v<T>[l].extent * reflect::leaf_table_v<T>[l].size;
      columns += reflect::leaf_table_v<T>[l].extent;
    }
    std::size_t const padding = columns * column_alignment;
    auto const limit = static_cast<std::size_t>(PTRDIFF_MAX);
    return per_element == 0 || padding >= limit ? 0 : (limit - padding) / per_element;
  }

  // Bytes of one sub-column of a leaf for `capacity` elements, padded to column_alignment.
  static constexpr std::size_t column_bytes(std::size_t leaf, std::size_t capacity) {
    return detail::round_up(capacity * reflect::leaf_table_v<T>[leaf].size, column_alignment);
  }
  void set_pitch(std::size_t leaf, std::size_t bytes) {
    if (reflect::leaf_table_v<T>[leaf].extent > 1) pitch[pitch_slot[leaf]] = bytes;
  }
  std::size_t pitch_of(std::size_t leaf) const {
    return reflect::leaf_table_v<T>[leaf].extent > 1 ? pitch[pitch_slot[leaf]] : 0;
  }
  static constexpr std::size_t bytes(std::size_t capacity) {
    std::size_t total = 0;
    for (std::size_t l = 0; l < leaves; ++l) total += reflect::leaf_table_v<T>[l].extent * column_bytes(l, capacity);
    return total;
  }
  static layout_storage over(std::byte* base, std::size_t capacity) {
    layout_storage s;
    std::size_t offset = 0;
    for (std::size_t l = 0; l < leaves; ++l) {
      s.columns[l] = base == nullptr ? nullptr : base + offset;
      s.set_pitch(l, column_bytes(l, capacity));
      offset += reflect::leaf_table_v<T>[l].extent * column_bytes(l, capacity);
    }
    return s;
  }
  COALESCE_HOST_DEVICE std::byte* base() const {
    if constexpr (leaves == 0) {
      return nullptr;
    } else {
      return columns[0];
    }
  }

  template <std::size_t Leaf, class U>
  COALESCE_HOST_DEVICE COALESCE_INLINE U* leaf_address(std::size_t i, std::size_t j) const {
    if constexpr (reflect::leaf_t<T, Leaf>::extent == 1) {
      return reinterpret_cast<U*>(columns[Leaf]) + i;
    } else {
      return reinterpret_cast<U*>(columns[Leaf] + j * pitch[pitch_slot[Leaf]]) + i;
    }
  }

  template <class U> U* leaf_address_at(std::size_t leaf, std::size_t i, std::size_t j) const {
    return reinterpret_cast<U*>(columns[leaf] + j * pitch_of(leaf)) + i;
  }

  column_ref column(std::size_t leaf, std::size_t sub) const {
    auto const& info = reflect::leaf_table_v<T>[leaf];
    return {columns[leaf] + sub * pitch_of(leaf), info.size, 0, 63};
  }
};

// ------------------------------------------------------------------------------------ aosoa<W>
template <class T, std::size_t W> struct layout_storage<T, aosoa<W>> {
  static constexpr std::size_t leaves = reflect::leaf_count_v<T>;
  static constexpr unsigned shift = static_cast<unsigned>(std::countr_zero(W));

  // Inside a block: leaf l's W * extent elements start at block_offsets[l], each leaf aligned
  // for its type; a block is padded to the alignment of T so that blocks stay aligned.
  static constexpr std::array<std::size_t, leaves> block_offsets = [] {
    std::array<std::size_t, leaves> out{};
    std::size_t end = 0;
    for (std::size_t l = 0; l < leaves; ++l) {
      auto const& info = reflect::leaf_table_v<T>[l];
      end = detail::round_up(end, info.align);
      out[l] = end;
      end += W * info.extent * info.size;
    }
    return out;
  }();
  static constexpr std::size_t block_bytes = [] {
    std::size_t end = 0;
    for (std::size_t l = 0; l < leaves; ++l) {
      auto const& info = reflect::leaf_table_v<T>[l];
      end = detail::round_up(end, info.align) + W * info.extent * info.size;
    }
    return detail::round_up(end == 0 ? 1 : end, alignof(T));
  }();

  std::byte* data = nullptr;

  static constexpr std::size_t bytes(std::size_t capacity) { return (capacity + W - 1) / W * block_bytes; }
  // The largest capacity whose byte count fits in a ptrdiff_t.
  static constexpr std::size_t max_capacity() { return (static_cast<std::size_t>(PTRDIFF_MAX) / block_bytes - 1) * W; }
  static layout_storage over(std::byte* base, std::size_t /*capacity*/) { return {base}; }
  COALESCE_HOST_DEVICE std::byte* base() const { return data; }

  template <std::size_t Leaf, class U>
  COALESCE_HOST_DEVICE COALESCE_INLINE U* leaf_address(std::size_t i, std::size_t j) const {
    constexpr std::size_t offset = block_offsets[Leaf];
    return reinterpret_cast<U*>(data + (i >> shift) * block_bytes + offset) + j * W + (i & (W - 1));
  }

  template <class U> U* leaf_address_at(std::size_t leaf, std::size_t i, std::size_t j) const {
    return reinterpret_cast<U*>(data + (i >> shift) * block_bytes + block_offsets[leaf]) + j * W + (i & (W - 1));
  }

  column_ref column(std::size_t leaf, std::size_t sub) const {
    auto const& info = reflect::leaf_table_v<T>[leaf];
    if (data == nullptr) return {nullptr, info.size, block_bytes, shift};  // empty: no offset on a null pointer
    return {data + block_offsets[leaf] + sub * W * info.size, info.size, block_bytes, shift};
  }
};

}  // namespace coalesce
