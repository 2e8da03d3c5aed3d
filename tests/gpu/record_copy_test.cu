// Conversions to and from aos records (and into a split layout's packed records): records of 8 to
// 32 bytes one per thread, held in registers and moved whole, or through the shared-memory tile
// and the per-element columns (coalesce::detail::set_per_thread_record_bytes picks); larger ones
// through the tile whatever the setting. Both paths must
// give the same records, bit for bit, for every record size and vector unit, at counts whose last
// record ends the allocation (the per-thread path must not touch bytes past the columns' window).
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

namespace {
struct r8 {  // 8-byte stores
  float a;
  std::int32_t b;
};
struct r12 {  // 4-byte stores
  float a, b, c;
};
struct r16 {  // one 16-byte store
  float x, y, z, w;
};
struct r24 {  // 8-byte stores; the double is two 4-byte sub-columns
  double d;
  float a, b;
  std::uint32_t c, e;
};
struct r32 {  // two 16-byte stores
  double a, b;
  float c, d, e, f;
};
struct r48 {  // larger records: the tile on both settings
  std::array<float, 12> f;
};
struct r64 {
  std::array<double, 4> a;
  std::array<std::int32_t, 8> b;
};
struct r60 {
  std::array<float, 15> f;
};
struct tagged {  // the 4-byte columns start 4 bytes into the record: a window of 12 of 16 bytes
  std::uint8_t tag;
  float a, b, c;
};

template <class R> R make_record(std::size_t i) {
  R r{};
  constexpr auto table = coalesce::reflect::leaf_table_v<R>;
  for (auto const& leaf : table) {
    auto* bytes = reinterpret_cast<unsigned char*>(&r) + leaf.offset;
    for (std::size_t b = 0; b < leaf.size * leaf.extent; ++b)
      bytes[b] = static_cast<unsigned char>(i * 131 + leaf.offset * 7 + b * 29 + 1);
  }
  return r;
}

template <class R> std::size_t mismatches(std::vector<R> const& got, std::vector<R> const& want) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += !same_bytes(got[i], want[i]);
  return bad;
}

// aos from soa and from aosoa<16>, and back from aos into both, on each path.
template <class R> void round_trips(std::size_t n) {
  std::vector<R> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_record<R>(i);
  coalesce::device_vector<R, coalesce::soa> soa(records);
  coalesce::device_vector<R, coalesce::aosoa<16>> blocks(records);
  coalesce::device_vector<R, coalesce::aos> aos(records);
  std::vector<R> got(n);
  for (std::size_t per_thread : {std::size_t{32}, std::size_t{0}}) {
    INFO("records of up to " << per_thread << " bytes per thread");
    auto const previous = coalesce::detail::set_per_thread_record_bytes(per_thread);
    coalesce::device_vector<R, coalesce::aos> from_soa(n), from_blocks(n);
    coalesce::device_vector<R, coalesce::soa> soa_from_aos(n);
    coalesce::device_vector<R, coalesce::aosoa<16>> blocks_from_aos(n);
    from_soa = soa;
    from_blocks = blocks;
    soa_from_aos = aos;
    blocks_from_aos = aos;
    from_soa.copy_to(got);
    CHECK(mismatches(got, records) == 0);
    from_blocks.copy_to(got);
    CHECK(mismatches(got, records) == 0);
    soa_from_aos.copy_to(got);
    CHECK(mismatches(got, records) == 0);
    blocks_from_aos.copy_to(got);
    CHECK(mismatches(got, records) == 0);
    coalesce::detail::set_per_thread_record_bytes(previous);
  }
}
}  // namespace

TEST_CASE("records of 8 to 64 bytes convert to and from aos, one per thread and through the tile, bit for bit") {
  for (std::size_t n : {1u, 2u, 255u, 1037u, 70001u}) {
    INFO("n = " << n);
    round_trips<r8>(n);
    round_trips<r12>(n);
    round_trips<r16>(n);
    round_trips<r24>(n);
    round_trips<r32>(n);
    round_trips<r48>(n);
    round_trips<r64>(n);
    round_trips<r60>(n);
    round_trips<tagged>(n);
  }
}

TEST_CASE("a conversion into a split layout's padded positions: both paths, padding written as zeros") {
  using split_pos = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
  for (std::size_t n : {1u, 3u, 4099u}) {
    INFO("n = " << n);
    std::vector<Particle> records(n);
    for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
    coalesce::device_vector<Particle, coalesce::soa> soa(records);
    for (std::size_t per_thread : {std::size_t{32}, std::size_t{0}}) {
      INFO("records of up to " << per_thread << " bytes per thread");
      auto const previous = coalesce::detail::set_per_thread_record_bytes(per_thread);
      coalesce::device_vector<Particle, split_pos> split(n);
      split = soa;
      std::vector<Particle> got(n);
      split.copy_to(got);
      CHECK(mismatches(got, records) == 0);
      // The packed blob's padding word: zero (a conversion copies every leaf, so it is padding).
      std::vector<std::uint32_t> blob(4 * n);
      coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, blob.data(),
                                   coalesce::detail::memory_kind::device, split.storage().column(0, 0).base,
                                   blob.size() * 4);
      std::size_t nonzero_padding = 0;
      for (std::size_t i = 0; i < n; ++i) nonzero_padding += blob[4 * i + 3] != 0;
      CHECK(nonzero_padding == 0);
      coalesce::detail::set_per_thread_record_bytes(previous);
    }
  }
}

