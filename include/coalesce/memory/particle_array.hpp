// coalesce/memory/particle_array.hpp - what "an array that follows the particles" means: one
// traits class for every container that reorder (apply), coalesce::mpi (migrate, forward,
// reverse) and the neighbour lists accept, so each of them asks the same questions the same way.
//
//   std::vector<float> charge(100, 1.0f);
//   static_assert(coalesce::particle_array<std::vector<float>>);
//   static_assert(coalesce::particle_array<coalesce::device_vector<float>>);
//   using traits = coalesce::particle_array_traits<std::vector<float>>;
//   static_assert(std::is_same_v<traits::space, coalesce::host> && traits::resizable);
//   std::size_t n = traits::size(charge);                        // 100
//
// The four shapes: coalesce::vector<T, Layout, Space> (records in a mapping), coalesce::array<U,
// Space> and std::vector<U> (contiguous elements; std::vector is host memory) and span_in<U,
// Space> (device_span, host_span: memory the caller owns, of fixed size). A type that is none of
// them is refused by the calls that take arrays with one message that lists these four.
#pragma once
#include <cstddef>
#include <type_traits>
#include <vector>

#include "array.hpp"
#include "index_arrays.hpp"
#include "space.hpp"
#include "vector.hpp"

namespace coalesce {

// Undefined for anything that is not a per-particle array (see particle_array below).
template <class A> struct particle_array_traits;

// A coalesce::vector: one record of T per particle, stored as layout L.
template <class T, class L, class S> struct particle_array_traits<vector<T, L, S>> {
  using element_type = T;                    // one particle's entry
  using space = S;                           // where the memory lives: host or device
  static constexpr bool contiguous = false;  // records in the vector's mapping: moved column by column
  static constexpr bool owned = true;        // its memory is the container's (no pointer to check)
  static constexpr bool resizable = true;    // a migration may change its particle count
  static std::size_t size(vector<T, L, S> const& a) { return a.size(); }  // particles held
  // Keeps the first min(n, size) records, new ones T{}; on the default stream, done when it returns.
  static void resize(vector<T, L, S>& a, std::size_t n) { a.resize(n); }
  // Growth whose new elements the caller writes next (no fill).
  static void resize_for_overwrite(vector<T, L, S>& a, std::size_t n) { a.resize_for_overwrite(n); }
};

// A coalesce::array: one plain value per particle, back to back.
template <class U, class S> struct particle_array_traits<array<U, S>> {
  using element_type = U;                   // one particle's value
  using space = S;                          // where the memory lives: host or device
  static constexpr bool contiguous = true;  // values back to back: moved as plain memory from data()
  static constexpr bool owned = true;       // its memory is the container's (no pointer to check)
  static constexpr bool resizable = true;   // a migration may change its particle count
  static std::size_t size(array<U, S> const& a) { return a.size(); }  // values held
  static U* data(array<U, S>& a) { return a.data(); }                 // the values, in `space`'s memory
  // Keeps the first min(n, size) values, new ones zero; on the default stream, done when it returns.
  static void resize(array<U, S>& a, std::size_t n) { a.resize(n); }
  // The same as resize: an array always zero-fills what it grows by.
  static void resize_for_overwrite(array<U, S>& a, std::size_t n) { a.resize(n); }
};

// A std::vector: one plain value per particle, in host memory.
template <class U, class A> struct particle_array_traits<std::vector<U, A>> {
  using element_type = U;                   // one particle's value
  using space = host;                       // a std::vector's memory is host memory
  static constexpr bool contiguous = true;  // values back to back: moved as plain memory from data()
  static constexpr bool owned = true;       // its memory is the container's (no pointer to check)
  static constexpr bool resizable = true;   // a migration may change its particle count
  static std::size_t size(std::vector<U, A> const& a) { return a.size(); }  // values held
  static U* data(std::vector<U, A>& a) { return a.data(); }                 // the values, in host memory
  // std::vector::resize: new values are value-initialised.
  static void resize(std::vector<U, A>& a, std::size_t n) { a.resize(n); }
  // The same as resize: a std::vector always initialises what it grows by.
  static void resize_for_overwrite(std::vector<U, A>& a, std::size_t n) { a.resize(n); }
};

// Memory the caller owns: its pointer may name the wrong memory (checked where it is used), and
// it cannot grow, so a migration (which changes the particle count) refuses it.
template <class U, class S> struct particle_array_traits<span_in<U, S>> {
  using element_type = U;                   // one particle's value
  using space = S;                          // the memory the caller says the pointer is in
  static constexpr bool contiguous = true;  // values back to back: moved as plain memory from data()
  static constexpr bool owned = false;      // the caller's memory: the pointer is checked against `space`
  static constexpr bool resizable = false;  // fixed size: a migration refuses it
  static std::size_t size(span_in<U, S> const& a) { return a.size; }  // values in the range
  static U* data(span_in<U, S> a) { return a.data; }                  // the caller's pointer
};

// True for the four shapes above (references and const stripped).
template <class A>
concept particle_array = requires {
  typename particle_array_traits<std::remove_cvref_t<A>>::element_type;
};

namespace detail {
template <class A> using array_traits = particle_array_traits<std::remove_cvref_t<A>>;
template <class A> inline constexpr memory_kind memory_of_array = kind_of_space<typename array_traits<A>::space>;
template <class A> using element_of_array = typename array_traits<A>::element_type;

// The one refusal every call that takes per-particle arrays gives for another type.
template <class A> constexpr void check_particle_array() {
  static_assert(particle_array<A>,
                "coalesce: this argument is not a per-particle array; pass a coalesce::vector, a coalesce::array, a "
                "span_in (device_span, host_span) over your memory, or a std::vector (host memory) "
                "(coalesce/memory/particle_array.hpp)");
}
// Its element count, or the refusal above for another type.
template <class A> std::size_t particle_count(A const& a) {
  check_particle_array<A>();
  return array_traits<A>::size(a);
}
}  // namespace detail

}  // namespace coalesce
