// coalesce::vector on every layout and space: what a std::vector / thrust::device_vector user expects,
// and bit-exact round trips through every layout and space.
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_suites.hpp"
#include "test_types.hpp"

using namespace coalesce_test;

template <class L, class S> struct config {
  using layout = L;
  using space = S;
};
#define COALESCE_TEST_CONFIGS                                                                 \
  config<coalesce::aos, coalesce::host>, config<coalesce::soa, coalesce::host>,               \
      config<coalesce::aosoa<8>, coalesce::host>, config<coalesce::aosoa<6>, coalesce::host>, \
      config<split_first, coalesce::host>, config<split_nested, coalesce::host>,              \
      config<reversed_columns, coalesce::host>, config<coalesce::aos, coalesce::device>,      \
      config<coalesce::soa, coalesce::device>, config<coalesce::aosoa<32>, coalesce::device>, \
      config<split_nested, coalesce::device>

using coalesce_test::records_of;

template <class T> std::vector<T> make_records(std::size_t n, T (*make)(std::size_t)) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = make(i);
  return out;
}

template <class T> bool all_same(std::vector<T> const& a, std::vector<T> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_bytes(a[i], b[i])) return false;
  }
  return true;
}

TEST_CASE_TEMPLATE("construction: size, size and value, AoS records", C, COALESCE_TEST_CONFIGS) {
  using vec = coalesce::vector<Particle, typename C::layout, typename C::space>;
  vec empty;
  CHECK(empty.size() == 0);
  CHECK(empty.empty());
  CHECK(records_of<Particle>(empty).empty());

  vec zeros(5);
  for (auto const& p : records_of<Particle>(zeros)) CHECK(same_bytes(p, Particle{}));

  Particle const value = make_particle(3);
  vec filled(41, value);
  CHECK(filled.size() == 41);
  for (auto const& p : records_of<Particle>(filled)) CHECK(same_bytes(p, value));

  auto const legacy = make_records<Particle>(45, make_particle);
  vec from_legacy{std::span<Particle const>(legacy)};
  CHECK(all_same(records_of<Particle>(from_legacy), legacy));
}

TEST_CASE_TEMPLATE("copy, move, swap", C, COALESCE_TEST_CONFIGS) {
  using vec = coalesce::vector<Particle, typename C::layout, typename C::space>;
  auto const legacy = make_records<Particle>(20, make_particle);
  vec a{std::span<Particle const>(legacy)};
  vec b = a;
  CHECK(all_same(records_of<Particle>(b), legacy));
  vec c = std::move(a);
  CHECK(c.size() == 20);
  CHECK(a.empty());
  vec d(3);
  d = c;
  CHECK(all_same(records_of<Particle>(d), legacy));
  vec e(2);
  swap(d, e);
  CHECK(d.size() == 2);
  CHECK(all_same(records_of<Particle>(e), legacy));
  e = vec{};
  CHECK(e.empty());
}

TEST_CASE_TEMPLATE("reserve, resize, shrink_to_fit and clear keep the elements", C, COALESCE_TEST_CONFIGS) {
  using vec = coalesce::vector<Particle, typename C::layout, typename C::space>;
  auto legacy = make_records<Particle>(33, make_particle);
  vec v{std::span<Particle const>(legacy)};
  v.reserve(1000);
  CHECK(v.capacity() >= 1000);
  CHECK(all_same(records_of<Particle>(v), legacy));
  Particle const filler = make_particle(999);
  v.resize(40, filler);
  legacy.resize(40, filler);
  CHECK(all_same(records_of<Particle>(v), legacy));
  v.resize(10);
  legacy.resize(10);
  CHECK(all_same(records_of<Particle>(v), legacy));
  v.shrink_to_fit();
  CHECK(v.capacity() == 10);
  CHECK(all_same(records_of<Particle>(v), legacy));
  v.resize(12);
  legacy.resize(12, Particle{});
  CHECK(all_same(records_of<Particle>(v), legacy));
  v.clear();
  CHECK(v.empty());
  CHECK(v.capacity() >= 12);
}

TEST_CASE_TEMPLATE("push_back grows a host vector", Layout, coalesce::aos, coalesce::soa, coalesce::aosoa<16>) {
  coalesce::host_vector<Particle, Layout> v;
  std::vector<Particle> want;
  for (std::size_t i = 0; i < 100; ++i) {
    v.push_back(make_particle(i));
    want.push_back(make_particle(i));
  }
  CHECK(v.size() == 100);
  CHECK(all_same(records_of<Particle>(v), want));
  v.pop_back();
  CHECK(v.size() == 99);
  coalesce::host_vector<Particle, Layout> none;
  CHECK_THROWS_WITH_AS(none.pop_back(), doctest::Contains("empty"), coalesce::error);
}

