// coalesce/core/reference.hpp - the proxy that v[i] returns: it reads and writes like the struct.
//
//   auto r = v[i];                       // a reference (like std::vector<bool>::reference), not a copy
//   Particle p = v[i];                   // load the whole record
//   v[i] = p;                            // store the whole record
//   auto [pos, vel, mass, id] = v[i];    // pos, vel: proxies of vec3; mass: float&; id: uint32_t&
//   auto [x, y, z] = pos;                // leaves bind as plain references into their columns
//   vec3 q = pos;  pos = q;              // nested proxies load and store their part only
//   v[i][&Particle::mass] *= 0.5f;       // by member pointer
//   v[i].get<2>() = 1.0f;                // by member index
//
// A proxy holds the layout's pointers by value (copied from the view) and the index, so it stays
// valid for as long as the storage does, even after the view it came from is gone. Assigning a
// proxy writes through it; it never rebinds. Take `Particle p = v[i]` (not `auto`) for a copy.
#pragma once
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "error.hpp"
#include "layout.hpp"
#include "reflect.hpp"
#include "layout_storage.hpp"
#include "node_storage.hpp"
#include "stored_types.hpp"

#if COALESCE_DEVICE_COMPILER
#include <vector_types.h>
#endif

namespace coalesce {

// Where a nested struct sits inside the root: its first leaf and its byte offset. Known at
// compile time on every path but one (a member pointer to a struct member, resolved at run time).
template <std::size_t First, std::size_t Offset> struct static_node {
  COALESCE_HOST_DEVICE static constexpr std::size_t first() { return First; }    // its first leaf among the root's
  COALESCE_HOST_DEVICE static constexpr std::size_t offset() { return Offset; }  // its byte offset in the root
};
// The same as values: a nested struct found at run time (by member pointer).
struct dynamic_node {
  std::size_t first_leaf;   // its first leaf among the root's leaves
  std::size_t byte_offset;  // its byte offset in the root record
  COALESCE_HOST_DEVICE constexpr std::size_t first() const { return first_leaf; }    // as static_node::first()
  COALESCE_HOST_DEVICE constexpr std::size_t offset() const { return byte_offset; }  // as static_node::offset()
};

namespace detail {
template <class Node> inline constexpr bool is_static_node = false;
template <std::size_t F, std::size_t O> inline constexpr bool is_static_node<static_node<F, O>> = true;

// True for a struct whose leaves are all one scalar type, none an array (vec3, float4, double2):
// its members can be indexed at run time, p[d], as an array of that type.
template <class U> constexpr bool uniform_leaves() {
  if constexpr (!(std::is_class_v<U> && reflect::reflectable<U>) ||
                reflect::kind_v<U> != reflect::node_kind::aggregate) {
    return false;
  } else {
    return []<std::size_t... L>(std::index_sequence<L...>) {
      using E = typename reflect::leaf_t<U, 0>::type;
      return sizeof...(L) > 0 &&
             ((std::is_same_v<typename reflect::leaf_t<U, L>::type, E> && reflect::leaf_t<U, L>::extent == 1) && ...);
    }
    (std::make_index_sequence<reflect::leaf_count_v<U>>{});
  }
}

template <bool Const, class U> using maybe_const = std::conditional_t<Const, U const, U>;

// Byte offset of a data member, from its member pointer (an offset in the Itanium C++ ABI, which
// gcc, clang and nvcc follow). Folds to a constant once the member pointer is a constant.
template <class U, class M> COALESCE_HOST_DEVICE COALESCE_INLINE std::size_t member_offset(M U::*member) {
  static_assert(sizeof(member) == sizeof(std::ptrdiff_t), "coalesce: unexpected member pointer representation");
  std::ptrdiff_t offset;
  std::memcpy(&offset, &member, sizeof offset);
  return static_cast<std::size_t>(offset);
}

COALESCE_HOST_DEVICE inline void fail_member_pointer() {
#if COALESCE_IN_DEVICE_CODE
  __trap();
#else
  throw_error("a member pointer does not name a member of this struct");
#endif
}

[[noreturn]] void throw_store_error(stored_format f);
COALESCE_HOST_DEVICE inline void fail_store(stored_format f) {
#if COALESCE_IN_DEVICE_CODE
  printf(
      "coalesce: a value written to a member stored as a %d-byte format of kind %d is outside what it holds "
      "(or NaN into an integer); choose a wider format or the saturate policy\n",
      static_cast<int>(f.bytes), static_cast<int>(f.kind));
  __trap();
#else
  throw_store_error(f);
#endif
}

// Calls f.template operator()<L>() for the one L in [0, N) equal to `index` and returns its
// result. With a constant index this folds to one call; otherwise it is a chain of selects,
// never an indexed load from an array of pointers (which would spill kernel parameters).
template <std::size_t N, class R, class F>
COALESCE_HOST_DEVICE COALESCE_INLINE R select_index(std::size_t index, F&& f) {
  R result{};
  [&]<std::size_t... L>(std::index_sequence<L...>) COALESCE_INLINE_LAMBDA {
    ((index == L ? (result = f.template operator()<L>(), 0) : 0), ...);
  }
  (std::make_index_sequence<N>{});
  return result;
}
// Loads a struct U stored whole in a slot of `Align`-aligned, `Slot`-byte memory. Where the
// slot allows, one vector load reads it (a 12-byte vec3 in a 16-byte slot: one ld.global.v4),
// which the compiler cannot know from U's own 4-byte alignment.
template <class U, std::size_t Align, std::size_t Slot>
COALESCE_HOST_DEVICE COALESCE_INLINE U load_packed(std::byte const* p) {
#if COALESCE_IN_DEVICE_CODE
  if constexpr (Align >= 16 && Slot >= 16 && sizeof(U) > 8 && sizeof(U) <= 16) {
    uint4 const word = *reinterpret_cast<uint4 const*>(p);
    U out;
    memcpy(&out, &word, sizeof(U));
    return out;
  } else if constexpr (Align >= 8 && Slot >= 8 && sizeof(U) > 4 && sizeof(U) <= 8) {
    uint2 const word = *reinterpret_cast<uint2 const*>(p);
    U out;
    memcpy(&out, &word, sizeof(U));
    return out;
  }
#endif
  return *reinterpret_cast<U const*>(p);
}

// True when leaves [F, F + leaves of U) of Root have U's leaves' sizes, extents and relative
// offsets: where a nested U found at run time (by member pointer) could start.
template <class Root, class U, std::size_t F> constexpr bool node_fits() {
  constexpr std::size_t count = reflect::leaf_count_v<U>;
  if constexpr (F + count > reflect::leaf_count_v<Root>) {
    return false;
  } else {
    constexpr auto const& r = reflect::leaf_table_v<Root>;
    constexpr auto const& u = reflect::leaf_table_v<U>;
    for (std::size_t l = 0; l < count; ++l) {
      if (r[F + l].size != u[l].size || r[F + l].extent != u[l].extent ||
          r[F + l].offset - r[F].offset != u[l].offset) {
        return false;
      }
    }
    return true;
  }
}

// swap_note: every proxy that writes (reference, array_ref and the leaf proxies below) has two
// hidden-friend swaps that exchange the VALUES its two operands name: one taking `T const&`, for
// temporaries (swap(v[i][&P::x], v[j][&P::x])), and one taking `T&`, for named proxies (structured
// bindings, `auto x = v[i][&P::x]`). With the first alone, `using std::swap; swap(x, y)` on named
// proxies picked std::swap's template (T&, a better match than T const&), which swaps through a
// copy of the proxy: x = 1, y = 2 became 2, 2. The second is as good a match as std::swap's and
// not a template, so it is chosen (by std::ranges::swap too, over its deleted swap(T&, T&)).
// std::iter_swap (std::sort over a view) swaps temporaries and takes the first.

// The operators a plain reference to an arithmetic leaf (C&) takes, for a leaf proxy that reads
// through `operator C()` and writes through `operator=(C)`: stored_ref (a member stored in another
// format) and computed_ref (a storage that sees every access, such as the advisor's counting
// storage, analysis/advisor.hpp). One set for every leaf proxy, so that a kernel body that compiles
// on one view compiles on all, and counts as it runs: each is a read, then a write, computed as
// on C& (in the operands' common type, then converted to C).
template <class Derived, class C, bool Const> class leaf_operators {
  static constexpr bool steps = std::is_arithmetic_v<C> && !std::is_same_v<C, bool>;  // ++ and -- (not on bool)

 public:
#define COALESCE_DETAIL_LEAF_COMPOUND(op, which)                                                      \
  template <class R> COALESCE_HOST_DEVICE COALESCE_INLINE Derived const& operator op##=(R const& rhs) \
      const requires(!Const && which<C>) {                                                            \
    C value = static_cast<C>(self());                                                                 \
    value op## = rhs;                                                                                 \
    return self() = value;                                                                            \
  }
  COALESCE_DETAIL_LEAF_COMPOUND(+, std::is_arithmetic_v)
  COALESCE_DETAIL_LEAF_COMPOUND(-, std::is_arithmetic_v)
  COALESCE_DETAIL_LEAF_COMPOUND(*, std::is_arithmetic_v)
  COALESCE_DETAIL_LEAF_COMPOUND(/, std::is_arithmetic_v)
  COALESCE_DETAIL_LEAF_COMPOUND(%, std::is_integral_v)
  COALESCE_DETAIL_LEAF_COMPOUND(&, std::is_integral_v)
  COALESCE_DETAIL_LEAF_COMPOUND(|, std::is_integral_v)
  COALESCE_DETAIL_LEAF_COMPOUND(^, std::is_integral_v)
  COALESCE_DETAIL_LEAF_COMPOUND(<<, std::is_integral_v)
  COALESCE_DETAIL_LEAF_COMPOUND(>>, std::is_integral_v)
#undef COALESCE_DETAIL_LEAF_COMPOUND
  COALESCE_HOST_DEVICE COALESCE_INLINE Derived const& operator++() const requires(!Const && steps) {
    return self() += 1;
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE Derived const& operator--() const requires(!Const && steps) {
    return self() -= 1;
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE C operator++(int) const requires(!Const && steps) {
    C const before = static_cast<C>(self());
    self() = static_cast<C>(before + 1);
    return before;
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE C operator--(int) const requires(!Const && steps) {
    C const before = static_cast<C>(self());
    self() = static_cast<C>(before - 1);
    return before;
  }

 private:
  COALESCE_HOST_DEVICE COALESCE_INLINE Derived const& self() const { return static_cast<Derived const&>(*this); }
};
}  // namespace detail

// Sub-columns of a std::array<E, N> leaf for one element: a[j] is a reference into sub-column j.
template <class E, std::size_t N> class array_ref {
 public:
  using value_type = std::remove_const_t<E>;  // an element's type, without const
  // Element 0 at `first`; element j lies j * step_bytes further (in sub-column j).
  COALESCE_HOST_DEVICE array_ref(E* first, std::size_t step_bytes) : first_(first), step_(step_bytes) {}
  // A copy names the same array; assignment writes values instead (a proxy never rebinds).
  array_ref(array_ref const&) = default;

  // Element j: a plain reference into sub-column j (j is not checked against N).
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t j) const {
    using byte = detail::maybe_const<std::is_const_v<E>, std::byte>;
    return *reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + j * step_);
  }
  COALESCE_HOST_DEVICE static constexpr std::size_t size() { return N; }  // N, the array's extent

  // Loads the whole array (one read per sub-column).
  COALESCE_HOST_DEVICE operator std::array<value_type, N>() const {
    std::array<value_type, N> out;
    for (std::size_t j = 0; j < N; ++j) out[j] = (*this)[j];
    return out;
  }
  // Stores the whole array, element j into sub-column j (not through a read-only proxy).
  COALESCE_HOST_DEVICE array_ref const& operator=(std::array<value_type, N> const& in) const
      requires(!std::is_const_v<E>) {
    for (std::size_t j = 0; j < N; ++j) (*this)[j] = in[j];
    return *this;
  }
  // Copies the values of the array `other` names (of another element, or another view).
  COALESCE_HOST_DEVICE array_ref const& operator=(array_ref const& other) const requires(!std::is_const_v<E>) {
    return *this = static_cast<std::array<value_type, N>>(other);
  }

  // Swaps the values, element by element (detail::swap_note says why a proxy has two swaps).
  friend COALESCE_HOST_DEVICE void swap(array_ref const& a, array_ref const& b) requires(!std::is_const_v<E>) {
    swap_values(a, b);
  }
  // The same for named proxies (structured bindings, `auto t = v[i][&P::tag]`).
  friend COALESCE_HOST_DEVICE void swap(array_ref& a, array_ref& b) requires(!std::is_const_v<E>) { swap_values(a, b); }

 private:
  COALESCE_HOST_DEVICE static void swap_values(array_ref const& a, array_ref const& b) {
    for (std::size_t j = 0; j < N; ++j) {
      value_type const held = a[j];
      a[j] = b[j];
      b[j] = held;
    }
  }

  E* first_;
  std::size_t step_;
};

template <class C, bool Const> class stored_ref;

// Sub-columns of a std::array<C, N> leaf stored in another format (core/stored_as.hpp): a[j] is a
// converting reference into sub-column j; reads and writes of the whole array convert element by
// element.
template <class C, std::size_t N, bool Const> class stored_array_ref {
 public:
  using value_type = C;                                // the member's element type (reads convert to it)
  using byte = detail::maybe_const<Const, std::byte>;  // the stored bytes (const for a read-only proxy)
  // Element 0's stored bytes at `first`, element j's j * step_bytes further, each stored as f.
  COALESCE_HOST_DEVICE stored_array_ref(byte* first, std::size_t step_bytes, stored_format f)
      : first_(first), step_(step_bytes), format_(f) {}
  // A copy names the same array; assignment writes values instead (a proxy never rebinds).
  stored_array_ref(stored_array_ref const&) = default;

  // Element j: a converting reference into sub-column j (j is not checked against N).
  COALESCE_HOST_DEVICE COALESCE_INLINE stored_ref<C, Const> operator[](std::size_t j) const {
    return stored_ref<C, Const>(first_ + j * step_, format_);
  }
  COALESCE_HOST_DEVICE static constexpr std::size_t size() { return N; }  // N, the array's extent

  // Loads the whole array, each element converted to C.
  COALESCE_HOST_DEVICE operator std::array<C, N>() const {
    std::array<C, N> out;
    for (std::size_t j = 0; j < N; ++j) out[j] = static_cast<C>((*this)[j]);
    return out;
  }
  // Stores the whole array, each element converted. A value the format cannot hold (and that it does
  // not saturate) throws coalesce::error on the host before any element is written; a kernel traps.
  COALESCE_HOST_DEVICE stored_array_ref const& operator=(std::array<C, N> const& in) const requires(!Const) {
#if !COALESCE_IN_DEVICE_CODE
    // The host throws at a refused element and the caller may go on: every element is checked
    // before any is written, so a refused array leaves the member as it was.
    for (std::size_t j = 0; j < N; ++j) {
      if (!(*this)[j].accepts(in[j])) detail::fail_store(format_);
    }
#endif
    for (std::size_t j = 0; j < N; ++j) (*this)[j] = in[j];
    return *this;
  }
  // Copies the values of the array `other` names (converted through C).
  COALESCE_HOST_DEVICE stored_array_ref const& operator=(stored_array_ref const& other) const requires(!Const) {
    return *this = static_cast<std::array<C, N>>(other);
  }

  // Swaps the values (detail::swap_note says why a proxy has two swaps).
  friend COALESCE_HOST_DEVICE void swap(stored_array_ref const& a, stored_array_ref const& b) requires(!Const) {
    swap_values(a, b);
  }
  // The same for named proxies (structured bindings, `auto t = v[i][&P::tag]`).
  friend COALESCE_HOST_DEVICE void swap(stored_array_ref& a, stored_array_ref& b) requires(!Const) {
    swap_values(a, b);
  }

 private:
  COALESCE_HOST_DEVICE static void swap_values(stored_array_ref const& a, stored_array_ref const& b) {
    if (a.format_ == b.format_ && !detail::is_packed(a.format_)) {  // the stored bytes, element by element
      for (std::size_t j = 0; j < N; ++j) swap(a[j], b[j]);
      return;
    }
    std::array<C, N> const held = a;
    a = static_cast<std::array<C, N>>(b);
    b = held;
  }

  byte* first_;
  std::size_t step_;
  stored_format format_;
};

// A leaf stored in another format than its type C (core/stored_as.hpp): reads convert to C, writes
// convert from C (round to nearest even; a value the format cannot hold is an error, or saturates
// where the member's format says so). Compound assignment, ++ and -- read, compute as on C& and write
// back (detail::leaf_operators).
template <class C, bool Const> class stored_ref : public detail::leaf_operators<stored_ref<C, Const>, C, Const> {
 public:
  using value_type = C;                                // the member's type: reads convert to it, writes from it
  using byte = detail::maybe_const<Const, std::byte>;  // the stored bytes (const for a read-only proxy)
  // The value stored at p in format f.
  COALESCE_HOST_DEVICE COALESCE_INLINE stored_ref(byte* p, stored_format f) : p_(p), format_(f) {}
  // A copy names the same stored value; assignment writes instead (a proxy never rebinds).
  stored_ref(stored_ref const&) = default;

  // Reads: the stored value converted to C.
  COALESCE_HOST_DEVICE COALESCE_INLINE operator C() const { return detail::decode<C>(p_, format_); }
  // Writes: value converted to the format (round to nearest even). A value the format cannot hold
  // throws coalesce::error on the host and leaves the member as it was (a kernel traps), unless
  // the format saturates.
  COALESCE_HOST_DEVICE COALESCE_INLINE stored_ref const& operator=(C value) const requires(!Const) {
#if COALESCE_IN_DEVICE_CODE
    // A kernel stops at a refused value (fail_store traps), so the bytes go straight in.
    detail::encode_status const status = detail::encode(p_, value, format_);
    if (status != detail::encode_status::ok && !format_.saturates) detail::fail_store(format_);
#else
    if constexpr (std::is_arithmetic_v<C> && !std::is_same_v<C, bool>) {
      if (!format_.saturates && detail::is_packed(format_)) {
        // A packed field shares its word: written in place, and nothing is written when refused.
        if (detail::encode(p_, value, format_) != detail::encode_status::ok) detail::fail_store(format_);
        return *this;
      }
      if (!format_.saturates) {
        // The host throws, and the caller may go on: a refused value leaves the member as it was.
        // (Zeroed: g++ -Og otherwise warns of the packed formats' word read, which this branch never takes.)
        alignas(8) std::byte staged[8] = {};
        if (detail::encode(staged, value, format_) != detail::encode_status::ok) detail::fail_store(format_);
        memcpy(p_, staged, format_.bytes);
        return *this;
      }
    }
    detail::encode(p_, value, format_);  // a saturating format, or a type stored as it is (never refused)
#endif
    return *this;
  }
  // True when `value` can be written (a saturating format always can); what a whole-array store
  // checks for every element before it writes any.
  COALESCE_HOST_DEVICE COALESCE_INLINE bool accepts(C value) const {
    if constexpr (std::is_arithmetic_v<C> && !std::is_same_v<C, bool>) {
      alignas(8) std::byte staged[8] = {};
      return format_.saturates || detail::encode(staged, value, format_) == detail::encode_status::ok;
    } else {
      return true;
    }
  }
  // Copies the value `other` names: the stored bytes exactly where both formats (box included) agree
  // and are not bit-packed, else through C.
  COALESCE_HOST_DEVICE COALESCE_INLINE stored_ref const& operator=(stored_ref const& other) const requires(!Const) {
    return this->operator=<false>(other);
  }
  // The same from a proxy of either constness: the bytes where the formats agree, else through C.
  template <bool C2>
  COALESCE_HOST_DEVICE COALESCE_INLINE stored_ref const& operator=(stored_ref<C, C2> const& other) const
      requires(!Const) {
    // The same format (box included): the stored bytes, exactly (through C, a box_fixed coordinate
    // finer than C's resolution would move by up to half of C's step).
    if (other.format() == format_ && !detail::is_packed(format_)) {
      memcpy(p_, other.address(), format_.bytes);
      return *this;
    }
    return *this = static_cast<C>(other);
  }
  // The stored bytes' address (atomic_add and periodic_difference work on the integers there).
  COALESCE_HOST_DEVICE COALESCE_INLINE byte* address() const { return p_; }
  // The stored format, with its box filled in for a box_fixed leaf.
  COALESCE_HOST_DEVICE COALESCE_INLINE stored_format format() const { return format_; }

  // Swaps the values (detail::swap_note says why a proxy has two swaps).
  friend COALESCE_HOST_DEVICE void swap(stored_ref const& a, stored_ref const& b) requires(!Const) {
    swap_values(a, b);
  }
  // The same for named proxies (structured bindings, `auto m = v[i][&P::mass]`).
  friend COALESCE_HOST_DEVICE void swap(stored_ref& a, stored_ref& b) requires(!Const) { swap_values(a, b); }

 private:
  COALESCE_HOST_DEVICE static void swap_values(stored_ref const& a, stored_ref const& b) {
    if (a.format_ == b.format_ && !detail::is_packed(a.format_)) {  // the stored bytes, exactly
      alignas(8) std::byte held[8];
      memcpy(held, a.p_, a.format_.bytes);
      memcpy(a.p_, b.p_, a.format_.bytes);
      memcpy(b.p_, held, a.format_.bytes);
      return;
    }
    C tmp = a;
    a = static_cast<C>(b);
    b = tmp;
  }

  byte* p_;
  stored_format format_;
};

// Storage: what the proxy holds (the root's layout_storage, or for a nested struct the pointers of
// its own leaves: core/node_storage.hpp; or a computed storage, below).
template <class Root, class Layout, class U, class Node, bool Const, class Storage> class reference;

namespace detail {

// A computed storage has no addresses: the proxy hands it every access, as the bytes of a U at a
// byte offset in element i's record (T's own offsets), and it does what it likes with them (the
// advisor records each access and reads or writes a copy of the sample: analysis/advisor.hpp).
// The proxy is the same reference class; only its leaves are proxies (computed_ref) where a view
// hands out plain references. Host code only.
//   static constexpr bool computed = true;
//   template <class U> U read(std::size_t i, std::size_t offset) const;
//   template <class U> void write(std::size_t i, std::size_t offset, U const& value) const;
//   void check_subscript(std::size_t j, std::size_t extent, bool array) const;  // a[j], p[d] in range?
template <class S> constexpr bool computed_storage() {
  if constexpr (requires { S::computed; }) {
    return S::computed;
  } else {
    return false;
  }
}

// A leaf of a computed storage: each read and each write is one call into the storage.
template <class Storage, class C, bool Const> class computed_ref
    : public leaf_operators<computed_ref<Storage, C, Const>, C, Const> {
 public:
  using value_type = C;
  computed_ref(Storage storage, std::size_t index, std::size_t offset)
      : storage_(storage), index_(index), offset_(offset) {}
  computed_ref(computed_ref const&) = default;

  operator C() const { return storage_.template read<C>(index_, offset_); }  // NOLINT(google-explicit-constructor)
  computed_ref const& operator=(C value) const requires(!Const) {
    storage_.template write<C>(index_, offset_, value);
    return *this;
  }
  computed_ref const& operator=(computed_ref const& other) const requires(!Const) {
    return *this = static_cast<C>(other);
  }
  // Swaps the values: two reads, then two writes (detail::swap_note says why a proxy has two swaps).
  friend void swap(computed_ref const& a, computed_ref const& b) requires(!Const) { swap_values(a, b); }
  friend void swap(computed_ref& a, computed_ref& b) requires(!Const) { swap_values(a, b); }

 private:
  static void swap_values(computed_ref const& a, computed_ref const& b) {
    C tmp = a;
    a = static_cast<C>(b);
    b = tmp;
  }

  Storage storage_;
  std::size_t index_;
  std::size_t offset_;
};

// A std::array<E, N> member of a computed storage: a[j] is the leaf proxy of element j; the whole
// array is read or written as one access (as a struct is).
template <class Storage, class E, std::size_t N, bool Const> class computed_array_ref {
 public:
  using value_type = E;
  computed_array_ref(Storage storage, std::size_t index, std::size_t offset)
      : storage_(storage), index_(index), offset_(offset) {}
  computed_array_ref(computed_array_ref const&) = default;

  computed_ref<Storage, E, Const> operator[](std::size_t j) const {
    storage_.check_subscript(j, N, true);
    return {storage_, index_, offset_ + j * sizeof(E)};
  }
  static constexpr std::size_t size() { return N; }

  operator std::array<E, N>() const {  // NOLINT(google-explicit-constructor)
    return storage_.template read<std::array<E, N>>(index_, offset_);
  }
  computed_array_ref const& operator=(std::array<E, N> const& in) const requires(!Const) {
    storage_.template write<std::array<E, N>>(index_, offset_, in);
    return *this;
  }
  computed_array_ref const& operator=(computed_array_ref const& other) const requires(!Const) {
    return *this = static_cast<std::array<E, N>>(other);
  }

  // Swaps the values, each array read and written whole (detail::swap_note says why two swaps).
  friend void swap(computed_array_ref const& a, computed_array_ref const& b) requires(!Const) { swap_values(a, b); }
  friend void swap(computed_array_ref& a, computed_array_ref& b) requires(!Const) { swap_values(a, b); }

 private:
  static void swap_values(computed_array_ref const& a, computed_array_ref const& b) {
    std::array<E, N> const held = a;
    a = static_cast<std::array<E, N>>(b);
    b = held;
  }

  Storage storage_;
  std::size_t index_;
  std::size_t offset_;
};

}  // namespace detail

namespace detail {

// Address of sub-column j of root leaf `leaf` (element type E) for element `index`.
template <class Root, class E, class Storage, class Node>
COALESCE_HOST_DEVICE COALESCE_INLINE E* leaf_pointer(Storage const& storage, std::size_t index, Node node,
                                                     std::size_t j) {
  if constexpr (is_static_node<Node>) {
    return storage.template leaf_address<Node::first(), E>(index, j);
  } else {
#if !COALESCE_IN_DEVICE_CODE
    // Host code: index the leaf directly (a chain of selects defeats g++'s vectorizer).
    return storage.template leaf_address_at<E>(node.first(), index, j);
#endif
    return select_index<reflect::leaf_count_v<Root>, E*>(
        node.first(), [&]<std::size_t L>() COALESCE_INLINE_LAMBDA -> E* {
          if constexpr (std::is_same_v<typename reflect::leaf_t<Root, L>::type, std::remove_const_t<E>> ||
                        std::is_same_v<std::remove_const_t<E>, std::byte>) {
            return storage.template leaf_address<L, E>(index, j);
          } else {
            return nullptr;
          }
        });
  }
}

// True for a static node whose first leaf keeps its own type in Layout.
template <class Root, class Layout, class Node> constexpr bool natural_static_node() {
  if constexpr (is_static_node<Node>) {
    return layout_storage<Root, Layout>::natural(Node::first());
  } else {
    return false;
  }
}

// True when Layout stores some std::array leaf of Root of type M in another format: only then may
// a member of type M found at run time need a converting reference.
template <class Root, class Layout, class M> constexpr bool converted_array_like() {
  if constexpr (!layout_storage<Root, Layout>::converts || reflect::kind_v<M> != reflect::node_kind::array) {
    return false;
  } else {
    return []<std::size_t... L>(std::index_sequence<L...>) {
      return ((std::is_same_v<typename reflect::leaf_t<Root, L>::type, typename M::value_type> &&
               reflect::leaf_t<Root, L>::extent == std::tuple_size_v<M> && !layout_storage<Root, Layout>::natural(L)) ||
              ...);
    }
    (std::make_index_sequence<reflect::leaf_count_v<Root>>{});
  }
}

// What member access yields for a member of type M at `node`.
template <class Root, class Layout, class M, class Node, bool Const, class Storage>
COALESCE_HOST_DEVICE COALESCE_INLINE decltype(auto) member_access(Storage const& storage, std::size_t index,
                                                                  Node node) {
  constexpr reflect::node_kind kind = reflect::kind_v<M>;
  if constexpr (computed_storage<Storage>()) {  // every access goes through the storage
    if constexpr (kind == reflect::node_kind::aggregate) {
      return reference<Root, Layout, M, Node, Const, Storage>(storage, index, node);
    } else if constexpr (kind == reflect::node_kind::array) {
      return computed_array_ref<Storage, typename M::value_type, std::tuple_size_v<M>, Const>(storage, index,
                                                                                              node.offset());
    } else {
      return computed_ref<Storage, M, Const>(storage, index, node.offset());
    }
  } else if constexpr (kind == reflect::node_kind::aggregate) {
    if constexpr (is_static_node<Node>) {  // a nested proxy holds its own leaves' pointers only
      using child = child_storage_t<Storage, Node::first(), reflect::leaf_count_v<M>>;
      return reference<Root, Layout, M, Node, Const, child>(narrow_storage<child>(storage), index, node);
    } else {
      return reference<Root, Layout, M, Node, Const, Storage>(storage, index, node);
    }
  } else if constexpr (kind == reflect::node_kind::array && converted_array_like<Root, Layout, M>() &&
                       !natural_static_node<Root, Layout, Node>()) {
    // A std::array leaf stored in another format (or found at run time, by member pointer, in a
    // layout that stores some array of this type in another format: its format is then a value).
    using C = typename M::value_type;
    using B = maybe_const<Const, std::byte>;
    std::size_t const leaf = [&] {
      if constexpr (is_static_node<Node>) {
        return Node::first();
      } else {
        return node.first();
      }
    }();
    B* const first = leaf_pointer<Root, B>(storage, index, node, 0);
    auto const step = static_cast<std::size_t>(leaf_pointer<Root, B>(storage, index, node, 1) - first);
    return stored_array_ref<C, std::tuple_size_v<M>, Const>(first, step, storage.format_at(leaf));
  } else if constexpr (kind == reflect::node_kind::array) {
    using E = maybe_const<Const, typename M::value_type>;
    E* first = leaf_pointer<Root, E>(storage, index, node, 0);
    std::size_t step =
        static_cast<std::size_t>(reinterpret_cast<std::byte const*>(leaf_pointer<Root, E>(storage, index, node, 1)) -
                                 reinterpret_cast<std::byte const*>(first));
    return array_ref<E, std::tuple_size_v<M>>(first, step);
  } else if constexpr (!layout_storage<Root, Layout>::converts) {
    return *leaf_pointer<Root, maybe_const<Const, M>>(storage, index, node, 0);
  } else if constexpr (is_static_node<Node>) {
    if constexpr (layout_storage<Root, Layout>::natural(Node::first())) {
      return *leaf_pointer<Root, maybe_const<Const, M>>(storage, index, node, 0);
    } else {
      return stored_ref<M, Const>(leaf_pointer<Root, maybe_const<Const, std::byte>>(storage, index, node, 0),
                                  storage.format_at(Node::first()));
    }
  } else {
    // Found at run time (by member pointer): the leaf's format is a value, a constant once the
    // member pointer is one.
    return stored_ref<M, Const>(leaf_pointer<Root, maybe_const<Const, std::byte>>(storage, index, node, 0),
                                storage.format_at(node.first()));
  }
}

}  // namespace detail

template <class Root, class Layout, class U, class Node, bool Const, class Storage = layout_storage<Root, Layout>>
class reference {
  using storage_type = Storage;
  using info = reflect::members<U>;

