// coalesce/core/view.hpp - the non-owning, trivially copyable handle that kernels take by value.
//
//   auto v = d.view();                                  // from a coalesce::vector
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE (std::size_t i) {
//     auto [pos, vel, mass, id] = v[i];
//     auto [x, y, z] = pos;  auto [vx, vy, vz] = vel;
//     x += vx * dt;  y += vy * dt;  z += vz * dt;
//   });
//
//   // Over memory the program already owns, with no copy:
//   coalesce::view<Particle, coalesce::aos> legacy(particles_ptr, n);
//   auto cols = coalesce::view<Particle, coalesce::soa>::over_columns(n, {px, py, pz, vx, vy, vz, masses, ids});
//
//   // Keep a float4 array of positions as it is, the other fields as columns (split.hpp):
//   using keep_float4 = coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>;
//   auto atoms = coalesce::view<Atom, keep_float4>::over_blobs(n, {positions_float4, charges, ids});
//
// The same kernel source runs on every layout (aos, soa, aosoa<W>, split<...>, a user's own
// mapping). The mapping and the blob pointers are members held by value, so they travel as
// kernel parameters (no reloads from global memory after each store). view<T const, L> is the
// read-only form.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <type_traits>

#include "column.hpp"
#include "config.hpp"
#include "element_index.hpp"
#include "error.hpp"
#include "layout.hpp"
#include "reference.hpp"
#include "reflect.hpp"
#include "layout_storage.hpp"

namespace coalesce {

template <class T, class Layout> class view;

namespace detail {
inline void check_user_pointer(void const* p, std::size_t n, std::size_t align, char const* what) {
  if (n > 0 && p == nullptr) {
    throw_error(std::string("a view over user memory got a null pointer for ") + what + " with " + std::to_string(n) +
                " elements; pass the memory's address, or n = 0");
  }
  if (reinterpret_cast<std::uintptr_t>(p) % align != 0) {
    throw_error(std::string("a view over user memory got a pointer for ") + what + " that is not aligned to " +
                std::to_string(align) +
                " bytes (the alignment of its type); allocate it with new, "
                "std::vector or cudaMalloc, or copy it into a coalesce::vector");
  }
}
// True when a mapping stores T[capacity] in its one blob, exactly as an array of T (what a view
// over a user's array of records needs). Read from the mapping's placements at compile time.
template <class M, class T> constexpr bool stores_record_array() {
  if constexpr (M::blob_count != 1) {
    return false;
  } else {
    constexpr M m{};  // place() is constexpr by the mapping concept (docs/layouts.md)
    auto const& table = reflect::leaf_table_v<T>;
    bool as_records = true;
    reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
      as_records = as_records && m.place(l, j) == column_place{table[l].offset + j * table[l].size, sizeof(T), 0, 0};
    });
    return as_records;
  }
}

// A leaf's column placement with capacity-independent facts (stride, blocks), for the column type.
template <class M, std::size_t L> constexpr column_place static_place() {
  // A compile error here: the mapping must be default-constructible with a constexpr place()
  // (docs/layouts.md), so that column types can be chosen at compile time.
  constexpr column_place p = M{}.place(L, 0);
  return p;
}
}  // namespace detail