namespace {
struct fat64 {  // 64 bytes, all 4-byte leaves: the tile from aos
  vec3 pos, vel, force;
  float mass, charge, radius;
  std::array<float, 4> scratch;
};
struct pair_record {  // two floats packed into an 8-byte slot by a split
  float a, b;
  float c;
  std::uint32_t d;
};
// The bytes of a split's packed blob, poisoned before the conversion so that zeros in its padding
// words are the conversion's.
template <class V> std::vector<std::uint32_t> packed_words(V const& v, std::size_t words) {
  std::vector<std::uint32_t> blob(words);
  coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, blob.data(), coalesce::detail::memory_kind::device,
                               v.storage().column(0, 0).base, words * 4);
  return blob;
}
template <class V> void poison_packed(V& v, std::size_t words) {
  std::vector<std::uint32_t> const junk(words, 0xdeadbeefu);
  coalesce::detail::copy_bytes(coalesce::detail::memory_kind::device, v.storage().column(0, 0).base,
                               coalesce::detail::memory_kind::host, junk.data(), words * 4);
}
// aos -> split (one pass through the tile, the packed slots stored whole) and back, bit for bit;
// `slot_words` words per packed slot, of which the first `used` hold members.
template <class R, class Split> void aos_into_split(std::size_t n, std::size_t slot_words, std::size_t used) {
  std::vector<R> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_record<R>(i);
  coalesce::device_vector<R, coalesce::aos> aos(records);
  coalesce::device_vector<R, Split> split(n);
  poison_packed(split, slot_words * n);
  split = aos;
  std::vector<R> got(n);
  split.copy_to(got);
  CHECK(mismatches(got, records) == 0);
  auto const blob = packed_words(split, slot_words * n);
  std::size_t nonzero_padding = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t w = used; w < slot_words; ++w) nonzero_padding += blob[slot_words * i + w] != 0;
  }
  CHECK(nonzero_padding == 0);
  coalesce::device_vector<R, coalesce::aos> back(n);
  back = split;
  back.copy_to(got);
  CHECK(mismatches(got, records) == 0);
}
}  // namespace

TEST_CASE("aos records into a split layout in one pass: members bit for bit, the packed slots' padding zeroed") {
  using split_fat = coalesce::split<coalesce::fields<&fat64::pos>, coalesce::aos, coalesce::soa>;
  using split_particle = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
  using split_pair = coalesce::split<coalesce::fields<&pair_record::a, &pair_record::b>, coalesce::aos, coalesce::soa>;
  for (std::size_t n : {1u, 3u, 511u, 513u, 70001u}) {
    INFO("n = " << n);
    aos_into_split<fat64, split_fat>(n, 4, 3);
    aos_into_split<Particle, split_particle>(n, 4, 3);
    aos_into_split<pair_record, split_pair>(n, 2, 2);
  }
}

TEST_CASE("copying some columns into 24-byte aos records keeps the others, on both paths") {
  std::size_t const n = 3001;
  std::vector<r24> old_records(n), new_records(n);
  for (std::size_t i = 0; i < n; ++i) {
    old_records[i] = make_record<r24>(i);
    new_records[i] = make_record<r24>(i + 7000);
  }
  coalesce::device_vector<r24, coalesce::soa> src(new_records);
  for (std::size_t per_thread : {std::size_t{32}, std::size_t{0}}) {
    INFO("records of up to " << per_thread << " bytes per thread");
    auto const previous = coalesce::detail::set_per_thread_record_bytes(per_thread);
    coalesce::device_vector<r24, coalesce::aos> dst(old_records);
    // Leaves a (float) and e (uint32): words 2 and 5 of the record; the double and b, c kept.
    std::vector<coalesce::detail::column_copy> some{{dst.storage().column(1, 0), src.storage().column(1, 0), 4},
                                                    {dst.storage().column(4, 0), src.storage().column(4, 0), 4}};
    coalesce::detail::copy_columns(coalesce::detail::memory_kind::device, some.data(), some.size(), n);
    std::vector<r24> got(n);
    dst.copy_to(got);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      r24 want = old_records[i];
      want.a = new_records[i].a;
      want.e = new_records[i].e;
      bad += !same_bytes(got[i], want);
    }
    CHECK(bad == 0);
    coalesce::detail::set_per_thread_record_bytes(previous);
  }
}