 public:
  using value_type = U;  // what the proxy loads and stores: the element type, or a nested struct's type

  // The storage is taken by value: g++ then keeps the copy in registers; copied from a
  // reference it kept the proxy in memory and reloaded the column pointers every iteration,
  // which stopped host loops from vectorizing.
  COALESCE_HOST_DEVICE COALESCE_INLINE reference(storage_type storage, std::size_t index, Node node = {})
      : storage_(storage), index_(index), node_(node) {}
  // A copy names the same element; assignment writes through it instead (a proxy never rebinds).
  reference(reference const&) = default;

  // Load: the whole record (or nested struct) into registers; where the mapping stores it whole,
  // as one load (a vector load when its slot allows).
  COALESCE_HOST_DEVICE COALESCE_INLINE operator U() const {
    if constexpr (detail::computed_storage<Storage>()) {
      return storage_.template read<U>(index_, node_.offset());  // the whole struct: one access
    } else if constexpr (detail::is_static_node<Node>) {
      constexpr node_slot slot = storage_type::template node<Node::first(), reflect::leaf_count_v<U>>();
      if constexpr (slot.alignment != 0 && slot.bytes >= sizeof(U) && natural_node(Node::first())) {
        return detail::load_packed<U, slot.alignment, slot.bytes>(
            storage_.template leaf_address<Node::first(), std::byte const>(index_, 0));
      } else {
        return load_members();
      }
    } else {
#if COALESCE_IN_DEVICE_CODE
      // A struct found by member pointer: its first leaf is a constant once inlined, so the
      // select below folds to the one static node it names.
      return detail::select_index<reflect::leaf_count_v<Root>, U>(
          node_.first(), [&]<std::size_t F>() COALESCE_INLINE_LAMBDA -> U {
            if constexpr (detail::node_fits<Root, U, F>()) {
              return reference<Root, Layout, U, static_node<F, reflect::leaf_table_v<Root>[F].offset>, Const, Storage>(
                  storage_, index_);
            } else {
              return U{};
            }
          });
#else
      return load_members();             // host code: a chain of selects would defeat the vectorizer
#endif
    }
  }