// Random-access iterator over a view; its reference is the proxy.
template <class View> class view_iterator {
 public:
  using value_type = typename View::value_type;               // the element type (what *it converts to)
  using reference = typename View::reference;                 // the proxy: *it is not a T&
  using difference_type = std::ptrdiff_t;                     // a distance in elements
  using pointer = void;                                       // no T* points into a layout's element
  using iterator_category = std::random_access_iterator_tag;  // std::sort and std::ranges::sort run over a view

  view_iterator() = default;
  // At element i of v.
  COALESCE_HOST_DEVICE view_iterator(View v, std::size_t i) : view_(v), index_(i) {}

  COALESCE_HOST_DEVICE reference operator*() const { return view_[index_]; }  // the element's proxy
  // The proxy of the element k places on.
  COALESCE_HOST_DEVICE reference operator[](difference_type k) const { return view_[index_ + k]; }
  // To the next element.
  COALESCE_HOST_DEVICE view_iterator& operator++() {
    ++index_;
    return *this;
  }
  // To the next element; returns the iterator as it was.
  COALESCE_HOST_DEVICE view_iterator operator++(int) {
    auto t = *this;
    ++index_;
    return t;
  }
  // To the previous element.
  COALESCE_HOST_DEVICE view_iterator& operator--() {
    --index_;
    return *this;
  }
  // To the previous element; returns the iterator as it was.
  COALESCE_HOST_DEVICE view_iterator operator--(int) {
    auto t = *this;
    --index_;
    return t;
  }
  // Forward by k elements (back for a negative k).
  COALESCE_HOST_DEVICE view_iterator& operator+=(difference_type k) {
    index_ += k;
    return *this;
  }
  // Back by k elements.
  COALESCE_HOST_DEVICE view_iterator& operator-=(difference_type k) {
    index_ -= k;
    return *this;
  }
  // The iterator k elements forward.
  // The operators take iterators by const reference: clang 14 rejected by-value parameters in the
  // standard iterator concepts' checks once std::sort had run over an aos view in the same file
  // (std::ranges::sort then failed equality_comparable: "no matching constructor").
  COALESCE_HOST_DEVICE friend view_iterator operator+(view_iterator const& it, difference_type k) {
    return view_iterator(it.view_, it.index_ + static_cast<std::size_t>(k));
  }
  // The same, k + it.
  COALESCE_HOST_DEVICE friend view_iterator operator+(difference_type k, view_iterator const& it) { return it + k; }
  // The iterator k elements back.
  COALESCE_HOST_DEVICE friend view_iterator operator-(view_iterator const& it, difference_type k) {
    return view_iterator(it.view_, it.index_ - static_cast<std::size_t>(k));
  }
  // Elements from b to a (iterators of one view).
  COALESCE_HOST_DEVICE friend difference_type operator-(view_iterator const& a, view_iterator const& b) {
    return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
  }
  // True at the same position (iterators of one view: the view is not compared).
  COALESCE_HOST_DEVICE friend bool operator==(view_iterator const& a, view_iterator const& b) {
    return a.index_ == b.index_;
  }
  // Ordered by position (iterators of one view).
  COALESCE_HOST_DEVICE friend auto operator<=>(view_iterator const& a, view_iterator const& b) {
    return a.index_ <=> b.index_;
  }
  COALESCE_HOST_DEVICE std::size_t index() const { return index_; }  // the element it is at

 private:
  View view_{};
  std::size_t index_ = 0;
};

