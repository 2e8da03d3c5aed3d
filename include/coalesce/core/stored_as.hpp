// coalesce/core/stored_as.hpp - a mapping that stores some members in another number format than
// their own type: the struct and the kernels stay as they are, the proxy converts.
//
//   using lean = coalesce::stored_as<coalesce::soa,
//                                    coalesce::store<&Particle::vel, coalesce::half>,   // 2 bytes per leaf
//                                    coalesce::store<&Particle::id, std::uint16_t>>;    // checked narrowing
//   coalesce::host_vector<Particle, lean> small = h;  // converts (round to nearest even), checks ranges
//   auto v = small.view();
//   auto [x, y, z] = v[i][&Particle::pos];           // float& as before (pos is stored as float)
//   auto [vx, vy, vz] = v[i][&Particle::vel];        // converting references: read float, write float
//   x += vx * dt;                                     // the same source as on soa
//   // Deterministic scattered sums: a 64-bit fixed-point member and coalesce::atomic_add (core/atomic.hpp).
//   using summed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::fixed_point<std::int64_t, 32>>>;
//   coalesce::host_vector<Particle, summed> sums(n);
//   // Small integers and bool flags in bits of 32-bit words the record's packed fields share:
//   using tagged = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::id, coalesce::bits<20>>>;
//   // Positions in 32-bit steps of the vector's box, wrapped periodically (the box is the vector's):
//   using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
//   coalesce::host_vector<Particle, boxed> in_box(coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::periodic});
//   in_box.assign(h);
//
// store<&T::member, Format> names a direct member of T (a nested struct member takes all its
// leaves along; its leaves must all be floating for half, bfloat16, float, double and
// fixed_point, all integers for integer formats; a std::array member stores each element in the
// format, and v[i][&P::member][k] converts element k).
// bits<N> and signed_bits<N> (integer and bool members, N <= 32) pack into 32-bit words: each word
// is stored in the slot of its first field (the carrier, stored_shape::carriers); the word's other
// fields take no bytes of their own (layout_storage::slot_leaf sends their addresses there).
// store_index<K, Format> is the same by member index. The inner mapping (soa, aos, aosoa<W>,
// split<...>, a user mapping) places the stored bytes: a vel stored as half takes 6 bytes of an aos
// record, and a split<fields<&Particle::vel>, aos, soa> packs it into an 8-byte slot. stored_as is
// the outermost layout (it cannot be one side of a split; put the split inside it).
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "layout.hpp"
#include "reflect.hpp"
#include "split.hpp"
#include "stored_types.hpp"

