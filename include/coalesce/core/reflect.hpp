// coalesce/core/reflect.hpp - what a plain struct is made of, at compile time.
//
//   struct vec3 { float x, y, z; };
//   struct Particle { vec3 pos; vec3 vel; float mass; std::uint32_t id; std::array<int, 4> tag; };
//
//   static_assert(coalesce::reflect::leaf_count_v<Particle> == 9);     // pos.x .. vel.z, mass, id, tag
//   static_assert(coalesce::reflect::column_count_v<Particle> == 12);  // tag is 4 sub-columns
//   static_assert(coalesce::reflect::leaf_t<Particle, 6>::offset == 24);  // mass, a float
//   static_assert(coalesce::reflect::leaf_table_v<Particle>[8].extent == 4);
//
// No macro, no registration, no Boost.PFR: the direct members of T are counted as the largest N
// for which T{{}, {}, ... N times} compiles (each braced {} initializes exactly one member, so
// a C array or std::array of any extent counts once; N is found by doubling, then bisection,
// so the cost grows with the member count, never with sizeof(T)), and their declared types are
// read through a structured binding of N names (detail/member_types.hpp). T{} must compile, and
// T must not have a base class. Nested aggregates (a user vec3, CUDA's float3) are flattened
// into their leaves; a std::array<U, N> member of leaf type U is one leaf with an extent of N
// (N sub-columns, indexed at run time, so a 65536-long array costs no more compile time than
// one int); any other trivially copyable member that is not a reflectable aggregate (a union,
// a class with constructors, std::complex) is an opaque leaf, stored whole. Types that cannot
// be reflected (C-array members included, under every layout) fail with a static_assert
// starting "coalesce:".
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "member_types.hpp"

namespace coalesce::reflect {

using detail::type_list;

// How a member is stored: split into its own members, one leaf with sub-columns, or one leaf.
enum class node_kind { aggregate, array, leaf };

// The position of a leaf: member indices from the root, e.g. path<0, 2> is pos.z.
template <std::size_t... I> struct path {
  static constexpr std::size_t depth = sizeof...(I);                     // levels from the root to the leaf
  static constexpr std::array<std::size_t, sizeof...(I)> indices{I...};  // the member index at each level
};

// One flattened leaf of a root type: its element type, byte offset inside the root, the number
// of sub-columns (N for std::array<U, N>, else 1), the element stride between sub-columns
// inside the root, and its path.
template <class U, std::size_t Offset, std::size_t Extent, class Path> struct leaf_entry {
  using type = U;                                   // the leaf's element type (U of a std::array<U, N>)
  using path_type = Path;                           // its reflect::path from the root
  static constexpr std::size_t offset = Offset;     // byte offset of sub-column 0 inside the root
  static constexpr std::size_t extent = Extent;     // sub-columns: N for std::array<U, N>, else 1
  static constexpr std::size_t size = sizeof(U);    // bytes of one element (sub-columns are this far apart in T)
  static constexpr std::size_t align = alignof(U);  // alignment of the element type
};

}  // namespace coalesce::reflect