// n elements of T laid out by Layout's mapping, not owned: the trivially copyable handle that
// kernels take by value (host or device memory, whichever the pointers name). v[i] is a proxy
// that reads and writes like a T; view<T const, Layout> is read-only.
template <class T, class Layout = soa> class view {
 public:
  using value_type = std::remove_const_t<T>;                 // the element type, without const
  using layout_type = Layout;                                // aos, soa, aosoa<W>, split<...> or a user's layout
  using storage_type = layout_storage<value_type, Layout>;   // what the view holds: the mapping and blob pointers
  using mapping_type = typename storage_type::mapping_type;  // Layout's placement of T's leaves
  static constexpr bool is_const = std::is_const_v<T>;       // read-only (view<T const, Layout>)
  // What v[i] returns: a proxy that loads, stores and hands out members (core/reference.hpp).
  using reference = coalesce::reference<value_type, Layout, value_type, static_node<0, 0>, is_const>;
  using iterator = view_iterator<view>;  // random access; *it is the proxy
  using size_type = std::size_t;         // element counts and indices
  // T's leaves (over_columns takes one pointer per leaf).
  static constexpr std::size_t leaf_count = reflect::leaf_count_v<value_type>;

  view() = default;
  // The first n elements of a storage (a vector's storage()). Throws coalesce::error for a storage
  // of box_fixed members without its box (one from layout_storage::over).
  COALESCE_HOST_DEVICE view(storage_type storage, std::size_t n) : storage_(storage), size_(n) {
#if !COALESCE_IN_DEVICE_CODE
    // A storage of box_fixed members without its box (layout_storage::over) reads every coordinate as 0.
    if (n > 0 && !storage.frame.given())
      detail::throw_error(
          "a view of a layout with box_fixed members over a storage without its box; set the "
          "storage's frame (a vector's storage() has it), or use over_blobs(n, blobs, box)");
#endif
  }

  // A view over an existing array of records (no copy), for layouts that store records as an
  // array (aos). Throws on null or misaligned data.
  view(T* data, std::size_t n) requires(detail::stores_record_array<mapping_type, value_type>()) : size_(n) {
    detail::check_user_pointer(data, n, alignof(value_type), "the records");
    storage_.map = mapping_type(n);
    storage_.blobs[0] = reinterpret_cast<std::byte*>(const_cast<value_type*>(data));
  }
  // The same over a span's records.
  explicit view(std::span<T> records) requires(detail::stores_record_array<mapping_type, value_type>())
      : view(records.data(), records.size()) {}
  // The first n of `records`: throws if the memory holds fewer than n records.
  view(std::span<T> records, std::size_t n) requires(detail::stores_record_array<mapping_type, value_type>())
      : view(records.data(), checked_size(records.size(), n, "records")) {}

  // A view over memory laid out by the mapping for n elements, one pointer per blob (for a
  // split<fields<&Atom::pos>, aos, soa>: the packed positions, then one column per other leaf),
  // with each blob's size in bytes: throws coalesce::error naming the first blob that holds fewer
  // than the mapping needs, or a null or misaligned pointer.
  static view over_blobs(std::size_t n, std::array<void*, storage_type::blob_count> const& blobs,
                         std::array<std::size_t, storage_type::blob_count> const& blob_bytes) {
    mapping_type const m(n);
    for (std::size_t b = 0; b < storage_type::blob_count; ++b) {
      if (blob_bytes[b] < m.blob_bytes(b)) {
        detail::throw_error("a view over user memory needs " + std::to_string(m.blob_bytes(b)) + " bytes in blob " +
                            std::to_string(b) + " but the memory holds " + std::to_string(blob_bytes[b]) +
                            "; pass a smaller size or more memory");
      }
    }
    return over_blobs(n, blobs);
  }
  // The same without the sizes (nothing checks that the memory is large enough); throws on a null
  // or misaligned pointer. A layout with box_fixed members takes the box as well (below).
  static view over_blobs(std::size_t n, std::array<void*, storage_type::blob_count> const& blobs) {
    static_assert(!storage_type::boxed,
                  "coalesce: a view over user memory of a layout with box_fixed members needs the box its "
                  "coordinates are stored in: view::over_blobs(n, blobs, box)");
    return over_blobs_in(n, blobs, {});
  }
  // The same for a layout with box_fixed members: their coordinates are fractions of `b`.
  static view over_blobs(std::size_t n, std::array<void*, storage_type::blob_count> const& blobs,
                         box const& b) requires(storage_type::boxed) {
    return over_blobs_in(n, blobs, detail::frame_of(b, "view::over_blobs"));
  }

 private:
  static view over_blobs_in(std::size_t n, std::array<void*, storage_type::blob_count> const& blobs,
                            typename storage_type::frame_type const& frame) {
    storage_type s;
    detail::set_frame(s, frame);
    s.map = mapping_type(n);
    for (std::size_t b = 0; b < storage_type::blob_count; ++b) {
      std::string const what = "blob " + std::to_string(b);
      detail::check_user_pointer(blobs[b], n, blob_alignment(b), what.c_str());
      s.blobs[b] = static_cast<std::byte*>(blobs[b]);
    }
    return view(s, n);
  }

 public:
  // A soa view over existing columns, one pointer per leaf in member order (no copy), with the
  // size of each column's memory (in elements; n * extent for std::array leaves): throws
  // coalesce::error naming the first column that holds fewer, or a null or misaligned pointer.
  // For a std::array<U, N> leaf the pointer is to N sub-columns of n elements each, back to back.
  static view over_columns(std::size_t n, std::array<void*, leaf_count> const& columns,
                           std::array<std::size_t, leaf_count> const&
                               column_sizes) requires(storage_type::blob_count == leaf_count &&
                                                      std::is_constructible_v<mapping_type, std::size_t, std::size_t>) {
    for (std::size_t l = 0; l < leaf_count; ++l) {
      std::string const what = "column " + std::to_string(l);
      checked_size(column_sizes[l], n * reflect::leaf_table_v<value_type>[l].extent, what.c_str());
    }
    return over_columns(n, columns);
  }
  // The same without the sizes (nothing checks that the memory is large enough).
  static view over_columns(std::size_t n, std::array<void*, leaf_count> const& columns) requires(
      storage_type::blob_count == leaf_count && std::is_constructible_v<mapping_type, std::size_t, std::size_t>) {
    static_assert(!storage_type::boxed,
                  "coalesce: a view over user columns of a layout with box_fixed members needs the box its "
                  "coordinates are stored in: copy them into a vector made with the box instead");
    storage_type s;
    s.map = mapping_type(n, 1);  // sub-columns back to back, n elements each
    for (std::size_t l = 0; l < leaf_count; ++l) {
      auto const& info = storage_type::shape::leaves[l];
      std::string const what = "column " + std::to_string(l);
      detail::check_user_pointer(columns[l], n, info.align, what.c_str());
      s.blobs[mapping_type::blob_of(l)] = static_cast<std::byte*>(columns[l]);
    }
    return view(s, n);
  }

  // view<T const> from view<T>: a read-only view of the same elements.
  template <class U>
  requires(is_const&& std::is_same_v<U, value_type>) COALESCE_HOST_DEVICE view(view<U, Layout> const& writable)
      : storage_(writable.storage()), size_(writable.size()) {}

  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }  // elements in the view
  COALESCE_HOST_DEVICE bool empty() const { return size_ == 0; }   // no elements
  // The mapping and blob pointers the view addresses through.
  COALESCE_HOST_DEVICE storage_type const& storage() const { return storage_; }

  // Element i's proxy (no copy). i is checked only where COALESCE_CHECK_BOUNDS is on
  // (core/config.hpp): coalesce::error on the host, a trap in a kernel.
  COALESCE_HOST_DEVICE COALESCE_INLINE reference operator[](std::size_t i) const {
    detail::check_index(i, size_);
    return reference(storage_, i);
  }
  // An index handed out by a loop over blocks (core/element_index.hpp): where the loop's blocks
  // are this mapping's blocks, the proxy addresses lane i.lane of the block that starts at
  // i.first, whose addresses have a unit stride in the lane; otherwise element i.first + i.lane.
  // i.width is a constant of the loop, so the test folds away once the kernel is inlined.
  COALESCE_HOST_DEVICE COALESCE_INLINE reference operator[](element_index i) const {
    if constexpr (storage_type::blocked_width != 0) {
      constexpr std::size_t width = storage_type::blocked_width;
      if (i.width == width) {
        detail::check_index(i.first + i.lane, size_);
        return reference(storage_.advanced_by_blocks(i.first / width), i.lane);
      }
    }
    return (*this)[static_cast<std::size_t>(i)];
  }
  COALESCE_HOST_DEVICE iterator begin() const { return {*this, 0}; }    // at element 0
  COALESCE_HOST_DEVICE iterator end() const { return {*this, size_}; }  // past the last element

  // Leaf L as a 1-D column (sub-column j of a std::array leaf).
  template <std::size_t L> COALESCE_HOST_DEVICE COALESCE_INLINE auto column(std::size_t j = 0) const {
    using E = detail::maybe_const<is_const, typename reflect::leaf_t<value_type, L>::type>;
    static_assert(storage_type::natural(L),
                  "coalesce: column() of a member stored in another format (stored_as) would hand out its stored "
                  "bytes as the member's type; read and write it through v[i], which converts");
    // An empty view may hold no memory: a member offset must not be applied to a null pointer.
    constexpr std::size_t blob = mapping_type::blob_of(L);
    E* first = storage_.blobs[blob] == nullptr ? nullptr : storage_.template leaf_address<L, E>(0, j);
    return column_type<E, L>(first, size_);
  }

  // A leaf as a 1-D column, by a path of member pointers: v.column(&Particle::pos, &vec3::x).
  template <class M0, class... Ms> auto column(M0 member, Ms... path) const {
    static_assert(path_starts_at<value_type, M0, Ms...>(),
                  "coalesce: column() needs a member path that starts at the element type and follows it: "
                  "v.column(&Particle::pos, &vec3::x), each member pointer of the type the previous one names");
    std::size_t offset = 0;
    using E = decltype(leaf_type_of(member, path...));
    offset_of_path(offset, member, path...);
    static_assert(reflect::kind_v<E> == reflect::node_kind::leaf,
                  "coalesce: column() needs a path that ends at a leaf (a number, enum or opaque member); "
                  "for a std::array member use column<leaf index>(j)");
    using CE = detail::maybe_const<is_const, E>;
    return find_column<CE>(offset, std::make_index_sequence<leaf_count>{});
  }

 private:
  template <class Class, class M> struct member_pointer_parts;
  template <class Class, class C, class M> struct member_pointer_parts<Class, M C::*> {
    static constexpr bool belongs = std::is_same_v<C, Class>;
    using member = M;
  };
  // True when the first member pointer is a member of Class and each next one of the previous
  // member's type.
  template <class Class, class M0, class... Ms> static constexpr bool path_starts_at() {
    using parts = member_pointer_parts<Class, M0>;
    if constexpr (!parts::belongs) {
      return false;
    } else if constexpr (sizeof...(Ms) == 0) {
      return true;
    } else {
      return path_starts_at<typename parts::member, Ms...>();
    }
  }

  static std::size_t checked_size(std::size_t available, std::size_t wanted, char const* what) {
    if (available < wanted) {
      detail::throw_error(std::string("a view over user memory needs ") + std::to_string(wanted) + " elements of " +
                          what + " but the memory holds " + std::to_string(available) +
                          "; pass a smaller size or more memory");
    }
    return wanted;
  }

  template <class U, class M> static M leaf_type_of(M U::*);
  template <class U, class M, class... Ms> static auto leaf_type_of(M U::*, Ms... rest)
      -> decltype(leaf_type_of(rest...));

  static void offset_of_path(std::size_t&) {}
  template <class U, class M, class... Ms> static void offset_of_path(std::size_t& offset, M U::*member, Ms... rest) {
    offset += detail::member_offset(member);
    offset_of_path(offset, rest...);
  }

  template <class CE, std::size_t... L> auto find_column(std::size_t offset, std::index_sequence<L...>) const {
    using E = std::remove_const_t<CE>;
    using result = decltype(column_of_type<CE>());
    result out = column_of_type<CE>();
    bool found = false;
    (
        [&]() COALESCE_INLINE_LAMBDA {
          if constexpr (std::is_same_v<typename reflect::leaf_t<value_type, L>::type, E> &&
                        reflect::leaf_t<value_type, L>::extent == 1) {
            if (!found && reflect::leaf_t<value_type, L>::offset == offset) {
              found = true;
              if (!storage_type::natural(L)) {
                detail::throw_error(
                    "column(): the member is stored in another format (stored_as); read and write it through v[i], "
                    "which converts");
              }
              if constexpr (!storage_type::natural(L)) {
              } else if constexpr (std::is_same_v<result, decltype(column<L>())>) {
                out = column<L>();
              } else {
                using CEL = detail::maybe_const<is_const, typename reflect::leaf_t<value_type, L>::type>;
                CEL* first = storage_.blobs[mapping_type::blob_of(L)] == nullptr
                                 ? nullptr
                                 : storage_.template leaf_address<L, CEL>(0, 0);
                out = result(first, storage_.map.place(L, 0), size_);
              }
            }
          }
        }(),
        ...);
    if (!found) detail::throw_error("column(): the member path does not lead to a leaf of this struct");
    return out;
  }
  // Leaf L's column type, from the mapping's compile-time facts: contiguous (a raw pointer),
  // strided, or blocked.
  template <class E, std::size_t L>
  COALESCE_HOST_DEVICE COALESCE_INLINE static auto column_type(E* first, std::size_t n) {
    constexpr column_place p = detail::static_place<mapping_type, L>();
    if constexpr (p.block == 0 && p.stride == sizeof(E)) {
      return contiguous_column<E>(first, n);
    } else if constexpr (p.block == 0) {
      return strided_column<E, p.stride>(first, n);
    } else {
      return blocked_column<E, p.block, p.block_stride>(first, n);
    }
  }
  // One column type for every leaf of element type CE that a member path may name at run time:
  // theirs when they all agree, else the general column (stride and blocks as values).
  template <class CE, std::size_t... L> static constexpr bool same_column_kind(std::index_sequence<L...>) {
    using E = std::remove_const_t<CE>;
    bool same = true;
    bool seen = false;
    column_place first{};
    (
        [&]() COALESCE_INLINE_LAMBDA {
          if constexpr (std::is_same_v<typename reflect::leaf_t<value_type, L>::type, E> &&
                        reflect::leaf_t<value_type, L>::extent == 1) {
            constexpr column_place p = detail::static_place<mapping_type, L>();
            if (seen && (p.stride != first.stride || p.block != first.block || p.block_stride != first.block_stride))
              same = false;
            if (!seen) first = p;
            seen = true;
          }
        }(),
        ...);
    return same;
  }
  template <class CE> auto column_of_type() const {
    return column_of_type_in<CE>(std::make_index_sequence<leaf_count>{});
  }
  template <class CE, std::size_t... L> auto column_of_type_in(std::index_sequence<L...> leaves) const {
    if constexpr (same_column_kind<CE>(leaves)) {
      constexpr std::size_t first = [] {
        std::size_t f = 0;
        bool found = false;
        ((!found && std::is_same_v<typename reflect::leaf_t<value_type, L>::type, std::remove_const_t<CE>> &&
                  reflect::leaf_t<value_type, L>::extent == 1
              ? (f = L, found = true)
              : false),
         ...);
        return f;
      }();
      return column_type<CE, first>(nullptr, 0);
    } else {
      return general_column<CE>(nullptr, column_place{}, 0);
    }
  }
  static std::size_t blob_alignment(std::size_t blob) {
    std::size_t align = 1;
    for (std::size_t l = 0; l < leaf_count; ++l) {
      if (mapping_type::blob_of(l) == blob) align = std::max(align, storage_type::shape::leaves[l].align);
    }
    return align;
  }

  storage_type storage_{};
  std::size_t size_ = 0;
};

}  // namespace coalesce