// Every byte of the blocks in use that no element's leaf covers (alignment gaps, the unused lanes
// of the last block) must have been written (zeros, or an element that was there before a
// shrink): copies move blocks whole. Such gaps are zeroed as elements come into use, not at
// allocation; the heap is dirtied first with a word no element holds, and no gap may show it.
// (Records stored whole, aos, carry the padding of the value stored.)
constexpr std::uint32_t dirt = 0xa5a5a5a5u;
template <class T, class Layout> bool gaps_are_written(coalesce::host_vector<T, Layout> const& v) {
  using storage = coalesce::layout_storage<T, Layout>;
  auto const s = v.storage();
  for (std::size_t b = 0; b < storage::blob_count; ++b) {
    if (!coalesce::detail::gaps_in_element_order(s, b) || v.size() == 0) continue;
    if (s.map.place(storage::first_leaf_of_blob(b), 0).block == 0) continue;  // records: see above
    std::size_t const end = coalesce::detail::element_units_end(s, b, v.size());
    std::vector<bool> covered(end, false);
    coalesce::reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
      if (storage::mapping_type::blob_of(l) != b) return;
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::size_t const at = s.map.place(l, j).at(i);
        for (std::size_t k = 0; k < storage::leaf_bytes(l); ++k) covered[at + k] = true;
      }
    });
    for (std::size_t k = 0; k + 4 <= end; k += 4) {
      std::uint32_t word = 0;
      std::memcpy(&word, s.blobs[b] + k, 4);
      if (!covered[k] && word == dirt) return false;
    }
  }
  return true;
}
void dirty_the_heap() {
  for (std::size_t bytes : {512u, 2048u, 8192u, 32768u}) {
    auto* p = static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t{256}));
    std::memset(p, 0xa5, bytes);  // the word `dirt`
    ::operator delete[](p, std::align_val_t{256});
  }
}

TEST_CASE_TEMPLATE("gaps of blocks in use are written after every way of growing", Layout, coalesce::aosoa<8>,
                   coalesce::aosoa<6>, coalesce_test::split_nested) {
  coalesce::host_vector<Padded, Layout> v;
  for (std::size_t i = 0; i < 37; ++i) {  // push_back: growth by doubling, one element at a time
    dirty_the_heap();
    v.push_back(make_padded(i));
    CHECK(gaps_are_written(v));
  }
  dirty_the_heap();
  v.resize(100, make_padded(7));  // growth past the doubled capacity, then a fill
  CHECK(gaps_are_written(v));
  v.resize(3);
  v.resize(50);  // shrink, then grow again inside the capacity: the earlier elements' blocks
  CHECK(gaps_are_written(v));
  dirty_the_heap();
  v.reserve(500);
  v.resize(499);
  CHECK(gaps_are_written(v));
  dirty_the_heap();
  coalesce::host_vector<Padded, Layout> copy(v);
  CHECK(gaps_are_written(copy));
  dirty_the_heap();
  std::vector<Padded> records(21);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_padded(i);
  coalesce::host_vector<Padded, Layout> from_records{std::span<Padded const>(records)};
  CHECK(gaps_are_written(from_records));
  coalesce::host_vector<Padded, Layout> filled(13, make_padded(3));
  CHECK(gaps_are_written(filled));
  copy.assign(from_records);
  CHECK(gaps_are_written(copy));
  v.shrink_to_fit();
  CHECK(gaps_are_written(v));
  std::vector<Padded> back(v.size());
  v.copy_to(back);
  CHECK(back[2].a == make_padded(2).a);
  CHECK(back[498].a == 0.0f);  // resize(n) appends value-initialized elements
  dirty_the_heap();
  v.resize_for_overwrite(1200);  // growth without the fill: the padding still written
  CHECK(gaps_are_written(v));
}

TEST_CASE_TEMPLATE("resize_for_overwrite keeps the elements, grows and shrinks like resize, writes no value", Layout,
                   coalesce::aos, coalesce::soa, coalesce::aosoa<16>, coalesce_test::split_nested) {
  std::vector<Padded> records(40);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_padded(i);
  coalesce::host_vector<Padded, Layout> v{std::span<Padded const>(records)};
  auto const capacity = v.capacity();
  v.resize_for_overwrite(5 * capacity + 3);  // past the capacity: the first 40 elements move
  REQUIRE(v.size() == 5 * capacity + 3);
  CHECK(v.capacity() >= v.size());
  std::vector<Padded> all(v.size());
  v.copy_to(all);
  for (std::size_t i = 0; i < records.size(); ++i) CHECK(all[i].a == records[i].a);
  // The new elements are the caller's to write: written, they read back.
  auto view = v.view();
  for (std::size_t i = 40; i < v.size(); ++i) view[i] = make_padded(i);
  v.copy_to(all);
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(all[i].a == make_padded(i).a);
  v.resize_for_overwrite(7);  // shrinking keeps the first elements
  REQUIRE(v.size() == 7);
  std::vector<Padded> seven(7);
  v.copy_to(seven);
  for (std::size_t i = 0; i < 7; ++i) CHECK(seven[i].a == records[i].a);
}