  // Store: writes every leaf of the struct, nothing else. A proxy never rebinds.
  COALESCE_HOST_DEVICE COALESCE_INLINE reference const& operator=(U const& value) const requires(!Const) {
    constexpr node_slot slot = [] {
      if constexpr (detail::is_static_node<Node> && !detail::computed_storage<Storage>()) {
        return natural_node(Node::first()) ? storage_type::template node<Node::first(), reflect::leaf_count_v<U>>()
                                           : node_slot{};
      } else {
        return node_slot{};
      }
    }();
    if constexpr (detail::computed_storage<Storage>()) {
      storage_.template write<U>(index_, node_.offset(), value);  // the whole struct: one access
    } else if constexpr (slot.alignment != 0 && slot.bytes >= sizeof(U)) {
      *storage_.template leaf_address<Node::first(), U>(index_, 0) = value;
    } else if constexpr (storage_type::converts) {
      store_members(value);  // member by member, each leaf through its format
    } else {
      auto const* bytes = reinterpret_cast<std::byte const*>(&value);
      for_each_leaf([&]<class E>(E* element, std::size_t relative)
                        COALESCE_INLINE_LAMBDA { *element = *reinterpret_cast<E const*>(bytes + relative); });
    }
    return *this;
  }
  // Copies the value `other` names: a load of that element, then a store into this one.
  COALESCE_HOST_DEVICE reference const& operator=(reference const& other) const requires(!Const) {
    return *this = static_cast<U>(other);
  }
  // The same from a proxy of the same U in another view, layout or constness (a copy between layouts).
  template <class R2, class L2, class N2, bool C2, class S2>
  COALESCE_HOST_DEVICE reference const& operator=(reference<R2, L2, U, N2, C2, S2> const& other) const
      requires(!Const) {
    return *this = static_cast<U>(other);
  }

