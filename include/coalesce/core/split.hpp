// coalesce/core/split.hpp - some members under one mapping, the rest under another.
//
//   // Positions packed, one 16-byte slot per particle (a vec3 padded to 16 bytes, so a gather of
//   // one neighbour's position is one vector load and one sector); every other leaf a column:
//   using md_layout = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
//   coalesce::device_vector<Particle, md_layout> d(legacy);
//   // Nested: id and mass packed together too, the rest columns.
//   using three_way = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos,
//                                     coalesce::split<coalesce::fields<&Particle::mass, &Particle::id>,
//                                                     coalesce::aos, coalesce::soa>>;
//
// fields<...> lists direct members of the element type by member pointer (a nested struct
// member takes all its leaves along). The listed members form a record of their own, in member
// order with natural alignment, padded by default to the width one vector load reads (a 12-byte
// vec3 -> 16 bytes, 6 bytes -> 8; beyond 16 bytes a multiple of 16); a 16-byte float4-like
// struct stays as it is. coalesce::unpadded as the fourth argument keeps the natural size.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include "layout.hpp"
#include "reflect.hpp"

namespace coalesce {

// Padding of a split's packed group: to the vector-load width (default), or none.
struct padded {};
// No padding: the group keeps its natural size and alignment.
struct unpadded {};

// The members of a split's group, by member pointer: fields<&Particle::pos, &Particle::mass>.
template <auto... Members> struct fields {
  static_assert(sizeof...(Members) > 0,
                "coalesce: fields<...> needs at least one member pointer, e.g. fields<&Particle::pos>");
};
// The same by direct-member index (0 = the first member), for layouts written once for many
// element types.
template <std::size_t... Indices> struct member_indices {
  static_assert(sizeof...(Indices) > 0, "coalesce: member_indices<...> needs at least one index");
};

namespace detail {

template <class M> struct member_pointer_class;
template <class C, class M> struct member_pointer_class<M C::*> {
  using type = C;
  using member = M;
};

// The index of the direct member that a member pointer names, in a constant expression.
template <class T, auto Member> constexpr std::size_t member_index() {
  using parts = member_pointer_class<decltype(Member)>;
  static_assert(std::is_same_v<typename parts::type, T>,
                "coalesce: fields<...> (or store<...>) names a member of another struct; list direct members of "
                "the element type (fields<&Particle::pos>, not fields<&vec3::x>)");
  T object{};
  return member_index_of_address<T, reflect::members<T>::count>(object, &(object.*Member));
}

template <class T, std::size_t K> constexpr std::size_t checked_member_index() {
  static_assert(K < reflect::members<T>::count,
                "coalesce: member_indices<...> names a member past the struct's last one");
  return K;
}

// Which of T's leaves the listed members cover.
template <class T, class Fields> struct field_leaves;
template <class T, auto... Members> struct field_leaves<T, fields<Members...>>
    : field_leaves<T, member_indices<member_index<T, Members>()...>> {};
template <class T, std::size_t... Indices> struct field_leaves<T, member_indices<Indices...>> {
  static constexpr std::array<std::size_t, sizeof...(Indices)> indices{checked_member_index<T, Indices>()...};
  static constexpr bool distinct = [] {
    for (std::size_t a = 0; a < indices.size(); ++a)
      for (std::size_t b = a + 1; b < indices.size(); ++b)
        if (indices[a] == indices[b]) return false;
    return true;
  }();
  static_assert(distinct, "coalesce: fields<...> lists a member twice; list each member once");
  static constexpr std::array<bool, reflect::leaf_count_v<T>> mask = [] {
    std::array<bool, reflect::leaf_count_v<T>> out{};
    std::array<std::size_t, reflect::members<T>::count + 1> first{};
    [&]<std::size_t... K>(std::index_sequence<K...>) { ((first[K] = reflect::first_leaf_of_member<T, K>()), ...); }
    (std::make_index_sequence<reflect::members<T>::count>{});
    first[reflect::members<T>::count] = reflect::leaf_count_v<T>;
    for (std::size_t k : indices)
      for (std::size_t l = first[k]; l < first[k + 1]; ++l) out[l] = true;
    return out;
  }();
};

// The other side of a split that lists every member of the shape: no leaves, no blobs.
struct empty_side_mapping {
  static constexpr std::size_t blob_count = 0;
  COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t blob_of(std::size_t) { return 0; }
  constexpr empty_side_mapping() = default;
  COALESCE_HOST_DEVICE constexpr explicit empty_side_mapping(std::size_t) {}
  std::size_t blob_bytes(std::size_t) const { return 0; }
  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr column_place place(std::size_t, std::size_t) const { return {}; }
  static constexpr std::size_t max_capacity() { return static_cast<std::size_t>(-1); }
};
template <class L, class Shape> struct side_mapping {
  static_assert(check_mapping<L, Shape>());
  using type = typename L::template mapping<Shape>;
};
template <class L, class Shape> using side_mapping_t =
    typename std::conditional_t<Shape::count == 0, std::type_identity<empty_side_mapping>,
                                side_mapping<L, Shape>>::type;

constexpr std::size_t vector_width(std::size_t bytes) {
  if (bytes > 16) return round_up(bytes, 16);
  std::size_t w = 1;
  while (w < bytes) w *= 2;
  return w;
}

// The leaves of Shape that are (In = true) or are not (In = false) in Fields, as a shape of
// their own: members one after another in T's order, each at the next multiple of its alignment.
template <class Shape, class Fields, bool In, class Padding> struct sub_shape {
  using root = typename Shape::root;
  using origin = typename Shape::origin;
  static constexpr bool converts = origin::converts;
  static constexpr auto const& mask = field_leaves<root, Fields>::mask;
  static constexpr std::size_t count = [] {
    std::size_t c = 0;
    for (auto const& leaf : Shape::leaves) c += mask[leaf.root_leaf] == In;
    return c;
  }();
  struct layout_result {
    std::array<shape_leaf, count> leaves{};
    std::size_t bytes = 0, align = 1;
  };
  static constexpr layout_result layout = [] {
    layout_result r{};
    auto const& members = origin::member_of_leaf;
    std::size_t k = 0, end = 0, member_start = 0, last_member = static_cast<std::size_t>(-1);
    for (auto const& leaf : Shape::leaves) {
      if (mask[leaf.root_leaf] != In) continue;
      auto const& m = members[leaf.root_leaf];
      // A new member (by index: under stored_as a member of bit-packed fields that carry no word
      // has no bytes, and the next member's slot may start at the same offset): place it whole.
      std::size_t const member = reflect::leaf_table_v<root>[leaf.root_leaf].path[0];
      if (member != last_member) {
        member_start = round_up(end, m.align);
        end = member_start + m.size;
        last_member = member;
        r.align = std::max(r.align, m.align);
      }
      std::size_t const inside = origin::leaves[leaf.root_leaf].offset - m.offset;
      r.leaves[k++] = {leaf.root_leaf, leaf.size, leaf.align, leaf.extent, member_start + inside};
    }
    r.bytes = round_up(end == 0 ? 1 : end, r.align);
    if constexpr (std::is_same_v<Padding, padded>) {
      r.bytes = vector_width(r.bytes);
      r.align = std::max(r.align, std::min<std::size_t>(r.bytes, 16));
    }
    return r;
  }();
  static constexpr std::array<shape_leaf, count> leaves = layout.leaves;
  static constexpr std::size_t record_bytes = layout.bytes;
  static constexpr std::size_t record_align = layout.align;
  COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr shape_leaf leaf(std::size_t l) { return element_of<leaves>(l); }
};

// "member_indices<0, 3>" for fields<...> or member_indices<...> alike.
template <class Fields> struct fields_indices;
template <auto... Members> struct fields_indices<fields<Members...>> {
  static constexpr std::array<std::size_t, sizeof...(Members)> value{
      member_index<typename member_pointer_class<decltype(Members)>::type, Members>()...};
};
template <std::size_t... Indices> struct fields_indices<member_indices<Indices...>> {
  static constexpr std::array<std::size_t, sizeof...(Indices)> value{Indices...};
};
template <class Fields> std::string fields_name() {
  std::string out = "member_indices<";
  bool first = true;
  for (std::size_t k : fields_indices<Fields>::value) {
    out += (first ? "" : ", ") + std::to_string(k);
    first = false;
  }
  return out + ">";
}

}  // namespace detail

template <class Fields, class In, class Rest, class Padding = padded> struct split {
  static_assert(std::is_same_v<Padding, padded> || std::is_same_v<Padding, unpadded>,
                "coalesce: split's fourth argument is coalesce::padded (the default) or coalesce::unpadded");

  // A name that compiles (with `using namespace coalesce`) and tells one split from another: the
  // fields as member indices (fields<&P::pos> names member 0 of P the same way), the two
  // mappings, and the padding when it is not the default.
  static std::string name() {
    return "split<" + detail::fields_name<Fields>() + ", " + detail::layout_name_of<In>() + ", " +
           detail::layout_name_of<Rest>() + (std::is_same_v<Padding, unpadded> ? ", unpadded" : "") + ">";
  }

  // split's placement of a shape's leaves (the mapping concept, core/layout.hpp): the listed
  // members' leaves (the group) under In's mapping of a record of their own, the others under
  // Rest's; In's blobs come first.
  template <class Shape> struct mapping {
    using in_shape = detail::sub_shape<Shape, Fields, true, Padding>;      // the group as a record (padded per Padding)
    using rest_shape = detail::sub_shape<Shape, Fields, false, unpadded>;  // the other leaves as a record
    static_assert(in_shape::count > 0, "coalesce: split<fields<...>, ...>: the listed members have no leaves here");
    using in_mapping = detail::side_mapping_t<In, in_shape>;        // In's placement of the group
    using rest_mapping = detail::side_mapping_t<Rest, rest_shape>;  // no blobs when every member is listed

    static constexpr std::size_t blob_count = in_mapping::blob_count + rest_mapping::blob_count;  // In's, then Rest's
    // Which of the root's leaves the listed members cover (by root leaf).
    static constexpr auto const& mask = detail::field_leaves<typename Shape::root, Fields>::mask;
    // Each leaf's index among its side's leaves. (Hidden from the API reference: doxygen 1.9 takes
    // the lambda's body for a declaration of another class's member and warns.)
    // @cond
    static constexpr std::array<std::size_t, Shape::count> local = [] {
      std::array<std::size_t, Shape::count> out{};
      std::size_t in = 0, rest = 0;
      for (std::size_t l = 0; l < Shape::count; ++l) out[l] = mask[Shape::leaves[l].root_leaf] ? in++ : rest++;
      return out;
    }();
    // @endcond
    // Each leaf's side: true in the group (In), false in the rest.
    static constexpr std::array<bool, Shape::count> side = [] {
      std::array<bool, Shape::count> out{};
      for (std::size_t l = 0; l < Shape::count; ++l) out[l] = mask[Shape::leaves[l].root_leaf];
      return out;
    }();
    // True when the leaf is in the group (placed by In); host or device code.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr bool in_group(std::size_t leaf) {
      return detail::element_of<side>(leaf);
    }
    // The leaf's index among its side's leaves; host or device code.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t local_of(std::size_t leaf) {
      return detail::element_of<local>(leaf);
    }
    // The leaf's blob: its side's blob, Rest's numbered after In's.
    COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr std::size_t blob_of(std::size_t leaf) {
      return in_group(leaf) ? in_mapping::blob_of(local_of(leaf))
                            : in_mapping::blob_count + rest_mapping::blob_of(local_of(leaf));
    }