TEST_CASE("copy_to says what is wrong with the destination") {
  coalesce::host_vector<Particle> v(4);
  std::vector<Particle> small(3);
  CHECK_THROWS_WITH_AS(v.copy_to(small), doctest::Contains("exactly size() = 4 records, got 3"), coalesce::error);
}

TEST_CASE("columns of a soa vector start on 256-byte boundaries") {
  coalesce::host_vector<Mixed> v(13);
  auto const s = v.storage();
  for (std::size_t l = 0; l < coalesce::reflect::leaf_count_v<Mixed>; ++l) {
    CHECK(reinterpret_cast<std::uintptr_t>(s.blobs[l]) % 256 == 0);
  }
}

// Round trips: AoS records -> layout A in space S -> layout B in space S' -> AoS records, bit-exact.
template <class T, class LA, class SA, class LB, class SB> void round_trip(std::vector<T> const& records) {
  coalesce::vector<T, LA, SA> a{std::span<T const>(records)};
  coalesce::vector<T, LB, SB> b = a;
  coalesce::vector<T, LA, SA> back;
  back = b;
  INFO("n = " << records.size());
  CHECK(all_same(records_of<T>(b), records));
  CHECK(all_same(records_of<T>(back), records));
}

template <class T, class LA, class SA> void round_trip_all_targets(std::vector<T> const& records) {
  round_trip<T, LA, SA, coalesce::aos, coalesce::host>(records);
  round_trip<T, LA, SA, coalesce::soa, coalesce::host>(records);
  round_trip<T, LA, SA, coalesce::aosoa<32>, coalesce::host>(records);
  round_trip<T, LA, SA, coalesce::aosoa<6>, coalesce::host>(records);
  round_trip<T, LA, SA, split_first, coalesce::host>(records);
  round_trip<T, LA, SA, split_nested, coalesce::host>(records);
  round_trip<T, LA, SA, reversed_columns, coalesce::host>(records);
  round_trip<T, LA, SA, coalesce::aos, coalesce::device>(records);
  round_trip<T, LA, SA, coalesce::soa, coalesce::device>(records);
  round_trip<T, LA, SA, split_first, coalesce::device>(records);
}

TEST_CASE_TEMPLATE("round trips are bit-exact for every layout, space and awkward size", C, COALESCE_TEST_CONFIGS) {
  for (std::size_t n : {0u, 1u, 7u, 9u, 31u, 32u, 33u}) {
    round_trip_all_targets<Particle, typename C::layout, typename C::space>(make_records<Particle>(n, make_particle));
    round_trip_all_targets<Mixed, typename C::layout, typename C::space>(make_records<Mixed>(n, make_mixed));
    round_trip_all_targets<Padded, typename C::layout, typename C::space>(make_records<Padded>(n, make_padded));
    round_trip_all_targets<Big, typename C::layout, typename C::space>(make_records<Big>(n, make_big));
  }
}

TEST_CASE("round trips are bit-exact at about a million elements" * calibration) {
  std::size_t const n = 1000007;
  auto const particles = make_records<Particle>(n, make_particle);
  round_trip_all_targets<Particle, coalesce::aos, coalesce::device>(particles);
  round_trip_all_targets<Particle, coalesce::soa, coalesce::host>(particles);
  auto const mixed = make_records<Mixed>(n, make_mixed);
  round_trip_all_targets<Mixed, coalesce::aosoa<32>, coalesce::device>(mixed);
  auto const padded = make_records<Padded>(n, make_padded);
  round_trip_all_targets<Padded, coalesce::soa, coalesce::device>(padded);
}

TEST_CASE_TEMPLATE("sizes whose bytes would overflow are refused, not wrapped", Layout, coalesce::aos, coalesce::soa,
                   coalesce::aosoa<32>) {
  using vec = coalesce::host_vector<Particle, Layout>;
  CHECK(vec::max_size() > 1000000);
  CHECK(vec::max_size() < std::numeric_limits<std::size_t>::max() / sizeof(Particle));
  vec v(3);
  CHECK_THROWS_WITH_AS(v.reserve(vec::max_size() + 1), doctest::Contains("larger than max_size()"), coalesce::error);
  CHECK_THROWS_WITH_AS(v.reserve(std::numeric_limits<std::size_t>::max()), doctest::Contains("max_size()"),
                       coalesce::error);
  CHECK_THROWS_AS(vec(std::numeric_limits<std::size_t>::max() / 2), coalesce::error);
  CHECK(v.size() == 3);  // nothing changed
  CHECK(v.capacity() == 3);
}
