// Boost.PFR as the oracle of coalesce's own reflection (coalesce counts members itself because
// PFR's count failed under nvcc for one-member structs): for every host-side test type, the
// member count, each member's type and each member's byte offset must be what PFR says.
#include <doctest/doctest.h>

#include <boost/pfr.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace {

struct one_member {
  float mass;
};
struct nested_arrays {
  coalesce_test::vec3 pos;
  std::array<int, 5> counts;
  std::array<coalesce_test::vec3, 2> pair;
  double energy;
};
struct alignas(32) over_aligned {
  float a;
  double b;
};
struct with_padding {
  char c;
  double d;
  short s;
  int i;
};

template <class T> void agrees_with_pfr() {
  using ours = coalesce::reflect::members<T>;
  constexpr std::size_t count = boost::pfr::tuple_size_v<T>;
  CHECK(ours::count == count);
  T object{};
  auto const* base = reinterpret_cast<unsigned char const*>(&object);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    // Types: member K of ours is PFR's element K.
    bool const same_types = (std::is_same_v<typename ours::template type<K>, boost::pfr::tuple_element_t<K, T>> && ...);
    CHECK(same_types);
    // Offsets: where PFR's get<K> points inside the object.
    std::array<std::size_t, sizeof...(K)> const pfr_offsets{
        static_cast<std::size_t>(reinterpret_cast<unsigned char const*>(&boost::pfr::get<K>(object)) - base)...};
    for (std::size_t k = 0; k < sizeof...(K); ++k) {
      CAPTURE(k);
      CHECK(ours::offsets[k] == pfr_offsets[k]);
    }
  }
  (std::make_index_sequence<(ours::count == count ? count : 0)>{});
}

}  // namespace

TEST_CASE_TEMPLATE("coalesce's reflection agrees with Boost.PFR on member counts, types and offsets", T,
                   coalesce_test::vec3, coalesce_test::Particle, coalesce_test::Mixed, coalesce_test::Padded,
                   coalesce_test::Big, one_member, nested_arrays, over_aligned, with_padding) {
  agrees_with_pfr<T>();
}
