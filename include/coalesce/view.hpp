// coalesce/view.hpp - the non-owning, trivially copyable handle that kernels take by value.
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
// The same kernel source runs on view<T, aos>, view<T, soa> and view<T, aosoa<W>>. The layout's
// pointers are members held by value, so they travel as kernel parameters (no reloads from
// global memory after each store). view<T const, L> is the read-only form.
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
#include "error.hpp"
#include "layout.hpp"
#include "reference.hpp"
#include "reflect.hpp"

namespace coalesce {

template <class T, class Layout> class view;

namespace detail {
inline void check_user_pointer(void const* p, std::size_t n, std::size_t align, char const* what) {
  if (n > 0 && p == nullptr) {
    throw_error(std::string("a view over user memory got a null pointer for ") + what + " with " +
                std::to_string(n) + " elements; pass the memory's address, or n = 0");
  }
  if (reinterpret_cast<std::uintptr_t>(p) % align != 0) {
    throw_error(std::string("a view over user memory got a pointer for ") + what + " that is not aligned to " +
                std::to_string(align) + " bytes (the alignment of its type); allocate it with new, "
                "std::vector or cudaMalloc, or copy it into a coalesce::vector");
  }
}
}  // namespace detail

// Random-access iterator over a view; its reference is the proxy.
template <class View> class view_iterator {
 public:
  using value_type = typename View::value_type;
  using reference = typename View::reference;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using iterator_category = std::random_access_iterator_tag;

  view_iterator() = default;
  COALESCE_HOST_DEVICE view_iterator(View v, std::size_t i) : view_(v), index_(i) {}

  COALESCE_HOST_DEVICE reference operator*() const { return view_[index_]; }
  COALESCE_HOST_DEVICE reference operator[](difference_type k) const { return view_[index_ + k]; }
  COALESCE_HOST_DEVICE view_iterator& operator++() { ++index_; return *this; }
  COALESCE_HOST_DEVICE view_iterator operator++(int) { auto t = *this; ++index_; return t; }
  COALESCE_HOST_DEVICE view_iterator& operator--() { --index_; return *this; }
  COALESCE_HOST_DEVICE view_iterator operator--(int) { auto t = *this; --index_; return t; }
  COALESCE_HOST_DEVICE view_iterator& operator+=(difference_type k) { index_ += k; return *this; }
  COALESCE_HOST_DEVICE view_iterator& operator-=(difference_type k) { index_ -= k; return *this; }
  COALESCE_HOST_DEVICE friend view_iterator operator+(view_iterator it, difference_type k) { return it += k; }
  COALESCE_HOST_DEVICE friend view_iterator operator+(difference_type k, view_iterator it) { return it += k; }
  COALESCE_HOST_DEVICE friend view_iterator operator-(view_iterator it, difference_type k) { return it -= k; }
  COALESCE_HOST_DEVICE friend difference_type operator-(view_iterator a, view_iterator b) {
    return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
  }
  COALESCE_HOST_DEVICE friend bool operator==(view_iterator a, view_iterator b) { return a.index_ == b.index_; }
  COALESCE_HOST_DEVICE friend auto operator<=>(view_iterator a, view_iterator b) { return a.index_ <=> b.index_; }
  COALESCE_HOST_DEVICE std::size_t index() const { return index_; }

 private:
  View view_{};
  std::size_t index_ = 0;
};

template <class T, class Layout = soa> class view {
  static_assert(is_layout<Layout>::value, "coalesce: the layout must be coalesce::aos, coalesce::soa or coalesce::aosoa<W>");
  static_assert(sizeof(Layout) > 0);  // instantiates aosoa<W>, whose own static_assert checks W

 public:
  using value_type = std::remove_const_t<T>;
  using layout_type = Layout;
  using storage_type = layout_storage<value_type, Layout>;
  static constexpr bool is_const = std::is_const_v<T>;
  using reference = coalesce::reference<value_type, Layout, value_type, static_node<0, 0>, is_const>;
  using iterator = view_iterator<view>;
  using size_type = std::size_t;
  static constexpr std::size_t leaf_count = reflect::leaf_count_v<value_type>;

  view() = default;
  COALESCE_HOST_DEVICE view(storage_type storage, std::size_t n) : storage_(storage), size_(n) {}

  // An aos view over an existing array of records (no copy). Throws on null or misaligned data.
  view(T* data, std::size_t n)
    requires std::is_same_v<Layout, aos>
      : storage_{reinterpret_cast<std::byte*>(const_cast<value_type*>(data))}, size_(n) {
    detail::check_user_pointer(data, n, alignof(value_type), "the records");
  }
  explicit view(std::span<T> records)
    requires std::is_same_v<Layout, aos>
      : view(records.data(), records.size()) {}
  // The first n of `records`: throws if the memory holds fewer than n records.
  view(std::span<T> records, std::size_t n)
    requires std::is_same_v<Layout, aos>
      : view(records.data(), checked_size(records.size(), n, "records")) {}

  // A soa view over existing columns, one pointer per leaf in member order (no copy). For a
  // std::array<U, N> leaf the pointer is to N sub-columns of n elements each, back to back.
  // The same with the size of each column's memory (in elements; n * extent for std::array
  // leaves): throws naming the first column that holds fewer.
  static view over_columns(std::size_t n, std::array<void*, leaf_count> const& columns,
                           std::array<std::size_t, leaf_count> const& column_sizes)
    requires std::is_same_v<Layout, soa>
  {
    for (std::size_t l = 0; l < leaf_count; ++l) {
      std::string const what = "column " + std::to_string(l);
      checked_size(column_sizes[l], n * reflect::leaf_table_v<value_type>[l].extent, what.c_str());
    }
    return over_columns(n, columns);
  }
  static view over_columns(std::size_t n, std::array<void*, leaf_count> const& columns)
    requires std::is_same_v<Layout, soa>
  {
    storage_type s;
    for (std::size_t l = 0; l < leaf_count; ++l) {
      auto const& info = reflect::leaf_table_v<value_type>[l];
      std::string const what = "column " + std::to_string(l);
      detail::check_user_pointer(columns[l], n, info.align, what.c_str());
      s.columns[l] = static_cast<std::byte*>(columns[l]);
      s.set_pitch(l, n * info.size);
    }
    return view(s, n);
  }

  // view<T const> from view<T>: a read-only view of the same elements.
  template <class U>
    requires(is_const && std::is_same_v<U, value_type>)
  COALESCE_HOST_DEVICE view(view<U, Layout> const& writable) : storage_(writable.storage()), size_(writable.size()) {}

  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }
  COALESCE_HOST_DEVICE bool empty() const { return size_ == 0; }
  COALESCE_HOST_DEVICE storage_type const& storage() const { return storage_; }