namespace coalesce {

template <auto Member, class Format> struct store {
  static_assert(detail::number_format<Format>,
                "coalesce: store<&T::member, Format>: Format is coalesce::half, coalesce::bfloat16, "
                "coalesce::fixed_point<std::int32_t or std::int64_t, FractionBits>, float, double, an integer type, or "
                "CUDA's __half or __nv_bfloat16");
};
template <std::size_t K, class Format> struct store_index {
  static_assert(detail::number_format<Format>,
                "coalesce: store_index<K, Format>: Format is coalesce::half, coalesce::bfloat16, "
                "coalesce::fixed_point<std::int32_t or std::int64_t, FractionBits>, float, double, an integer type, or "
                "CUDA's __half or __nv_bfloat16");
};

namespace detail {

// A store<...> or store_index<...> as (direct member index of T, format).
template <class T, class Store> struct store_parts;
template <class T, auto Member, class Format> struct store_parts<T, store<Member, Format>> {
  static constexpr std::size_t member = member_index<T, Member>();
  static constexpr stored_format format = format_of<Format>::value;
};
template <class T, std::size_t K, class Format> struct store_parts<T, store_index<K, Format>> {
  static constexpr std::size_t member = checked_member_index<T, K>();
  static constexpr stored_format format = format_of<Format>::value;
};

// True when every leaf of member K of T can be stored in format f (a std::array leaf: its
// elements' type).
template <class T, std::size_t K> constexpr bool member_accepts(stored_format f) {
  using M = typename reflect::members<T>::template type<K>;
  constexpr std::size_t first = reflect::first_leaf_of_member<T, K>();
  return [&]<std::size_t... L>(std::index_sequence<L...>) {
    return (can_store_as<typename reflect::leaf_t<T, first + L>::type>(f) && ...);
  }
  (std::make_index_sequence<reflect::leaves_in<M>()>{});
}

// True when member K is one scalar leaf: bit-packed fields are single integers or bools (a nested
// struct's proxy addresses its own leaves only, not a word that another member carries).
template <class T, std::size_t K> constexpr bool member_is_scalar() {
  using M = typename reflect::members<T>::template type<K>;
  constexpr std::size_t first = reflect::first_leaf_of_member<T, K>();
  return reflect::leaves_in<M>() == 1 && reflect::leaf_t<T, first>::extent == 1;
}

// True when member K has one to three scalar leaves: box_fixed's axes.
template <class T, std::size_t K> constexpr bool member_box_axes() {
  using M = typename reflect::members<T>::template type<K>;
  constexpr std::size_t first = reflect::first_leaf_of_member<T, K>(), leaves = reflect::leaves_in<M>();
  if constexpr (leaves < 1 || leaves > 3) {
    return false;
  } else {
    return [&]<std::size_t... L>(std::index_sequence<L...>) {
      return ((reflect::leaf_t<T, first + L>::extent == 1) && ...);
    }
    (std::make_index_sequence<leaves>{});
  }
}

template <class T, class Store> constexpr bool check_store() {
  using parts = store_parts<T, Store>;
  static_assert(member_accepts<T, parts::member>(parts::format),
                "coalesce: store<&T::member, Format>: the member's leaves cannot be stored in that format "
                "(half, bfloat16, float, double and fixed_point hold floating members; integer formats hold "
                "integer members; bits and signed_bits hold integer and bool members; a std::array member by its "
                "elements' type)");
  static_assert(parts::format.kind != number_kind::box_fraction || member_box_axes<T, parts::member>(),
                "coalesce: store<&T::member, box_fixed<...>>: the member must be a float or double, or a struct of "
                "two or three of them (leaf k is axis k of the box); store a float4's w apart (split it into pos "
                "and a member of its own) or keep it as it is");
  static_assert(!is_packed(parts::format) || member_is_scalar<T, parts::member>(),
                "coalesce: store<&T::member, bits<N>>: only an integer or bool member can be bit-packed, not a "
                "std::array or a nested struct; store its fields as members of T, or store it as a narrower integer "
                "(std::uint8_t, ...)");
  return true;
}

// T's leaves with the stored formats applied: each converted leaf takes its format's bytes and
// alignment; a member with converted leaves is laid out leaf after leaf, every other member keeps
// its size and inner layout (so its packed loads stay valid), in member order.
template <class T, class... Stores> struct stored_shape {
  static_assert((check_store<T, Stores>() && ...));
  using root = T;
  using origin = stored_shape;
  static constexpr bool converts = true;
  static constexpr std::size_t count = reflect::leaf_count_v<T>;
  static constexpr std::size_t member_count = reflect::members<T>::count;

  static constexpr std::array<std::size_t, sizeof...(Stores)> stored_members{store_parts<T, Stores>::member...};
  static constexpr bool distinct = [] {
    for (std::size_t a = 0; a < stored_members.size(); ++a)
      for (std::size_t b = a + 1; b < stored_members.size(); ++b)
        if (stored_members[a] == stored_members[b]) return false;
    return true;
  }();
  static_assert(distinct, "coalesce: stored_as<...> names a member twice; give each member one store<...>");

  struct member_leaves {
    std::size_t first, leaves;
  };
  static constexpr std::array<member_leaves, member_count + 1> ranges = [] {
    std::array<member_leaves, member_count + 1> out{};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((out[K] = {reflect::first_leaf_of_member<T, K>(),
                  reflect::leaves_in<typename reflect::members<T>::template type<K>>()}),
       ...);
    }
    (std::make_index_sequence<member_count>{});
    return out;
  }();