namespace coalesce::detail {

template <class U> struct is_std_array : std::false_type {};
template <class U, std::size_t N> struct is_std_array<std::array<U, N>> : std::true_type {};

template <class T> constexpr bool has_reflectable_shape() {
  return std::is_class_v<T> && !std::is_union_v<T> && std::is_aggregate_v<T> && !std::is_polymorphic_v<T> &&
         std::is_standard_layout_v<T> && std::is_trivially_copyable_v<T>;
}

// Converts only to a (proper) base class of T: T{base_only<T>{}} compiles when T's first
// aggregate element is a base class (C++17 aggregates may have bases; structured bindings and
// member counting by initializers would then disagree). It also compiles when the first member
// takes anything (a constructor template); T{no_conversion{}} tells that case apart.
template <class T> struct base_only {
  template <class U>
  requires(std::is_class_v<U>&& std::is_base_of_v<U, T> && !std::is_same_v<U, T>) constexpr operator U() const noexcept;
};
struct no_conversion {};
template <class T> constexpr bool has_aggregate_base() {
  if constexpr (has_reflectable_shape<T>()) {
    return requires { T{base_only<T>{}}; }
    &&!requires { T{no_conversion{}}; };
  } else {
    return false;
  }
}

// Member counting: the largest N for which T{{}, {}, ... N times} compiles. Each {} initializes
// exactly one direct member (braces stop brace elision, so a C array or a std::array of any
// extent is one member), and one initializer more than there are members does not compile.
// Found by doubling (1, 2, 4, ...) then bisection: O(members * log members) initializers in
// all, independent of sizeof(T) and of array extents. Needs T{} to compile (checked first).
inline constexpr std::size_t too_many_members = coalesce::detail::max_direct_members + 1;

template <class T, std::size_t Good, std::size_t Bad> constexpr std::size_t bisect_member_count() {
  if constexpr (Bad - Good <= 1) {
    return Good;
  } else {
    constexpr std::size_t mid = Good + (Bad - Good) / 2;
    if constexpr (coalesce::detail::braced_init_with<T, mid>) {
      return bisect_member_count<T, mid, Bad>();
    } else {
      return bisect_member_count<T, Good, mid>();
    }
  }
}
// Precondition: T{} compiles, and so does T{{} x K/2} (K = 1: the empty list).
template <class T, std::size_t K> constexpr std::size_t double_member_count() {
  if constexpr (K >= too_many_members) {
    if constexpr (coalesce::detail::braced_init_with<T, too_many_members>) {
      return too_many_members;
    } else {
      return bisect_member_count<T, K / 2, too_many_members>();
    }
  } else if constexpr (coalesce::detail::braced_init_with<T, K>) {
    return double_member_count<T, K * 2>();
  } else {
    return bisect_member_count<T, K / 2, K>();
  }
}

// The checks that counting relies on; their failures have their own static_asserts in members.
template <class T> constexpr bool countable() {
  if constexpr (has_reflectable_shape<T>()) {
    return coalesce::detail::braced_init_with<T, 0> && !has_aggregate_base<T>();
  } else {
    return false;
  }
}

// The number of direct members; too_many_members when there are more than the tables hold.
template <class T> constexpr std::size_t member_count() {
  if constexpr (countable<T>()) {
    return double_member_count<T, 1>();
  } else {
    return 0;
  }
}

template <class T> constexpr bool can_bind_members() { return countable<T>() && member_count<T>() < too_many_members; }

template <class T> auto bound_member_types(T& value) {
  if constexpr (can_bind_members<T>()) {
    return coalesce::detail::member_types_of<T, member_count<T>()>(value);
  } else {
    (void)value;
    return type_list<>{};
  }
}
// The declared types of T's direct members, as the structured binding sees them.
template <class T> using bound_types = decltype(bound_member_types<T>(std::declval<T&>()));

template <class... M> constexpr bool no_c_array_members(type_list<M...>) { return (!std::is_array_v<M> && ...); }

template <class T> constexpr bool members_are_plain() {
  if constexpr (can_bind_members<T>()) {
    return no_c_array_members(bound_types<T>{});
  } else {
    return false;
  }
}

// The member types coalesce works with: empty when T cannot be reflected (its static_asserts
// say why), so that a rejected type produces one coalesce: message, not a cascade.
template <class T> using member_type_list = std::conditional_t<members_are_plain<T>(), bound_types<T>, type_list<>>;

// Instantiated (by reflect::members<T>) for each direct member: a C-array member fails here, and the
// diagnostic names this template with the member's index and declared type, e.g.
// "c_array_member<2, float [4]>" (a static_assert message cannot carry them in C++20).
template <std::size_t Index, class Member> struct c_array_member {
  static_assert(!std::is_array_v<Member>,
                "coalesce: the element type has a C-array member, named in this diagnostic as "
                "c_array_member<member index, member type> (e.g. c_array_member<2, float [4]>: member 2 "
                "is a float[4]); use std::array<U, N> instead of U[N]. Every layout needs this, aos "
                "included: coalesce reaches the members of every layout through reflection");
  static constexpr bool checked = true;
};
template <class... M, std::size_t... K> constexpr bool check_c_arrays(type_list<M...>, std::index_sequence<K...>) {
  return (c_array_member<K, M>::checked && ...);
}
template <class T> constexpr bool check_c_arrays() {
  if constexpr (can_bind_members<T>()) {
    using types = bound_types<T>;
    return check_c_arrays(types{}, std::make_index_sequence<types::size>{});
  } else {
    return true;
  }
}

template <class L> struct list_as_tuple;
template <class... M> struct list_as_tuple<type_list<M...>> { using type = std::tuple<M...>; };

template <class M> constexpr reflect::node_kind kind_of();

template <class M> constexpr bool is_leaf_scalar() { return kind_of<M>() == reflect::node_kind::leaf; }

template <class M> constexpr reflect::node_kind kind_of() {
  if constexpr (is_std_array<M>::value) {
    using E = typename M::value_type;
    if constexpr (std::tuple_size_v < M >> 0 && !is_std_array<E>::value && is_leaf_scalar<E>()) {
      return reflect::node_kind::array;
    } else {
      return reflect::node_kind::leaf;  // arrays of structs or arrays: stored whole
    }
  } else if constexpr (std::is_class_v<M> && !std::is_union_v<M> && std::is_aggregate_v<M>) {
    return reflect::node_kind::aggregate;
  } else {
    return reflect::node_kind::leaf;
  }
}

// Byte offsets of the members as the compiler lays out a standard-layout struct: each member
// at the next multiple of its alignment. Checked against sizeof(T) below, which catches the
// cases where this would be wrong (bit-fields, alignas on a member).
template <class... M> constexpr std::array<std::size_t, sizeof...(M)> natural_offsets(type_list<M...>) {
  std::array<std::size_t, sizeof...(M)> out{};
  std::size_t end = 0, k = 0;
  ((end = (end + alignof(M) - 1) / alignof(M) * alignof(M), out[k++] = end, end += sizeof(M)), ...);
  return out;
}

template <class... M> constexpr std::size_t natural_size(type_list<M...>, std::size_t align) {
  std::size_t end = 0;
  ((end = (end + alignof(M) - 1) / alignof(M) * alignof(M) + sizeof(M)), ...);
  return (end + align - 1) / align * align;
}

template <class... M> constexpr bool no_reference_members(type_list<M...>) { return (!std::is_reference_v<M> && ...); }
template <class... M> constexpr bool no_cv_members(type_list<M...>) {
  return ((!std::is_const_v<M> && !std::is_volatile_v<M>)&&...);
}

}  // namespace coalesce::detail