    constexpr mapping() = default;
    // Both sides with room for `capacity` elements.
    COALESCE_HOST_DEVICE constexpr explicit mapping(std::size_t capacity) : in_(capacity), rest_(capacity) {}
    COALESCE_HOST_DEVICE std::size_t capacity() const { return in_.capacity(); }  // elements both sides are sized for
    // Blob b's bytes, from the side that owns it.
    std::size_t blob_bytes(std::size_t blob) const {
      return blob < in_mapping::blob_count ? in_.blob_bytes(blob) : rest_.blob_bytes(blob - in_mapping::blob_count);
    }
    // The smaller of the two sides' most elements (what vector::max_size() reports).
    static constexpr std::size_t max_capacity() {
      return std::min(detail::max_capacity_of<in_mapping>(), detail::max_capacity_of<rest_mapping>());
    }
    // Sub-column `sub` of a leaf: where its side's mapping places it in that side's blob.
    COALESCE_HOST_DEVICE COALESCE_INLINE constexpr column_place place(std::size_t leaf, std::size_t sub) const {
      return in_group(leaf) ? in_.place(local_of(leaf), sub) : rest_.place(local_of(leaf), sub);
    }
    // A run of leaves is packed when one side stores it packed, with T's relative offsets.
    static constexpr node_slot packed(std::size_t first, std::size_t leaves) {
      bool const in = in_group(first);
      for (std::size_t l = first; l < first + leaves; ++l) {
        if (in_group(l) != in || local[l] != local[first] + (l - first)) return {};
      }
      return in ? side_packed<in_mapping, in_shape>(first, leaves)
                : side_packed<rest_mapping, rest_shape>(first, leaves);
    }

   private:
    template <class M, class S> static constexpr node_slot side_packed(std::size_t first, std::size_t leaves) {
      if constexpr (requires { M::packed(std::size_t{}, std::size_t{}); }) {
        std::size_t const f = local[first];
        for (std::size_t l = 0; l < leaves; ++l) {  // the side's record keeps T's relative offsets
          if (S::leaves[f + l].offset - S::leaves[f].offset !=
              Shape::leaves[first + l].offset - Shape::leaves[first].offset) {
            return {};
          }
        }
        return M::packed(f, leaves);
      } else {
        return {};
      }
    }
    in_mapping in_{};
    rest_mapping rest_{};
  };
};

}  // namespace coalesce