  // The formats, with each bit-packed leaf's place in its word: packed leaves fill 32-bit words in
  // leaf order, a leaf that does not fit the current word's remaining bits starting the next one.
  // carriers[l]: the leaf whose slot holds leaf l's word (the word's first leaf; l itself for
  // every leaf that is not packed). Only the carrier takes bytes: the word.
  struct packing {
    std::array<stored_format, count> formats{};
    std::array<std::size_t, count> carriers{};
  };
  static constexpr packing packed_words = [] {
    packing out{};
    out.formats = root_shape<T>::formats;
    std::array<stored_format, sizeof...(Stores)> const chosen{store_parts<T, Stores>::format...};
    for (std::size_t s = 0; s < chosen.size(); ++s) {
      auto const r = ranges[stored_members[s]];
      for (std::size_t l = r.first; l < r.first + r.leaves; ++l) out.formats[l] = chosen[s];
    }
    // box_fixed axes: a member of several leaves (a vec3) takes axes 0, 1, 2 in leaf order; members of
    // one leaf (separate x, y, z) take them in member order.
    std::size_t scalar_axes = 0;
    for (std::size_t k = 0; k < member_count; ++k) {
      auto const r = ranges[k];
      if (r.leaves == 0 || out.formats[r.first].kind != number_kind::box_fraction) continue;
      for (std::size_t l = r.first; l < r.first + r.leaves; ++l)
        out.formats[l].axis = static_cast<std::uint8_t>(r.leaves == 1 ? scalar_axes : l - r.first);
      if (r.leaves == 1) ++scalar_axes;
    }
    std::size_t carrier = count, used = 32;
    for (std::size_t l = 0; l < count; ++l) {
      out.carriers[l] = l;
      if (!is_packed(out.formats[l])) continue;
      if (used + out.formats[l].bit_count > 32) carrier = l, used = 0;
      out.formats[l].bit_offset = static_cast<std::uint8_t>(used);
      out.carriers[l] = carrier;
      used += out.formats[l].bit_count;
    }
    return out;
  }();
  static_assert(
      [] {
        std::size_t scalars = 0;
        for (std::size_t l = 0; l < count; ++l)
          if (packed_words.formats[l].kind == number_kind::box_fraction && packed_words.formats[l].axis > 2) ++scalars;
        return scalars == 0;
      }(),
      "coalesce: more than three single-leaf members stored as box_fixed; a box has three axes (store a position "
      "as one member of two or three leaves, or as at most three separate members)");
  static constexpr std::array<stored_format, count> formats = packed_words.formats;
  static constexpr std::array<std::size_t, count> carriers = packed_words.carriers;
  static constexpr bool converted(std::size_t l) { return !(formats[l] == root_shape<T>::formats[l]); }
  // True when some leaf is stored relative to the storage's box (box_fixed).
  static constexpr bool boxed = [] {
    for (auto const& f : formats)
      if (f.kind == number_kind::box_fraction) return true;
    return false;
  }();