  // Member K: U_K& for a leaf, array_ref for a std::array leaf, a nested proxy for a struct.
  template <std::size_t K> COALESCE_HOST_DEVICE COALESCE_INLINE decltype(auto) get() const {
    using M = typename info::template type<K>;
    constexpr std::size_t first_of_member = reflect::first_leaf_of_member<U, K>();
    if constexpr (detail::is_static_node<Node>) {
      using child = static_node<Node::first() + first_of_member, Node::offset() + info::offsets[K]>;
#if COALESCE_IN_DEVICE_CODE
      // A leaf of a struct stored whole in an aligned slot (a split's 16-byte position): its address
      // from the slot's, with the slot's alignment stated, so that the compiler may merge the
      // loads and stores of neighbouring leaves bound by reference (x and y: one 8-byte access)
      // instead of one 4-byte access per leaf at the slot's stride.
      constexpr node_slot slot = [] {
        if constexpr (reflect::kind_v<M> == reflect::node_kind::leaf && natural_node(Node::first())) {
          return storage_type::template node<Node::first(), reflect::leaf_count_v<U>>();
        } else {
          return node_slot{};
        }
      }();
      if constexpr (slot.alignment >= 8 && slot.bytes >= sizeof(U)) {
        using B = detail::maybe_const<Const, std::byte>;
        auto* const base = static_cast<B*>(
            __builtin_assume_aligned(storage_.template leaf_address<Node::first(), B>(index_, 0), slot.alignment));
        return *reinterpret_cast<detail::maybe_const<Const, M>*>(base + info::offsets[K]);
      } else {
        return (detail::member_access<Root, Layout, M, child, Const>(storage_, index_, child{}));
      }
#else
      return (detail::member_access<Root, Layout, M, child, Const>(storage_, index_, child{}));
#endif
    } else {
      dynamic_node child{node_.first() + first_of_member, node_.offset() + info::offsets[K]};
      return (detail::member_access<Root, Layout, M, dynamic_node, Const>(storage_, index_, child));
    }
  }

