// Element types shared by the tests: nested structs, arrays, every leaf width, odd sizes.
#pragma once
#include <array>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <coalesce/coalesce.hpp>

namespace coalesce_test {

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

inline Padded make_padded(std::size_t i) { return {static_cast<float>(i) * 3.0f, -1.0 / (1.0 + static_cast<double>(i)), 0.25f}; }
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

inline Particle make_particle(std::size_t i) {
  float const f = static_cast<float>(i);
  return {{f, 2 * f + 0.5f, -f}, {0.25f * f, 1.0f, -0.5f * f}, 1.0f + f / 7.0f, static_cast<std::uint32_t>(i * 2654435761u)};
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

}  // namespace coalesce_test