namespace coalesce::reflect {

// The direct members of an aggregate T. Instantiating it checks that T can be reflected.
template <class T> struct members {
  static_assert(!std::is_polymorphic_v<T>,
                "coalesce: the element type has virtual functions or virtual bases; use a plain struct "
                "of data members (keep behaviour in free functions)");
  static_assert(std::is_class_v<T> && !std::is_union_v<T> && std::is_aggregate_v<T>,
                "coalesce: the element type must be an aggregate: a plain struct with public data "
                "members, no constructors, no private or protected members and no virtual functions");
  static_assert(std::is_standard_layout_v<T>,
                "coalesce: the element type must be standard-layout: no reference members, no base class "
                "with data members, no mix of access specifiers; store values instead of references and "
                "put a base's members into a named member instead");
  static_assert(std::is_trivially_copyable_v<T>,
                "coalesce: the element type must be trivially copyable (no std::string, std::vector or "
                "user-defined copy); store such data outside and keep an index in the struct");
  static_assert(!detail::has_reflectable_shape<T>() || !detail::has_aggregate_base<T>(),
                "coalesce: the element type has a base class; coalesce reflects direct data members "
                "only: put the base's members into a named member instead");
  static_assert(!detail::has_reflectable_shape<T>() || detail::has_aggregate_base<T>() ||
                    coalesce::detail::braced_init_with<T, 0>,
                "coalesce: the element type must be value-initializable (T{} must compile): a member "
                "of a class type without a default constructor cannot be reflected; give it one");
  static_assert(!detail::countable<T>() || detail::member_count<T>() <= coalesce::detail::max_direct_members,
                "coalesce: a struct has more than 64 direct members; group some of them into a nested struct");
  static_assert(detail::check_c_arrays<T>(), "coalesce: the element type has a C-array member");

  using types = detail::member_type_list<T>;         // the direct members' declared types, in order
  static constexpr std::size_t count = types::size;  // direct members

  static_assert(detail::no_reference_members(types{}),
                "coalesce: the element type has a reference member; store the value, or an index");
  static_assert(detail::no_cv_members(types{}),
                "coalesce: the element type has a const or volatile member; remove the qualifier "
                "(use a const view for read-only access)");
  static_assert(count == 0 || detail::natural_size(types{}, alignof(T)) == sizeof(T),
                "coalesce: the element type has bit-fields or an over-aligned member (alignas on a "
                "member), so member offsets cannot be reflected; use plain members (alignas on the "
                "whole struct is fine)");

  // Each direct member's byte offset in T.
  static constexpr std::array<std::size_t, count> offsets = detail::natural_offsets(types{});

  // The K-th direct member's type.
  template <std::size_t K> using type = std::tuple_element_t<K, typename detail::list_as_tuple<types>::type>;
};

}  // namespace coalesce::reflect