  // Member by member pointer: v[i][&Particle::mass]. The member is found by its offset, which
  // folds to a constant when the member pointer is one.
  template <class M> COALESCE_HOST_DEVICE COALESCE_INLINE decltype(auto) operator[](M U::*member) const {
    std::size_t const offset = detail::member_offset(member);
    dynamic_node child{0, 0};
    bool found = false;
    [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
      (
          [&]() COALESCE_INLINE_LAMBDA {
            if constexpr (std::is_same_v<typename info::template type<K>, M>) {
              if (!found && info::offsets[K] == offset) {
                found = true;
                child = {node_.first() + reflect::first_leaf_of_member<U, K>(), node_.offset() + info::offsets[K]};
              }
            }
          }(),
          ...);
    }
    (std::make_index_sequence<info::count>{});
    if (!found) detail::fail_member_pointer();
    return (detail::member_access<Root, Layout, M, dynamic_node, Const>(storage_, index_, child));
  }

  // Member d of a struct whose leaves share one type, chosen at run time: v[i][&P::pos][d] for the
  // x, y or z of a vec3 (a loop over dimensions, a communication buffer by component).
  template <class I>
  requires(std::is_integral_v<I>&& detail::uniform_leaves<U>()) COALESCE_HOST_DEVICE COALESCE_INLINE decltype(auto)
  operator[](I d) const {
    using M = typename reflect::leaf_t<U, 0>::type;
    std::size_t offset = 0;  // read by a computed storage only (the others find a leaf by its index)
    if constexpr (detail::computed_storage<Storage>()) {
      storage_.check_subscript(static_cast<std::size_t>(d), reflect::leaf_count_v<U>, false);  // in every build
      offset = node_.offset() + reflect::leaf_table_v<U>[static_cast<std::size_t>(d)].offset;
    } else {
      detail::check_index(static_cast<std::size_t>(d), reflect::leaf_count_v<U>);
    }
    std::size_t first = 0;
    if constexpr (detail::is_static_node<Node>) {
      first = Node::first();
    } else {
      first = node_.first();
    }
    return (detail::member_access<Root, Layout, M, dynamic_node, Const>(
        storage_, index_, dynamic_node{first + static_cast<std::size_t>(d), offset}));
  }

