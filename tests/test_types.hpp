// Element types shared by the tests: nested structs, arrays, every leaf width, odd sizes.
#pragma once
#include <algorithm>
#include <array>
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <coalesce/coalesce.hpp>

namespace coalesce_test {

// A vector's (or array's) elements copied out in order, as records of T (by default its element
// type): what the tests compare, whatever the layout, stored formats and memory.
template <class T = void, class V> auto records_of(V const& v) {
  using E = std::conditional_t<std::is_void_v<T>, typename V::value_type, T>;
  std::vector<E> out(v.size());
  v.copy_to(out);
  return out;
}

struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};

enum class species : std::uint8_t { electron, ion };

// Every leaf width (1, 2, 4, 8, 16 via an opaque type, 12 via an array of structs kept whole),
// a std::array leaf, padding between members.
struct Opaque16 {
  Opaque16() = default;  // a class with a constructor: stored whole, not reflected
  std::uint64_t lo, hi;
};
struct Mixed {
  species kind;
  std::int16_t charge;
  double energy;
  std::array<std::uint8_t, 3> flags;
  vec3 force;
  Opaque16 tag;
  std::array<vec3, 1> wrapped;
  std::int64_t cell;
};

// Padding inside the record (4 bytes after a, 4 after c): conversions to aos must not need it.
struct Padded {
  float a;
  double b;
  float c;
};
// Larger than one shared-memory tile row (164 bytes): the generic conversion path.
struct Big {
  std::array<float, 40> samples;
  std::int32_t id;
};

inline Padded make_padded(std::size_t i) {
  return {static_cast<float>(i) * 3.0f, -1.0 / (1.0 + static_cast<double>(i)), 0.25f};
}
inline Big make_big(std::size_t i) {
  Big b{};
  for (std::size_t k = 0; k < b.samples.size(); ++k) b.samples[k] = static_cast<float>(i * 40 + k);
  b.id = static_cast<std::int32_t>(i);
  return b;
}

template <class T> bool same_bytes(T const& a, T const& b) {
  // Compare leaf by leaf (padding bytes are not part of the value).
  constexpr auto table = coalesce::reflect::leaf_table_v<T>;
  for (auto const& leaf : table) {
    if (std::memcmp(reinterpret_cast<char const*>(&a) + leaf.offset, reinterpret_cast<char const*>(&b) + leaf.offset,
                    leaf.size * leaf.extent) != 0) {
      return false;
    }
  }
  return true;
}
// Two lists of records, element by element.
template <class T> bool same_bytes(std::vector<T> const& a, std::vector<T> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_bytes(a[i], b[i])) return false;
  }
  return true;
}

inline Particle make_particle(std::size_t i) {
  float const f = static_cast<float>(i);
  return {{f, 2 * f + 0.5f, -f},
          {0.25f * f, 1.0f, -0.5f * f},
          1.0f + f / 7.0f,
          static_cast<std::uint32_t>(i * 2654435761u)};
}

inline Mixed make_mixed(std::size_t i) {
  Mixed m{};
  m.kind = (i % 2) ? species::ion : species::electron;
  m.charge = static_cast<std::int16_t>(i * 7 - 300);
  m.energy = 1.0 / (1.0 + static_cast<double>(i));
  m.flags = {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i >> 8), 0xA5};
  m.force = {static_cast<float>(i) * 0.5f, -1.0f, 3.0f};
  m.tag.lo = i * 0x9E3779B97F4A7C15ull;
  m.tag.hi = ~i;
  m.wrapped = {vec3{1.0f, static_cast<float>(i), 2.0f}};
  m.cell = -static_cast<std::int64_t>(i) * 1000003;
  return m;
}

// The test suite's own mapping, written against the documented concept (docs/layouts.md): every
// leaf a column, all in one blob, in reverse member order, sub-columns of std::array leaves
// back to back. One blob with capacity-dependent offsets: unlike every built-in layout.
struct reversed_columns {
  static std::string name() { return "reversed_columns"; }
  template <class Shape> struct mapping {
    static constexpr std::size_t blob_count = 1;
    static constexpr std::size_t blob_of(std::size_t) { return 0; }
    constexpr mapping() = default;
    COALESCE_HOST_DEVICE constexpr explicit mapping(std::size_t capacity) : capacity_(capacity) {}
    std::size_t capacity() const { return capacity_; }
    std::size_t blob_bytes(std::size_t) const { return start(0) + Shape::leaves[0].extent * pitch(0); }
    COALESCE_HOST_DEVICE constexpr coalesce::column_place place(std::size_t leaf, std::size_t sub) const {
      return {start(leaf) + sub * pitch(leaf), Shape::leaf(leaf).size, 0, 0};
    }

   private:
    COALESCE_HOST_DEVICE constexpr std::size_t pitch(std::size_t leaf) const {
      return (capacity_ * Shape::leaf(leaf).size + 15) / 16 * 16;  // keeps every column 16-byte aligned
    }
    COALESCE_HOST_DEVICE constexpr std::size_t start(std::size_t leaf) const {  // after the leaves that follow it
      std::size_t offset = 0;
      for (std::size_t k = Shape::count; k-- > leaf + 1;) offset += Shape::leaf(k).extent * pitch(k);
      return offset;
    }
    std::size_t capacity_ = 0;
  };
};

// Splits written once for every test type (member indices, not member pointers): the first
// member packed (padded) with the rest as columns; and a nested one: members 0 and 1 as a group
// that is itself split (member 1 records, member 0 in blocks of 4), the rest unpadded records.
using split_first = coalesce::split<coalesce::member_indices<0>, coalesce::aos, coalesce::soa>;
using split_nested = coalesce::split<coalesce::member_indices<0, 1>,
                                     coalesce::split<coalesce::member_indices<1>, coalesce::aos, coalesce::aosoa<4>>,
                                     coalesce::aos, coalesce::unpadded>;

// Every layout the suites run on.
#define COALESCE_ALL_LAYOUTS                                                                        \
  coalesce::aos, coalesce::soa, coalesce::aosoa<8>, coalesce::aosoa<6>, coalesce_test::split_first, \
      coalesce_test::split_nested, coalesce_test::reversed_columns

// An array in the memory of Space, filled from / read back to the host (index lists, extra
// per-particle arrays in the reorder and stream tests).
template <class U, class S> struct space_array {
  static constexpr coalesce::detail::memory_kind kind = coalesce::detail::kind_of_space<S>;
  coalesce::detail::buffer memory;
  std::size_t n = 0;
  explicit space_array(std::vector<U> const& values)
      : memory(kind, std::max<std::size_t>(values.size(), 1) * sizeof(U)), n(values.size()) {
    coalesce::detail::copy_bytes(kind, memory.data(), coalesce::detail::memory_kind::host, values.data(),
                                 n * sizeof(U));
  }
  U* data() { return reinterpret_cast<U*>(memory.data()); }
  coalesce::span_in<U, S> span() { return {data(), n}; }
  std::vector<U> read() const {
    std::vector<U> out(n);
    coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, out.data(), kind, memory.data(), n * sizeof(U));
    return out;
  }
};

}  // namespace coalesce_test