namespace coalesce::detail {

template <class... L> struct concat;
template <> struct concat<> { using type = type_list<>; };
template <class... A> struct concat<type_list<A...>> { using type = type_list<A...>; };
template <class... A, class... B, class... R> struct concat<type_list<A...>, type_list<B...>, R...> {
  using type = typename concat<type_list<A..., B...>, R...>::type;
};

template <class P, std::size_t I> struct append_path;
template <std::size_t... P, std::size_t I> struct append_path<reflect::path<P...>, I> {
  using type = reflect::path<P..., I>;
};

template <class M, std::size_t Offset, class Path, reflect::node_kind Kind = kind_of<M>()> struct flatten;

template <class M, std::size_t Offset, class Path> struct flatten<M, Offset, Path, reflect::node_kind::leaf> {
  static_assert(std::is_trivially_copyable_v<M>,
                "coalesce: a member type is not trivially copyable (std::string, std::vector, a class "
                "with a user-defined copy); store such data outside and keep an index in the struct");
  using type = type_list<reflect::leaf_entry<M, Offset, 1, Path>>;
};

template <class M, std::size_t Offset, class Path> struct flatten<M, Offset, Path, reflect::node_kind::array> {
  using type = type_list<reflect::leaf_entry<typename M::value_type, Offset, std::tuple_size_v<M>, Path>>;
};

template <class M, std::size_t Offset, class Path> struct flatten<M, Offset, Path, reflect::node_kind::aggregate> {
  using info = reflect::members<M>;
  template <std::size_t... K> static auto children(std::index_sequence<K...>)
      -> concat<typename flatten<typename info::template type<K>, Offset + info::offsets[K],
                                 typename append_path<Path, K>::type>::type...>;
  using type = typename decltype(children(std::make_index_sequence<info::count>{}))::type;
};

}  // namespace coalesce::detail

namespace coalesce::reflect {

// Every leaf of T in member order, as type_list<leaf_entry<...>...>.
template <class T> using leaves_t = typename detail::flatten<T, 0, path<>, node_kind::aggregate>::type;

// Number of leaves of T: nested structs flattened, a std::array member one leaf.
template <class T> inline constexpr std::size_t leaf_count_v = leaves_t<T>::size;

}  // namespace coalesce::reflect

namespace coalesce::detail {
template <class L> struct as_tuple;
template <class... E> struct as_tuple<type_list<E...>> { using type = std::tuple<E...>; };
template <class L> struct column_total;
template <class... E> struct column_total<type_list<E...>> {
  static constexpr std::size_t value = (std::size_t{0} + ... + E::extent);
};
}  // namespace coalesce::detail

