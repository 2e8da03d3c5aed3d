// coalesce/core/member_arrays.hpp - one array per top-level member, each member stored whole with
// an element stride of the user's choosing: the shape of existing codes that keep `double x[n][4]`,
// `v[n][4]`, `f[n][4]` and `int type[n]` (LAMMPS's `double **x` is the same), adopted without a copy.
//
//   struct dvec3 { double x, y, z; };
//   struct Atom { dvec3 x; dvec3 v; dvec3 f; int type; };
//   using legacy = coalesce::member_arrays<coalesce::member_stride<&Atom::x, 32>,   // x[i * 4 + d]
//                                          coalesce::member_stride<&Atom::v, 32>,
//                                          coalesce::member_stride<&Atom::f, 32>>;  // type: 4 bytes apart
//   std::vector<double> x(4 * n), v(4 * n), f(4 * n);          // the code's own arrays
//   std::vector<int> type(n);
//   auto atoms = coalesce::view<Atom, legacy>::over_blobs(n, {x.data(), v.data(), f.data(), type.data()});
//   atoms[i][&Atom::f][&dvec3::y] += 1.0;                      // f[i * 4 + 1]
//   atoms[i][&Atom::x][2] = 0.5;                               // x[i * 4 + 2]: a run-time dimension
//
// Member k lives in blob k (the order of the struct's members); a member without a member_stride
// is dense (its elements sizeof(member) apart). A stride must hold the member and keep its
// alignment. The mapping describes whole elements (not a split's group), and, like every
// mapping, works in vectors too (coalesce::vector<Atom, legacy>), where each blob is allocated.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "layout.hpp"
#include "reflect.hpp"
#include "split.hpp"

namespace coalesce {

// The elements of `Member` are `Bytes` apart in its array.
template <auto Member, std::size_t Bytes> struct member_stride {
  static constexpr auto member = Member;       // the member pointer (&Atom::x)
  static constexpr std::size_t bytes = Bytes;  // bytes from one element to the next in its array
};

// One array (blob) per direct member of the element type, in member order, each member stored
// whole; a member named by a member_stride has its elements that many bytes apart, any other
// member sizeof(member). Strides: member_stride<&T::m, bytes>... (see the top of this file).
template <class... Strides> struct member_arrays {
  // "member_arrays<stride 32, ...>" (the listed strides): the layout's name in the analysis and
  // advisor tables.
  static std::string name() {
    std::string out = "member_arrays<";
    bool first = true;
    ((out += (first ? "" : ", ") + std::string("stride ") + std::to_string(Strides::bytes), first = false), ...);
    return out + ">";
  }

  // member_arrays' placement of T's leaves (the mapping concept, core/layout.hpp): whole
  // elements only, never one side of a split (a compile error).
  template <class Shape> struct mapping {
    using T = typename Shape::root;  // the element type
    static_assert(std::is_same_v<Shape, detail::root_shape<T>>,
                  "coalesce: member_arrays maps whole elements; it cannot be one side of a split");
    using members = reflect::members<T>;                       // T's direct members
    static constexpr std::size_t blob_count = members::count;  // one array per direct member

    // Each leaf's member: the blob it lives in.
    static constexpr std::array<std::size_t, Shape::count> member_of = [] {
      std::array<std::size_t, Shape::count> out{};
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (
            [&] {
              constexpr std::size_t first = reflect::first_leaf_of_member<T, K>();
              constexpr std::size_t count = reflect::leaves_in<typename members::template type<K>>();
              for (std::size_t l = first; l < first + count; ++l) out[l] = K;
            }(),
            ...);
      }
      (std::make_index_sequence<members::count>{});
      return out;
    }();
    // Each leaf's byte offset inside its member.
    static constexpr std::array<std::size_t, Shape::count> offset_in_member = [] {
      std::array<std::size_t, Shape::count> out{};
      for (std::size_t l = 0; l < Shape::count; ++l) out[l] = Shape::leaves[l].offset - members::offsets[member_of[l]];
      return out;
    }();
    static_assert(
        ((std::is_same_v<typename detail::member_pointer_class<std::remove_cv_t<decltype(Strides::member)>>::type,
                         T>)&&...),
        "coalesce: member_stride<&S::m, bytes> names a member of another struct than the element type");
    // Each member's size in bytes (its stride where no member_stride names it).
    static constexpr std::array<std::size_t, blob_count> sizes = [] {
      std::array<std::size_t, blob_count> out{};
      [&]<std::size_t... K>(std::index_sequence<K...>) { ((out[K] = sizeof(typename members::template type<K>)), ...); }
      (std::make_index_sequence<members::count>{});
      return out;
    }();
    // Each member's alignment (its stride must be a multiple of it).
    static constexpr std::array<std::size_t, blob_count> alignments = [] {
      std::array<std::size_t, blob_count> out{};
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((out[K] = alignof(typename members::template type<K>)), ...);
      }
      (std::make_index_sequence<members::count>{});
      return out;
    }();
    // Bytes from one element to the next in each member's array.
    static constexpr std::array<std::size_t, blob_count> strides = [] {
      std::array<std::size_t, blob_count> out = sizes;
      ((out[detail::member_index<T, Strides::member>()] = Strides::bytes), ...);
      return out;
    }();
    static_assert(
        [] {
          for (std::size_t k = 0; k < blob_count; ++k) {
            if (strides[k] < sizes[k] || strides[k] % alignments[k] != 0) return false;
          }
          return true;
        }(),
        "coalesce: a member_stride must be at least the member's size and a multiple of its alignment");

    // The leaf's member: its array.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t blob_of(std::size_t leaf) {
      return detail::element_of<member_of>(leaf);
    }
    constexpr mapping() = default;
    // Room for `capacity` elements in every array.
    COALESCE_HOST_DEVICE constexpr explicit mapping(std::size_t capacity) : capacity_(capacity) {}
    COALESCE_HOST_DEVICE std::size_t capacity() const { return capacity_; }  // elements each array is sized for
    std::size_t blob_bytes(std::size_t blob) const { return capacity_ * strides[blob]; }  // capacity() strides
    // The most elements whose widest array fits in a std::ptrdiff_t (what vector::max_size() reports).
    static constexpr std::size_t max_capacity() {
      std::size_t widest = 1;
      for (std::size_t s : strides) widest = s > widest ? s : widest;
      return static_cast<std::size_t>(PTRDIFF_MAX) / widest;
    }
    // Sub-column `sub` of a leaf: at its offset inside the member, elements the member's stride apart.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr column_place place(std::size_t leaf, std::size_t sub) {
      detail::shape_leaf const l = Shape::leaf(leaf);
      return {detail::element_of<offset_in_member>(leaf) + sub * l.size, detail::element_of<strides>(blob_of(leaf)), 0,
              0};
    }
    // A run of leaves inside one member is stored as in T; its slot reaches to the element's end.
    static constexpr node_slot packed(std::size_t first, std::size_t leaves) {
      if (leaves == 0 || member_of[first] != member_of[first + leaves - 1]) return {};
      std::size_t const stride = strides[member_of[first]];
      std::size_t const at = offset_in_member[first];
      return {std::min(detail::alignment_of_offset(stride), detail::alignment_of_offset(at)), stride - at};
    }
    // Equal capacity: the same placement.
    friend bool operator==(mapping const&, mapping const&) = default;

   private:
    std::size_t capacity_ = 0;
  };
};

}  // namespace coalesce