  // Swaps the values (detail::swap_note says why a proxy has two swaps).
  friend COALESCE_HOST_DEVICE void swap(reference const& a, reference const& b) requires(!Const) { swap_values(a, b); }
  // The same for named proxies (structured bindings, `auto pos = v[i][&P::pos]`).
  friend COALESCE_HOST_DEVICE void swap(reference& a, reference& b) requires(!Const) { swap_values(a, b); }

 private:
  COALESCE_HOST_DEVICE static void swap_values(reference const& a, reference const& b) {
    U tmp = a;
    a = static_cast<U>(b);
    b = tmp;
  }

  // True when leaves [first, first + leaves of U) are stored as their own types (so the struct
  // may be loaded and stored as bytes).
  static constexpr bool natural_node(std::size_t first) {
    for (std::size_t l = first; l < first + reflect::leaf_count_v<U>; ++l)
      if (!storage_type::natural(l)) return false;
    return true;
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE void store_members(U const& value) const {
    auto const* bytes = reinterpret_cast<std::byte const*>(&value);
    [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
      ((get<K>() = *reinterpret_cast<typename info::template type<K> const*>(bytes + info::offsets[K])), ...);
    }
    (std::make_index_sequence<info::count>{});
  }

  // Member-wise aggregate initialization: values go straight to registers, which optimizers
  // (and vectorizers) handle better than bytes written into a local.
  COALESCE_HOST_DEVICE COALESCE_INLINE U load_members() const {
    return [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
      return U{static_cast<typename info::template type<K>>(get<K>())...};
    }
    (std::make_index_sequence<info::count>{});
  }

  // Calls f(pointer to the element in its column, byte offset of that element inside U) for
  // every leaf of U and every sub-column of array leaves.
  template <class F> COALESCE_HOST_DEVICE COALESCE_INLINE void for_each_leaf(F&& f) const {
    [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA { (visit_leaf<K>(f), ...); }
    (std::make_index_sequence<reflect::leaf_count_v<U>>{});
  }
  template <std::size_t K, class F> COALESCE_HOST_DEVICE COALESCE_INLINE void visit_leaf(F& f) const {
    using entry = reflect::leaf_t<U, K>;
    using E = detail::maybe_const<Const, typename entry::type>;
    auto const leaf_node = [&]() COALESCE_INLINE_LAMBDA {
      if constexpr (detail::is_static_node<Node>) {
        return static_node<Node::first() + K, 0>{};
      } else {
        return dynamic_node{node_.first() + K, 0};
      }
    }();
    for (std::size_t j = 0; j < entry::extent; ++j) {
      f(detail::leaf_pointer<Root, E>(storage_, index_, leaf_node, j), entry::offset + j * sizeof(E));
    }
  }

  storage_type storage_;
  std::size_t index_;
  [[no_unique_address]] Node node_;
};

}  // namespace coalesce

// (The two std specializations are hidden from the API reference: doxygen 1.9 cannot place a
// class of namespace std declared outside it and warns.)
// @cond
// Structured bindings: auto [pos, vel, mass, id] = v[i];
template <class Root, class Layout, class U, class Node, bool Const, class Storage>
struct std::tuple_size<coalesce::reference<Root, Layout, U, Node, Const, Storage>>
    : std::integral_constant<std::size_t, coalesce::reflect::members<U>::count> {};

// Structured bindings: the type of member K's binding.
template <std::size_t K, class Root, class Layout, class U, class Node, bool Const, class Storage>
struct std::tuple_element<K, coalesce::reference<Root, Layout, U, Node, Const, Storage>> {
  // What get<K>() returns: a reference to a leaf, an array_ref, a stored_ref or a nested proxy.
  using type =
      decltype(std::declval<coalesce::reference<Root, Layout, U, Node, Const, Storage> const&>().template get<K>());
};
// @endcond