namespace coalesce::reflect {

// The L-th leaf of T (a leaf_entry).
template <class T, std::size_t L> using leaf_t = std::tuple_element_t<L, typename detail::as_tuple<leaves_t<T>>::type>;

// Number of 1-D columns: a std::array<U, N> leaf counts N.
template <class T> inline constexpr std::size_t column_count_v = detail::column_total<leaves_t<T>>::value;

// Number of leaves below a member type M (1 for a leaf or an array leaf).
template <class M> constexpr std::size_t leaves_in() {
  if constexpr (detail::kind_of<M>() == node_kind::aggregate) {
    return leaf_count_v<M>;
  } else {
    return 1;
  }
}

// Index, among T's leaves, of the first leaf of member K.
template <class T, std::size_t K> constexpr std::size_t first_leaf_of_member() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    return (std::size_t{0} + ... + leaves_in<typename members<T>::template type<J>>());
  }
  (std::make_index_sequence<K>{});
}

// How a member of type M is stored: a struct split into its members (aggregate), a std::array of
// scalars as one leaf with sub-columns (array), anything else as one leaf.
template <class M> inline constexpr node_kind kind_v = detail::kind_of<M>();

// A run-time description of one leaf, for code that walks columns (copies, analysis).
struct leaf_info {
  std::size_t offset;                 // byte offset of the leaf (of sub-column 0) inside the root
  std::size_t size;                   // bytes of one element of the leaf
  std::size_t align;                  // alignment of the leaf type
  std::size_t extent;                 // sub-columns (N for std::array<U, N>)
  std::size_t first_column;           // index of its first 1-D column among all columns of the root
  std::array<std::uint16_t, 8> path;  // member indices from the root (first `depth` are valid)
  std::size_t depth;                  // levels from the root to the leaf
};

}  // namespace coalesce::reflect

namespace coalesce::detail {
template <class Entry> constexpr reflect::leaf_info describe_leaf(std::size_t first_column) {
  reflect::leaf_info info{};
  info.offset = Entry::offset;
  info.size = Entry::size;
  info.align = Entry::align;
  info.extent = Entry::extent;
  info.first_column = first_column;
  info.depth = Entry::path_type::depth;
  for (std::size_t d = 0; d < info.depth && d < info.path.size(); ++d) {
    info.path[d] = static_cast<std::uint16_t>(Entry::path_type::indices[d]);
  }
  return info;
}

template <class... E> constexpr auto make_leaf_table(type_list<E...>) {
  std::array<reflect::leaf_info, sizeof...(E)> out{};
  std::size_t k = 0, column = 0;
  ((out[k++] = describe_leaf<E>(column), column += E::extent), ...);
  return out;
}
}  // namespace coalesce::detail

namespace coalesce::reflect {

// Every leaf of T as a leaf_info, in member order: a constexpr std::array that run-time code
// indexes (leaf_table_v<T>[l].extent).
template <class T> inline constexpr auto leaf_table_v = detail::make_leaf_table(leaves_t<T>{});

// True when T can be stored by coalesce (used in requires-clauses and tests).
template <class T>
concept reflectable = detail::has_reflectable_shape<T>() && detail::members_are_plain<T>();

// Calls f(leaf, sub) for every 1-D column of T (sub < the leaf's extent): the one place that
// walks leaves x extents. constexpr, so compile-time checks over columns use it too.
template <class T, class F> constexpr void for_each_column(F&& f) {
  for (std::size_t l = 0; l < leaf_count_v<T>; ++l) {
    for (std::size_t j = 0; j < leaf_table_v<T>[l].extent; ++j) f(l, j);
  }
}

// "leaf 4 (member 1.1)": a leaf by index and by its path of member indices, for error messages.
template <class T> std::string leaf_name(std::size_t l) {
  auto const& info = leaf_table_v<T>[l];
  std::string out = "leaf ";  // appended piece by piece (g++ 12 warns falsely on const char* + string&&)
  out += std::to_string(l);
  out += " (member ";
  for (std::size_t d = 0; d < info.depth; ++d) {
    if (d > 0) out += '.';
    out += std::to_string(info.path[d]);
  }
  out += ')';
  return out;
}

}  // namespace coalesce::reflect