  COALESCE_HOST_DEVICE COALESCE_INLINE reference operator[](std::size_t i) const {
    detail::check_index(i, size_);
    return reference(storage_, i);
  }
  COALESCE_HOST_DEVICE iterator begin() const { return {*this, 0}; }
  COALESCE_HOST_DEVICE iterator end() const { return {*this, size_}; }

  // Leaf L as a 1-D column (sub-column j of a std::array leaf).
  template <std::size_t L> COALESCE_HOST_DEVICE COALESCE_INLINE auto column(std::size_t j = 0) const {
    using E = detail::maybe_const<is_const, typename reflect::leaf_t<value_type, L>::type>;
    // An empty view may hold no memory: a member offset must not be applied to a null pointer.
    E* first = storage_.base() == nullptr ? nullptr : storage_.template leaf_address<L, E>(0, j);
    if constexpr (std::is_same_v<Layout, soa>) {
      return contiguous_column<E>(first, size_);
    } else if constexpr (std::is_same_v<Layout, aos>) {
      return strided_column<E, sizeof(value_type)>(first, size_);
    } else {
      return blocked_column<E, Layout::width, storage_type::block_bytes>(first, size_);
    }
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
      detail::throw_error(std::string("a view over user memory needs ") + std::to_string(wanted) + " elements of " + what +
                          " but the memory holds " + std::to_string(available) + "; pass a smaller size or more memory");
    }
    return wanted;
  }

  template <class U, class M> static M leaf_type_of(M U::*);
  template <class U, class M, class... Ms> static auto leaf_type_of(M U::*, Ms... rest) -> decltype(leaf_type_of(rest...));

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
        [&] {
          if constexpr (std::is_same_v<typename reflect::leaf_t<value_type, L>::type, E> &&
                        reflect::leaf_t<value_type, L>::extent == 1) {
            if (!found && reflect::leaf_t<value_type, L>::offset == offset) {
              found = true;
              out = column<L>();
            }
          }
        }(),
        ...);
    if (!found) detail::throw_error("column(): the member path does not lead to a leaf of this struct");
    return out;
  }
  // The column type for leaf element type CE under this layout (with an empty range).
  template <class CE> auto column_of_type() const {
    if constexpr (std::is_same_v<Layout, soa>) {
      return contiguous_column<CE>(nullptr, 0);
    } else if constexpr (std::is_same_v<Layout, aos>) {
      return strided_column<CE, sizeof(value_type)>(nullptr, 0);
    } else {
      return blocked_column<CE, Layout::width, storage_type::block_bytes>(nullptr, 0);
    }
  }

  storage_type storage_{};
  std::size_t size_ = 0;
};

}  // namespace coalesce