  struct placement {
    std::array<shape_leaf, count> leaves{};
    std::array<member_slot, count> member_of_leaf{};
    std::size_t bytes = 0, align = 1;
  };
  static constexpr placement placed = [] {
    placement p{};
    auto const& natural = root_shape<T>::leaves;
    auto const& natural_members = root_shape<T>::member_of_leaf;
    std::size_t end = 0;
    for (std::size_t k = 0; k < member_count; ++k) {
      auto const r = ranges[k];
      if (r.leaves == 0) continue;
      bool any = false;
      for (std::size_t l = r.first; l < r.first + r.leaves; ++l) any = any || converted(l);
      member_slot slot{};
      if (!any) {  // as in T
        member_slot const m = natural_members[r.first];
        slot = {round_up(end, m.align), m.size, m.align};
        for (std::size_t l = r.first; l < r.first + r.leaves; ++l) {
          p.leaves[l] = {l, natural[l].size, natural[l].align, natural[l].extent,
                         slot.offset + natural[l].offset - m.offset};
        }
      } else {  // leaf after leaf, each at its format's alignment
        std::size_t align = 1;
        for (std::size_t l = r.first; l < r.first + r.leaves; ++l)
          align = std::max<std::size_t>(align, formats[l].bytes);
        std::size_t at = round_up(end, align);
        slot.offset = at;
        for (std::size_t l = r.first; l < r.first + r.leaves; ++l) {
          // A packed leaf's word is its carrier's: the others take no bytes of their own.
          std::size_t const size = carriers[l] == l ? formats[l].bytes : 0, extent = natural[l].extent;
          at = round_up(at, size == 0 ? 1 : size);
          p.leaves[l] = {l, size, size == 0 ? 1 : size, extent, at};  // std::array: elements one after another
          at += size * extent;
        }
        slot.size = round_up(at - slot.offset, align);
        slot.align = align;
      }
      for (std::size_t l = r.first; l < r.first + r.leaves; ++l) p.member_of_leaf[l] = slot;
      end = slot.offset + slot.size;
      p.align = std::max(p.align, slot.align);
    }
    p.bytes = round_up(end == 0 ? 1 : end, p.align);
    return p;
  }();
  static constexpr std::array<shape_leaf, count> leaves = placed.leaves;
  static constexpr std::array<member_slot, count> member_of_leaf = placed.member_of_leaf;
  static constexpr std::size_t record_bytes = placed.bytes;
  static constexpr std::size_t record_align = placed.align;
  COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr shape_leaf leaf(std::size_t l) { return element_of<leaves>(l); }
};

// A store<...> as "store_index<K, format>": a name that compiles without the member pointer's
// spelling (the element type is the member pointer's class).
template <class Store> struct store_printer;
template <auto Member, class Format> struct store_printer<store<Member, Format>> {
  static std::string name() {
    using T = typename member_pointer_class<decltype(Member)>::type;
    return "store_index<" + std::to_string(member_index<T, Member>()) + ", " + format_name(format_of<Format>::value) +
           ">";
  }
};
template <std::size_t K, class Format> struct store_printer<store_index<K, Format>> {
  static std::string name() {
    return "store_index<" + std::to_string(K) + ", " + format_name(format_of<Format>::value) + ">";
  }
};
}  // namespace detail

template <class Inner, class... Stores> struct stored_as {
  static_assert(sizeof...(Stores) > 0, "coalesce: stored_as<Mapping, store<&T::member, Format>...> needs a store<...>");

  // The shape every storage of T under this layout starts from (core/layout_storage.hpp).
  template <class T> using root_shape = detail::stored_shape<T, Stores...>;

  // Inner's mapping over the stored shape: Inner's placement of the leaves at their stored formats'
  // sizes. stored_as must be the outermost layout (a compile error else).
  template <class Shape> struct mapping : Inner::template mapping<Shape> {
    static_assert(std::is_same_v<Shape, detail::stored_shape<typename Shape::root, Stores...>>,
                  "coalesce: stored_as<...> must be the outermost layout; for a split with stored members write "
                  "stored_as<split<fields<...>, aos, soa>, store<...>>");
    using base = typename Inner::template mapping<Shape>;  // Inner's mapping, whose constructors it takes
    using base::base;
  };

  // For the analysis tables: members by index, formats by name (with `using namespace coalesce`
  // and std::int*_t in scope, a type that compiles).
  static std::string name() {
    std::string out = "stored_as<" + detail::layout_name_of<Inner>();
    ((out += ", " + detail::store_printer<Stores>::name()), ...);
    return out + ">";
  }
};

}  // namespace coalesce
